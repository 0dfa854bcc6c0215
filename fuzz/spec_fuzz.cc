// libFuzzer target for everything in spec/ that reads untrusted text: the job
// spec parser, the expression evaluator and the contract-header extractor.
// Besides "never crash", it checks the spec's round-trip contract: a spec
// that parses re-parses from its normalized form to the same value, and the
// normalized form is a fixed point.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "spec/contract_header.h"
#include "spec/expr.h"
#include "spec/job_spec.h"

namespace {

void Check(bool ok, const char* what, const std::string& doc) {
  if (ok) return;
  std::fprintf(stderr, "round-trip broken: %s\n%s\n", what, doc.c_str());
  std::abort();
}

void RoundTrip(std::string_view text) {
  assay::Result<assay::JobSpec> spec = assay::ParseJobSpec(text);
  if (!spec.ok()) {
    Check(spec.status().error_class() == assay::ErrorClass::kRejected, "error class", "");
    return;
  }
  nlohmann::json norm = assay::ToJson(*spec);
  std::string dumped = norm.dump();
  assay::Result<assay::JobSpec> again = assay::ParseJobSpec(dumped);
  Check(again.ok(), again.ok() ? "" : again.status().ToString().c_str(), dumped);
  Check(*again == *spec, "re-parsed spec differs", dumped);
  Check(assay::ToJson(*again) == norm, "normalized form is not a fixed point", dumped);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);

  RoundTrip(text);

  static const std::map<std::string, int64_t> kVars = {
      {"n", 1024}, {"m", 7}, {"zero", 0}, {"big", INT64_MAX}, {"small", INT64_MIN}};
  (void)assay::EvalExpr(text, kVars);

  assay::Result<nlohmann::json> spec = assay::SpecFromSourceFile(text, "fuzz.cu");
  if (spec.ok()) RoundTrip(spec->dump());
  return 0;
}

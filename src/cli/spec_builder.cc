#include "cli/spec_builder.h"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "common/util.h"
#include "spec/contract_header.h"

namespace assay::cli {
namespace {

// Matches the server's default spec limit; the server re-checks.
constexpr size_t kMaxFileBytes = size_t{8} << 20;

}  // namespace

Result<nlohmann::json> BuildSpec(const SpecOptions& o) {
  nlohmann::json spec;
  if (!o.spec_file.empty()) {
    auto text = ReadFile(o.spec_file, kMaxFileBytes);
    if (!text.ok()) return text.status();
    try {
      spec = nlohmann::json::parse(*text);
    } catch (const nlohmann::json::parse_error& e) {
      return Status::Rejected(o.spec_file + ": malformed JSON at byte " + std::to_string(e.byte), "spec");
    }
    if (!spec.is_object()) return Status::Rejected(o.spec_file + ": a job spec is a JSON object", "spec");
    if (!o.file.empty() && !spec.contains("source")) {
      auto source = ReadFile(o.file, kMaxFileBytes);
      if (!source.ok()) return source.status();
      spec["source"] = {{"text", *source}, {"filename", std::filesystem::path(o.file).filename().string()}};
    }
  } else if (!o.file.empty()) {
    auto source = ReadFile(o.file, kMaxFileBytes);
    if (!source.ok()) return source.status();
    auto built = SpecFromSourceFile(*source, std::filesystem::path(o.file).filename().string());
    if (!built.ok()) return built.status();
    spec = std::move(*built);
  } else {
    return Status::Rejected("give a source FILE or --spec SPEC.json", "file");
  }

  if (o.compile_only) spec["kind"] = "compile";
  if (!o.kind.empty()) spec["kind"] = o.kind;
  if (!spec.contains("kind")) {
    return Status::Rejected("cannot tell what kind of job " + o.file +
                                " is: add an `assay:` contract header, define main(), or pass --kind, "
                                "--compile-only or --spec",
                            "kind");
  }
  if (!o.arch.empty()) spec["compile"]["arch"] = o.arch;
  if (!o.compiler.empty()) spec["compile"]["compiler"] = o.compiler;
  for (const auto& f : o.flags) spec["compile"]["flags"].push_back(f);
  if (!o.name.empty()) spec["name"] = o.name;
  if (o.timeout_s > 0) spec["timeout_s"] = o.timeout_s;
  if (!spec.contains("schema_version")) spec["schema_version"] = 1;
  return spec;
}

}  // namespace assay::cli

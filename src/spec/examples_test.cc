// Every example in docs/examples/ must be a valid spec, so the docs never rot.
#include <gtest/gtest.h>

#include <filesystem>

#include "common/util.h"
#include "spec/contract_header.h"
#include "spec/job_spec.h"

namespace assay {
namespace {
namespace fs = std::filesystem;

// Every spec the docs and examples/ show must parse and round-trip, so they never rot.
TEST(ExamplesTest, EveryExampleIsAValidSpec) {
  int json_files = 0, cu_files = 0;
  for (const char* root : {"docs/examples", "examples"}) {
    for (const auto& entry : fs::recursive_directory_iterator(fs::path(ASSAY_SOURCE_DIR) / root)) {
      fs::path p = entry.path();
      if (p.extension() != ".json" && p.extension() != ".cu") continue;
      Result<std::string> text = ReadFile(p);
      ASSERT_TRUE(text.ok()) << p;
      std::string doc;
      if (p.extension() == ".json") {
        doc = *text;
        ++json_files;
      } else {
        // A .cu that is neither a program nor carries a contract is for `assay compile`.
        auto header = ExtractContractHeader(*text);
        ASSERT_TRUE(header.ok()) << p << ": " << header.status().message();
        if (header->empty() && !HasMainFunction(*text)) continue;
        auto spec = SpecFromSourceFile(*text, p.filename().string());
        ASSERT_TRUE(spec.ok()) << p << ": " << spec.status().message();
        doc = spec->dump();
        ++cu_files;
      }
      Result<JobSpec> r = ParseJobSpec(doc);
      ASSERT_TRUE(r.ok()) << p << ": " << r.status().ToString();
      Result<JobSpec> again = ParseJobSpec(ToJson(*r).dump());
      ASSERT_TRUE(again.ok()) << p;
      EXPECT_TRUE(*again == *r) << p;
    }
  }
  EXPECT_GE(json_files, 4);
  EXPECT_GE(cu_files, 3);  // hello, device_query, vector_add
}

}  // namespace
}  // namespace assay

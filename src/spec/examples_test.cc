// Every example in docs/examples/ must be a valid spec, so the docs never rot.
#include <gtest/gtest.h>

#include <filesystem>

#include "common/util.h"
#include "spec/contract_header.h"
#include "spec/job_spec.h"

namespace assay {
namespace {
namespace fs = std::filesystem;

TEST(ExamplesTest, EveryExampleIsAValidSpec) {
  fs::path dir = fs::path(ASSAY_SOURCE_DIR) / "docs" / "examples";
  int json_files = 0, cu_files = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    fs::path p = entry.path();
    Result<std::string> text = ReadFile(p);
    ASSERT_TRUE(text.ok()) << p;
    std::string doc;
    if (p.extension() == ".json") {
      doc = *text;
      ++json_files;
    } else if (p.extension() == ".cu") {
      auto spec = SpecFromSourceFile(*text, p.filename().string());
      ASSERT_TRUE(spec.ok()) << p << ": " << spec.status().message();
      doc = spec->dump();
      ++cu_files;
    } else {
      continue;
    }
    Result<JobSpec> r = ParseJobSpec(doc);
    ASSERT_TRUE(r.ok()) << p << ": " << r.status().ToString();
    Result<JobSpec> again = ParseJobSpec(ToJson(*r).dump());
    ASSERT_TRUE(again.ok()) << p;
    EXPECT_TRUE(*again == *r) << p;
  }
  EXPECT_GE(json_files, 4);
  EXPECT_GE(cu_files, 1);
}

}  // namespace
}  // namespace assay

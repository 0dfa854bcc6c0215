#include "engine/job_plan.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <vector>

#include "common/util.h"
#include "engine/engine_test_util.h"
#include "engine/helper_kernels.h"
#include "engine/npy.h"
#include "compile/compiler.h"

namespace assay {
namespace {

KernelJobInput Input(nlohmann::json spec) {
  KernelJobInput in;
  in.job_id = "j_test";
  in.spec = std::move(spec);
  in.module_image = "image";
  in.reference_image = "image";
  return in;
}

TEST(JobPlanTest, ResolvesShapesLaunchAndMemory) {
  auto plan = PlanJob(Input(engine_test::AddSpec(1000)));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->tensors.size(), 3u);
  EXPECT_EQ(plan->tensors[0].shape, std::vector<int64_t>{1000});
  EXPECT_EQ(plan->tensors[2].bytes, 4000u);
  EXPECT_EQ(plan->launch.grid[0], 4);
  EXPECT_EQ(plan->launch.block[0], 256);
  EXPECT_TRUE(plan->reference_kernel);
  EXPECT_EQ(plan->candidate_bytes, 12000u);
  EXPECT_EQ(plan->device_bytes, 24000u);  // the reference's copies too
}

TEST(JobPlanTest, ValidatesUploadedInputsAgainstTheContract) {
  nlohmann::json spec = engine_test::AddSpec(4);
  std::string good = WriteNpy(DType::kF32, {4}, std::string(16, '\0'));
  std::string wrong_dtype = WriteNpy(DType::kF64, {4}, std::string(32, '\0'));
  spec["args"][0]["init"] = {{"kind", "blob"}, {"hash", Sha256Hex(good)}, {"format", "npy"}};
  spec["args"][1]["init"] = {{"kind", "blob"}, {"hash", Sha256Hex(wrong_dtype)}, {"format", "npy"}};
  KernelJobInput in = Input(spec);
  in.blobs[Sha256Hex(good)] = good;
  in.blobs[Sha256Hex(wrong_dtype)] = wrong_dtype;
  auto plan = PlanJob(in);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().error_class(), ErrorClass::kRejected);
  EXPECT_NE(plan.status().message().find("input 'y' has dtype f64"), std::string::npos) << plan.status().message();
  in.blobs.erase(Sha256Hex(wrong_dtype));
  auto missing = PlanJob(in);
  EXPECT_NE(missing.status().message().find("was not provided"), std::string::npos);
}

TEST(JobPlanTest, RawBlobsMustMatchTheSize) {
  std::vector<int64_t> shape = {2, 3};
  std::map<std::string, std::string> blobs = {{"h", std::string(23, '\0')}};
  BlobRef ref{"h", "raw", ""};
  auto bad = LoadBlobTensor(ref, blobs, "w", "input", DType::kF32, shape);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("needs 24"), std::string::npos);
  blobs["h"] = std::string(24, '\0');
  EXPECT_TRUE(LoadBlobTensor(ref, blobs, "w", "input", DType::kF32, shape).ok());
}

TEST(JobPlanTest, RejectsNonKernelKinds) {
  nlohmann::json spec = engine_test::AddSpec(16);
  spec["launch"]["block"] = {2048};
  auto plan = PlanJob(Input(spec));
  EXPECT_EQ(plan.status().error_class(), ErrorClass::kRejected);
}

// examples/spmv: its spec plans with CSR arrays in the formats make_csr.py writes,
// and its kernel compiles (the GPU run is examples/spmv/run.sh).
TEST(ExampleSpmvTest, SpecPlansWithCsrArraysAndTheKernelCompiles) {
  const std::filesystem::path dir = std::filesystem::path(ASSAY_SOURCE_DIR) / "examples/spmv";
  auto text = ReadFile(dir / "spmv_job.json");
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  nlohmann::json spec = nlohmann::json::parse(*text);
  // A 4 x 4 matrix with 6 nonzeros: rows 0..3 hold 2, 1, 2, 1.
  const std::vector<int32_t> row_ptr = {0, 2, 3, 5, 6}, col_idx = {0, 3, 1, 0, 2, 3};
  const std::vector<float> values = {1, 2, 3, 4, 5, 6}, x = {1, 1, 1, 1}, y = {3, 3, 9, 6};
  auto npy = [](DType t, const auto& v) {
    return WriteNpy(t, {static_cast<int64_t>(v.size())},
                    std::string_view(reinterpret_cast<const char*>(v.data()), v.size() * 4));
  };
  const std::map<std::string, std::string> files = {
      {"row_ptr", npy(DType::kI32, row_ptr)}, {"col_idx", npy(DType::kI32, col_idx)},
      {"values", npy(DType::kF32, values)}, {"x", npy(DType::kF32, x)}};
  KernelJobInput in = Input(spec);
  for (auto& a : in.spec["args"]) {
    const std::string name = a["name"];
    if (name == "rows") a["value"] = 4;
    if (name == "nnz") a["value"] = 6;
    if (files.count(name)) {
      a["init"]["hash"] = Sha256Hex(files.at(name));
      in.blobs[Sha256Hex(files.at(name))] = files.at(name);
    }
  }
  const std::string expected = npy(DType::kF32, y);
  in.spec["reference"]["expected"]["y"]["blob"] = Sha256Hex(expected);
  in.blobs[Sha256Hex(expected)] = expected;
  auto plan = PlanJob(in);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->spec.kind, JobKind::kCubin);
  ASSERT_EQ(plan->tensors.size(), 5u);
  EXPECT_EQ(plan->tensors[0].shape, std::vector<int64_t>{5});  // rows + 1
  EXPECT_TRUE(plan->reference_expected);
  EXPECT_EQ(plan->launch.grid[0], 1);  // ceil_div(4, 8)
  EXPECT_EQ(plan->launch.block[0], 256);
  // A row_ptr of the wrong length is refused before the GPU is touched.
  in.spec["args"][0]["value"] = 5;
  EXPECT_EQ(PlanJob(in).status().error_class(), ErrorClass::kRejected);

  auto tmp = TempDir::Create("assay_example_spmv");
  ASSERT_TRUE(tmp.ok());
  CompilerOptions o;
  o.cache_dir = tmp->path();
  Compiler c(o);
  if (c.ToolkitVersion().empty()) GTEST_SKIP() << "no CUDA toolkit";
  auto source = ReadFile(dir / "spmv.cu");
  ASSERT_TRUE(source.ok());
  CompileRequest req;
  req.source = *source;
  req.arch = "sm_90";
  CompileOutput out = c.Compile(req);
  ASSERT_TRUE(out.status.ok()) << out.status.ToString() << "\n" << out.log;
  EXPECT_TRUE(out.kernels.count("spmv_csr"));
}

// The helper kernels compile with the real NVRTC for Hopper (no GPU needed).
TEST(HelperKernelsTest, SourceCompilesWithNvrtc) {
  auto dir = TempDir::Create("assay_engine_nvrtc");
  ASSERT_TRUE(dir.ok());
  CompilerOptions o;
  o.cache_dir = dir->path();
  Compiler c(o);
  CompileRequest req;
  req.source = std::string(HelperKernelSource());
  req.arch = "sm_90";
  CompileOutput out = c.Compile(req);
  if (c.ToolkitVersion().empty()) GTEST_SKIP() << "no CUDA toolkit";
  ASSERT_TRUE(out.status.ok()) << out.status.ToString() << "\n" << out.log;
  for (const char* k : {"assay_generate", "assay_poison", "assay_checksum", "assay_compare"})
    EXPECT_TRUE(out.kernels.count(k)) << k;
}

}  // namespace
}  // namespace assay

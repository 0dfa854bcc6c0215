#include "spec/capabilities.h"

#include <gtest/gtest.h>

#include "spec/spec_test_util.h"

namespace assay {
namespace {
using nlohmann::json;

JobSpec Parse(const json& doc) {
  Result<JobSpec> r = ParseJobSpec(doc.dump());
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : JobSpec{};
}

Capabilities GpuServer() {
  Capabilities c;
  c.supported = {JobKind::kCompile, JobKind::kCuda, JobKind::kCubin, JobKind::kCudaProgram};
  c.has_gpu = true;
  c.gpu_names = {"NVIDIA H100 80GB HBM3"};
  return c;
}

TEST(CapabilitiesTest, SupportedKindOnAGpuServer) {
  EXPECT_TRUE(CheckSupported(Parse(testing::VectorAddSpec()), GpuServer()).ok());
}

TEST(CapabilitiesTest, UnsupportedKind) {
  json doc = {{"kind", "triton"}, {"source", {{"text", "def launch(): pass"}}}};
  Status s = CheckSupported(Parse(doc), GpuServer());
  EXPECT_EQ(s.error_class(), ErrorClass::kRejected);
  EXPECT_EQ(s.message(), "kind 'triton' is not supported yet by this server");
  EXPECT_EQ(s.field(), "kind");
}

TEST(CapabilitiesTest, UnsupportedReferenceKind) {
  json doc = testing::VectorAddSpec();
  doc["reference"] = {{"kind", "torch"}, {"source", {{"text", "class Model: pass"}}}};
  Status s = CheckSupported(Parse(doc), GpuServer());
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.field(), "reference.kind");
}

TEST(CapabilitiesTest, GpuKindWithoutGpu) {
  Capabilities c = GpuServer();
  c.has_gpu = false;
  c.gpu_names.clear();
  Status s = CheckSupported(Parse(testing::VectorAddSpec()), c);
  EXPECT_EQ(s.message(), "this server has no GPU; kind 'cuda' needs one");
  EXPECT_EQ(s.field(), "kind");
  // compile and cuda_program need no GPU.
  json compile = {{"kind", "compile"}, {"source", {{"text", "__global__ void k() {}"}}}};
  EXPECT_TRUE(CheckSupported(Parse(compile), c).ok());
  json program = {{"kind", "cuda_program"}, {"source", {{"text", "int main() {}"}}}};
  EXPECT_TRUE(CheckSupported(Parse(program), c).ok());
}

TEST(CapabilitiesTest, KindsNeedingAGpu) {
  EXPECT_FALSE(KindNeedsGpu(JobKind::kCompile));
  EXPECT_FALSE(KindNeedsGpu(JobKind::kCudaProgram));
  for (JobKind k : {JobKind::kCuda, JobKind::kCubin, JobKind::kPtx, JobKind::kFatbin,
                    JobKind::kTriton, JobKind::kTorch, JobKind::kTorchCuda, JobKind::kKernelbench})
    EXPECT_TRUE(KindNeedsGpu(k)) << JobKindName(k);
}

TEST(CapabilitiesTest, GpuTypeMatchesCaseInsensitiveSubstring) {
  json doc = testing::VectorAddSpec();
  doc["gpu"] = {{"type", "h100"}};
  EXPECT_TRUE(CheckSupported(Parse(doc), GpuServer()).ok());
  doc["gpu"] = {{"type", "A100"}};
  Status s = CheckSupported(Parse(doc), GpuServer());
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.field(), "gpu.type");
  EXPECT_NE(s.message().find("NVIDIA H100 80GB HBM3"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace assay

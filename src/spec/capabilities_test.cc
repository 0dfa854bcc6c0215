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
  json doc = {{"kind", "ptx"}, {"source", {{"text", ".version 8.0"}}}, {"entry", "k"},
              {"launch", {{"grid", {1}}, {"block", {1}}}}};
  Status s = CheckSupported(Parse(doc), GpuServer());
  EXPECT_EQ(s.error_class(), ErrorClass::kRejected);
  EXPECT_EQ(s.message(), "kind 'ptx' is not supported yet by this server");
  EXPECT_EQ(s.field(), "kind");
}

TEST(CapabilitiesTest, PythonKindWithoutAWorkerThatHasItSaysWhy) {
  json doc = {{"kind", "triton"}, {"source", {{"text", "def launch(): pass"}}}};
  Capabilities c = GpuServer();
  c.python_note = "triton does not import in /usr/bin/python3";
  Status s = CheckSupported(Parse(doc), c);
  EXPECT_EQ(s.error_class(), ErrorClass::kRejected);
  EXPECT_EQ(s.message(), "kind 'triton' needs a worker with Python and Triton; none here has it "
                         "(triton does not import in /usr/bin/python3)");
  EXPECT_EQ(s.field(), "kind");
  doc = {{"kind", "torch"}, {"source", {{"text", "class Model: pass"}}}};
  EXPECT_NE(CheckSupported(Parse(doc), c).message().find("PyTorch"), std::string::npos);
  c.supported.insert(JobKind::kTorch);
  EXPECT_TRUE(CheckSupported(Parse(doc), c).ok());
}

TEST(CapabilitiesTest, PythonKindsOnTheCpuNeedNoGpu) {
  json doc = {{"kind", "torch"}, {"source", {{"text", "class Model: pass"}}}};
  Capabilities c;
  c.supported = {JobKind::kTorch};
  EXPECT_EQ(CheckSupported(Parse(doc), c).message(), "this server has no GPU; kind 'torch' needs one");
  c.cpu_kinds = {JobKind::kTorch};
  EXPECT_TRUE(CheckSupported(Parse(doc), c).ok());
}

TEST(CapabilitiesTest, ReferenceFromTheOtherEngineIsRejected) {
  Capabilities c = GpuServer();
  c.supported.insert({JobKind::kTorch, JobKind::kTorchCuda});
  // A cuda kernel cannot be checked against a torch module...
  json doc = testing::VectorAddSpec();
  doc["reference"] = {{"kind", "torch"}, {"source", {{"text", "class Model: pass"}}}};
  Status s = CheckSupported(Parse(doc), c);
  EXPECT_EQ(s.error_class(), ErrorClass::kRejected);
  EXPECT_EQ(s.field(), "reference.kind");
  // ...nor a torch module against a cuda kernel.
  json py = {{"kind", "torch_cuda"}, {"source", {{"text", "class Model: pass"}}}, {"reference", testing::VectorAddSpec()["reference"]}};
  s = CheckSupported(Parse(py), c);
  EXPECT_EQ(s.error_class(), ErrorClass::kRejected);
  EXPECT_EQ(s.field(), "reference.kind");
  EXPECT_NE(s.message().find("do not share buffers"), std::string::npos) << s.message();
  // A Python reference for a Python candidate is fine.
  py["reference"] = {{"kind", "torch"}, {"source", {{"text", "class Model: pass"}}}};
  EXPECT_TRUE(CheckSupported(Parse(py), c).ok());
}

TEST(CapabilitiesTest, KindFamilies) {
  for (JobKind k : {JobKind::kTorch, JobKind::kTorchCuda, JobKind::kTriton, JobKind::kKernelbench}) {
    EXPECT_TRUE(IsPythonKind(k));
    EXPECT_FALSE(IsModuleKind(k));
  }
  for (JobKind k : {JobKind::kCuda, JobKind::kCubin, JobKind::kPtx, JobKind::kFatbin}) {
    EXPECT_TRUE(IsModuleKind(k));
    EXPECT_FALSE(IsPythonKind(k));
  }
  EXPECT_FALSE(IsPythonKind(JobKind::kCudaProgram));
  EXPECT_FALSE(IsModuleKind(JobKind::kCompile));
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

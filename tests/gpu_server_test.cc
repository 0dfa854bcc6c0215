// End-to-end on a GPU: a real `assay serve` with one worker per GPU runs kernel
// jobs and cuda_program jobs; after every kind of failure the next job still
// runs. Label gpu: skips without a GPU, fails when ASSAY_EXPECT_GPU=1.
#include <signal.h>

#include <cstdlib>
#include <fstream>

#include <gtest/gtest.h>

#include "common/util.h"
#include "gpu/devices.h"
#include "tests/server_fixture.h"

namespace assay::testing {
namespace {

using nlohmann::json;

const char* kAdd = R"(extern "C" __global__ void add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
})";
const char* kRef = R"(extern "C" __global__ void ref(const float* a, const float* b, float* c, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) c[i] = a[i] + b[i];
})";

// A vector-add-shaped job whose candidate source is `candidate`.
json KernelJob(const std::string& candidate, double timeout_s = 60, int n = 1 << 20) {
  return {{"schema_version", 1},
          {"kind", "cuda"},
          {"timeout_s", timeout_s},
          {"source", {{"text", candidate}}},
          {"entry", "add"},
          {"args",
           {{{"name", "a"}, {"role", "in"}, {"dtype", "f32"}, {"shape", {"n"}}},
            {{"name", "b"}, {"role", "in"}, {"dtype", "f32"}, {"shape", {"n"}}},
            {{"name", "c"}, {"role", "out"}, {"dtype", "f32"}, {"shape", {"n"}}},
            {{"name", "n"}, {"role", "scalar"}, {"dtype", "i32"}, {"value", n}}}},
          {"launch", {{"grid", {"ceil_div(n, 256)"}}, {"block", {256}}}},
          {"reference",
           {{"kind", "cuda"}, {"source", {{"text", kRef}}}, {"entry", "ref"},
            {"launch", {{"grid", {264}}, {"block", {256}}}}}},
          {"timing", {{"time_budget_ms", 500}}},
          {"outputs", {"c"}}};
}

class GpuServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    GpuInventory inv = ListGpus();
    if (inv.gpus.empty()) {
      const char* expect = std::getenv("ASSAY_EXPECT_GPU");
      if (expect && std::string(expect) == "1") FAIL() << "ASSAY_EXPECT_GPU=1 but no GPU: " << inv.status.ToString();
      GTEST_SKIP() << "no GPU: " << inv.status.message();
    }
    ::signal(SIGPIPE, SIG_IGN);
    auto d = TempDir::Create("assay-gpu-it-");
    ASSERT_TRUE(d.ok());
    dir_ = std::make_unique<TempDir>(std::move(d).value());
    server_ = std::make_unique<ServerProcess>(dir_->path() / "data", std::vector<std::string>{"--no-auth"});
    ASSERT_TRUE(server_->Start());
  }
  void TearDown() override {
    if (HasFailure() && dir_) {
      std::ifstream log(dir_->path() / "data/server.log");
      std::string text((std::istreambuf_iterator<char>(log)), {});
      std::cerr << "---- server log (tail) ----\n" << (text.size() > 6000 ? text.substr(text.size() - 6000) : text);
    }
    server_.reset();
  }
  json Run(const json& spec, double wait_s = 120) {
    auto id = server_->Submit(spec);
    EXPECT_FALSE(id.empty()) << spec.dump();
    return server_->WaitJob(id, wait_s);
  }
  std::unique_ptr<TempDir> dir_;
  std::unique_ptr<ServerProcess> server_;
};

TEST_F(GpuServerTest, CorrectKernelIsCheckedTimedAndReturnsOutputs) {
  json job = Run(KernelJob(kAdd));
  ASSERT_EQ(job["state"], "done") << job.dump(2).substr(0, 4000);
  const json& r = job["result"];
  EXPECT_GT(r["timing"]["median_ms"].get<double>(), 0) << r["timing"].dump();
  EXPECT_TRUE(r.contains("correctness")) << r.dump().substr(0, 2000);
  EXPECT_TRUE(r.contains("telemetry"));
  EXPECT_FALSE(r["gpu"]["name"].get<std::string>().empty());
  ASSERT_TRUE(r["outputs"].contains("c")) << r.dump().substr(0, 2000);
  auto blob = server_->Get("/v1/blobs/" + r["outputs"]["c"]["blob"].get<std::string>());
  ASSERT_EQ(blob.status, 200);
  EXPECT_EQ(blob.body.substr(0, 6), "\x93NUMPY");
  std::cout << "vector add (2^20 f32) median " << r["timing"]["median_ms"] << " ms on "
            << r["gpu"]["name"] << "\n";
}

TEST_F(GpuServerTest, IllegalAddressIsRuntimeErrorAndNextJobRuns) {
  json bad = KernelJob(R"(extern "C" __global__ void add(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i + (1 << 28)] = a[i] + b[i];
  })");
  json job = Run(bad);
  EXPECT_EQ(job["state"], "failed") << job.dump(2).substr(0, 3000);
  EXPECT_EQ(job["error"]["class"], "runtime_error");
  EXPECT_NE(job["error"]["message"].get<std::string>().find("CUDA_ERROR_ILLEGAL_ADDRESS"), std::string::npos)
      << job["error"].dump();
  EXPECT_EQ(Run(KernelJob(kAdd))["state"], "done");
}

TEST_F(GpuServerTest, TrapIsRuntimeErrorAndNextJobRuns) {
  json job = Run(KernelJob(R"(extern "C" __global__ void add(const float* a, const float* b, float* c, int n) {
    __trap();
  })"));
  EXPECT_EQ(job["state"], "failed") << job.dump(2).substr(0, 3000);
  EXPECT_EQ(job["error"]["class"], "runtime_error");
  EXPECT_EQ(Run(KernelJob(kAdd))["state"], "done");
}

TEST_F(GpuServerTest, InfiniteLoopTimesOutAndNextJobRuns) {
  json job = Run(KernelJob(R"(extern "C" __global__ void add(const float* a, const float* b, float* c, int n) {
    for (;;) __nanosleep(1000);
  })", 5));
  EXPECT_EQ(job["state"], "timed_out") << job.dump(2).substr(0, 3000);
  EXPECT_EQ(job["error"]["class"], "timeout");
  EXPECT_EQ(Run(KernelJob(kAdd))["state"], "done");
}

TEST_F(GpuServerTest, WrongKernelsAreWrongResult) {
  // Never writes its output.
  json a = Run(KernelJob(R"(extern "C" __global__ void add(const float* a, const float* b, float* c, int n) {})"));
  EXPECT_EQ(a["state"], "failed");
  EXPECT_EQ(a["error"]["class"], "wrong_result") << a["error"].dump();
  // Off by one at a size that is not a multiple of the block: skips the tail.
  json b = Run(KernelJob(R"(extern "C" __global__ void add(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < (n / 256) * 256) c[i] = a[i] + b[i];
  })", 60, 1000));
  EXPECT_EQ(b["error"]["class"], "wrong_result") << b["error"].dump();
  // Writes its input.
  json c = Run(KernelJob(R"(extern "C" __global__ void add(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { c[i] = a[i] + b[i]; ((float*)a)[i] = 0; }
  })"));
  EXPECT_EQ(c["error"]["class"], "wrong_result") << c["error"].dump();
}

TEST_F(GpuServerTest, CubinCompiledElsewhereRuns) {
  json compile = {{"schema_version", 1}, {"kind", "compile"}, {"source", {{"text", kAdd}}}};
  json c = Run(compile);
  ASSERT_EQ(c["state"], "done");
  std::string hash = c["result"]["compile"]["cubin_blob"];
  json spec = KernelJob(kAdd);
  spec["kind"] = "cubin";
  spec["source"] = {{"blob", hash}};
  json job = Run(spec);
  EXPECT_EQ(job["state"], "done") << job.dump(2).substr(0, 3000);
}

TEST_F(GpuServerTest, ProgramKernelsAreTimedByCupti) {
  auto src = ReadFile(std::filesystem::path(ASSAY_SOURCE_DIR) / "examples/device_query/device_query.cu");
  if (!src.ok()) src = ReadFile("examples/device_query/device_query.cu");
  ASSERT_TRUE(src.ok());
  json spec = {{"schema_version", 1}, {"kind", "cuda_program"}, {"source", {{"text", *src}}}};
  json job = Run(spec);
  ASSERT_EQ(job["state"], "done") << job.dump(2).substr(0, 3000);
  const json& p = job["result"]["program"];
  EXPECT_NE(p["stdout"].get<std::string>().find("fill check"), std::string::npos);
  ASSERT_TRUE(p.contains("kernel_totals")) << p.dump().substr(0, 2000);
  EXPECT_GT(p["gpu_time_ms"].get<double>(), 0);
  EXPECT_NE(p["kernel_totals"].dump().find("fill"), std::string::npos) << p["kernel_totals"].dump();
}

}  // namespace
}  // namespace assay::testing

// The Python kinds on a GPU (docs/python-kinds.md): a real `assay serve
// --python PY` (PY = $ASSAY_TEST_PYTHON, else python3 from PATH) with the real
// harness and the CUPTI injection library. Label gpu_python: skips without a
// GPU (or without torch), fails when ASSAY_EXPECT_GPU=1.
//
//   - a torch_cuda candidate built with load_inline: prepared on the compile
//     pool, correct, and timed by both clocks (CUDA events and CUPTI);
//   - a candidate that hides its work on a side stream: the clocks disagree,
//     and the reported time is CUPTI's;
//   - a Triton vector add.
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

std::string TestPython() {
  const char* p = std::getenv("ASSAY_TEST_PYTHON");
  return p && *p ? p : "python3";
}

bool ExpectGpu() {
  const char* e = std::getenv("ASSAY_EXPECT_GPU");
  return e && std::string(e) == "1";
}

const char* kTorchAdd = R"(import torch
class Model(torch.nn.Module):
    def forward(self, x, y, n):
        return x + y
)";

const char* kLoadInlineAdd = R"(import torch
from torch.utils.cpp_extension import load_inline

cuda_src = r'''
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
__global__ void assay_test_add_kernel(const float* x, const float* y, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = x[i] + y[i];
}
torch::Tensor add(torch::Tensor x, torch::Tensor y) {
  auto out = torch::empty_like(x);
  int n = x.numel();
  assay_test_add_kernel<<<(n + 255) / 256, 256, 0, at::cuda::getCurrentCUDAStream()>>>(
      x.data_ptr<float>(), y.data_ptr<float>(), out.data_ptr<float>(), n);
  return out;
}
'''
cpp_src = "torch::Tensor add(torch::Tensor x, torch::Tensor y);"
ext = load_inline(name="assay_test_add", cpp_sources=cpp_src, cuda_sources=cuda_src, functions=["add"],
                  extra_cuda_cflags=["-O2"], extra_include_paths=[], verbose=False)

class Model(torch.nn.Module):
    def forward(self, x, y, n):
        return ext.add(x, y)
)";

// The result is right, but the work runs on a side stream that the harness's
// events (recorded on the current stream) never wait for.
const char* kSideStream = R"(import torch
class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.side = torch.cuda.Stream()
        self.a = torch.randn(2048, 2048, device="cuda")
    def forward(self, x, y, n):
        main = torch.cuda.current_stream()
        self.side.wait_stream(main)
        with torch.cuda.stream(self.side):
            for _ in range(4):
                self.a = torch.tanh(self.a @ self.a * 1e-3)
            out = x + y
        out.record_stream(main)
        return out
)";

const char* kTritonAdd = R"(import triton
import triton.language as tl

@triton.jit
def assay_triton_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)

def launch(x, y, out, n):
    assay_triton_add[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
)";

json AddArgs(int n) {
  return {{{"name", "x"}, {"role", "in"}, {"dtype", "f32"}, {"shape", {"n"}}},
          {{"name", "y"}, {"role", "in"}, {"dtype", "f32"}, {"shape", {"n"}}},
          {{"name", "out"}, {"role", "out"}, {"dtype", "f32"}, {"shape", {"n"}}},
          {{"name", "n"}, {"role", "scalar"}, {"dtype", "i32"}, {"value", n}}};
}

json PythonJob(const std::string& kind, const std::string& source, int n = 1 << 20) {
  return {{"kind", kind},
          {"timeout_s", 300},
          {"source", {{"text", source}}},
          {"reference", {{"kind", "torch"}, {"source", {{"text", kTorchAdd}}}}},
          {"args", AddArgs(n)},
          {"timing", {{"time_budget_ms", 500}}}};
}

class PythonGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    GpuInventory inv = ListGpus();
    if (inv.gpus.empty()) {
      if (ExpectGpu()) FAIL() << "ASSAY_EXPECT_GPU=1 but no GPU: " << inv.status.ToString();
      GTEST_SKIP() << "no GPU: " << inv.status.message();
    }
    std::string check = "'" + TestPython() + "' -c 'import torch; assert torch.cuda.is_available()' >/dev/null 2>&1";
    if (std::system(check.c_str()) != 0) {
      if (ExpectGpu()) FAIL() << TestPython() << " cannot import torch with CUDA (set ASSAY_TEST_PYTHON)";
      GTEST_SKIP() << TestPython() << " has no torch with CUDA";
    }
    ::signal(SIGPIPE, SIG_IGN);
    auto d = TempDir::Create("assay-pygpu-it-");
    ASSERT_TRUE(d.ok());
    dir_ = std::make_unique<TempDir>(std::move(d).value());
    server_ = std::make_unique<ServerProcess>(dir_->path() / "data",
                                              std::vector<std::string>{"--no-auth", "--python", TestPython()});
    ASSERT_TRUE(server_->Start()) << "server did not start; log in " << (dir_->path() / "data/server.log");
  }
  void TearDown() override {
    if (HasFailure() && dir_) {
      std::ifstream log(dir_->path() / "data/server.log");
      std::string text((std::istreambuf_iterator<char>(log)), {});
      std::cerr << "---- server log (last 6000 bytes) ----\n"
                << (text.size() > 6000 ? text.substr(text.size() - 6000) : text) << "\n";
    }
    server_.reset();
  }
  json Run(const json& spec) {
    std::string id = server_->Submit(spec);
    EXPECT_FALSE(id.empty()) << server_->Post("/v1/jobs", spec.dump()).body;
    return id.empty() ? json::object() : server_->WaitJob(id, 600);
  }

  std::unique_ptr<TempDir> dir_;
  std::unique_ptr<ServerProcess> server_;
};

TEST_F(PythonGpuTest, LoadInlineCandidatePassesWithBothClocks) {
  json job = Run(PythonJob("torch_cuda", kLoadInlineAdd));
  ASSERT_EQ(job["state"], "done") << job.dump(2).substr(0, 8000);
  const json& r = job["result"];
  // Built on the compile pool, before the GPU run.
  ASSERT_TRUE(r["compile"].is_object()) << r.dump(2);
  EXPECT_FALSE(r["compile"]["cache_hit"].get<bool>());
  EXPECT_GT(r["compile"]["duration_ms"].get<double>(), 0);
  EXPECT_NE(r["compile"]["extensions"].dump().find("assay_test_add"), std::string::npos) << r["compile"].dump(2);
  EXPECT_TRUE(r["correctness"]["passed"].get<bool>());
  const json& t = r["timing"];
  EXPECT_EQ(t["clock"], "cuda_event") << t.dump(2);
  EXPECT_EQ(t["source"], "cuda_event") << t.dump(2);
  EXPECT_GT(t["median_ms"].get<double>(), 0);
  ASSERT_TRUE(t["cupti"].is_object()) << t.dump(2);
  EXPECT_GT(t["cupti"]["kernel_busy_ms"].get<double>(), 0);
  EXPECT_GE(t["cupti"]["kernels_per_call"].get<double>(), 1.0);
  EXPECT_NE(t["cupti"]["names"].dump().find("assay_test_add_kernel"), std::string::npos) << t["cupti"].dump(2);
  EXPECT_FALSE(t.contains("disagreement")) << t.dump(2);
  // The two clocks agree on a plain kernel (within the rule).
  EXPECT_LE(t["cupti"]["kernel_busy_ms"].get<double>(), t["median_ms"].get<double>() * 1.10 + 0.005);
  EXPECT_TRUE(t["reference"]["cupti"].is_object()) << t["reference"].dump(2);
  EXPECT_EQ(r["gpu"]["name"], ListGpus().gpus[0].name);
  std::cout << "load_inline add: events " << t["median_ms"] << " ms, CUPTI busy " << t["cupti"]["kernel_busy_ms"]
            << " ms, prepare " << r["compile"]["duration_ms"] << " ms\n";

  // The same source again: the prepare is a cache hit and the run finds the build.
  json again = Run(PythonJob("torch_cuda", kLoadInlineAdd));
  ASSERT_EQ(again["state"], "done") << again.dump(2).substr(0, 4000);
  EXPECT_TRUE(again["result"]["compile"]["cache_hit"].get<bool>());
}

TEST_F(PythonGpuTest, SideStreamWorkIsCaughtByTheSecondClock) {
  json job = Run(PythonJob("torch_cuda", kSideStream, 1 << 16));
  ASSERT_EQ(job["state"], "done") << job.dump(2).substr(0, 8000);
  const json& t = job["result"]["timing"];
  ASSERT_TRUE(t.contains("disagreement")) << t.dump(2);
  EXPECT_EQ(t["source"], "cupti");
  EXPECT_GT(t["median_ms"].get<double>(), t["event_median_ms"].get<double>() * 1.10);
  EXPECT_DOUBLE_EQ(t["median_ms"].get<double>(), t["cupti"]["kernel_busy_ms"].get<double>());
  bool warned = false;
  for (const auto& w : job["result"]["warnings"]) warned |= w.get<std::string>().find("CUPTI") != std::string::npos;
  EXPECT_TRUE(warned) << job["result"]["warnings"].dump(2);
  std::cout << "side stream: events " << t["event_median_ms"] << " ms, CUPTI busy " << t["median_ms"] << " ms\n";
}

TEST_F(PythonGpuTest, TritonAddPasses) {
  std::string check = "'" + TestPython() + "' -c 'import triton' >/dev/null 2>&1";
  if (std::system(check.c_str()) != 0) {
    if (ExpectGpu()) FAIL() << TestPython() << " cannot import triton";
    GTEST_SKIP() << "no triton";
  }
  json job = Run(PythonJob("triton", kTritonAdd));
  ASSERT_EQ(job["state"], "done") << job.dump(2).substr(0, 8000);
  const json& t = job["result"]["timing"];
  EXPECT_TRUE(job["result"]["correctness"]["passed"].get<bool>());
  EXPECT_GT(t["median_ms"].get<double>(), 0);
  ASSERT_TRUE(t["cupti"].is_object()) << t.dump(2);
  EXPECT_NE(t["cupti"]["names"].dump().find("assay_triton_add"), std::string::npos) << t["cupti"].dump(2);
  EXPECT_FALSE(t.contains("disagreement")) << t.dump(2);
  EXPECT_TRUE(job["result"]["python"]["versions"].contains("triton")) << job["result"]["python"].dump(2);
}

}  // namespace
}  // namespace assay::testing

// GPU tests of the kernel engine (label gpu). Without a GPU they skip, unless
// ASSAY_EXPECT_GPU=1, which turns the skip into a failure.
//
// Kernels that break the CUDA context (illegal address, __trap) run as gtest
// death tests in the "threadsafe" style: the test binary re-executes itself
// for that one test, so the broken context lives and dies in a child process
// and the parent's engine stays usable.
#include "engine/kernel_engine.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "common/util.h"
#include "compile/compiler.h"
#include "engine/engine_test_util.h"
#include "engine/npy.h"
#include "engine/host_values.h"

namespace assay {
namespace {

using nlohmann::json;

bool ExpectGpu() {
  const char* e = std::getenv("ASSAY_EXPECT_GPU");
  return e && std::string(e) == "1";
}

const std::filesystem::path kWorkDir = "/tmp/assay_engine_test";

std::string Cubin(const std::string& source, const std::string& arch) {
  CompilerOptions o;
  o.cache_dir = kWorkDir / "kernels";
  Compiler c(o);
  CompileRequest req;
  req.source = source;
  req.arch = arch;
  CompileOutput out = c.Compile(req);
  EXPECT_TRUE(out.status.ok()) << out.status.ToString() << "\n" << out.log;
  if (!out.status.ok()) return "";
  auto bytes = ReadFile(out.artifact);
  return bytes.ok() ? *bytes : "";
}

class EngineTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    GpuInventory inv = ListGpus();
    if (inv.gpus.empty()) {
      skip_reason_ = inv.status.message();
      return;
    }
    gpu_ = inv.gpus[0];
    auto e = KernelEngine::Create(gpu_, kWorkDir);
    if (!e.ok()) {
      create_error_ = e.status().ToString();
      return;
    }
    engine_ = std::move(*e);
  }
  static void TearDownTestSuite() { engine_.reset(); }
  void SetUp() override {
    if (!skip_reason_.empty()) {
      if (ExpectGpu()) FAIL() << "ASSAY_EXPECT_GPU=1 but no GPU: " << skip_reason_;
      GTEST_SKIP() << "no GPU: " << skip_reason_;
    }
    ASSERT_TRUE(engine_) << create_error_;
  }

  // Compiles the candidate (and the reference kernel, when the spec has one) and runs.
  static KernelJobOutput Run(const json& spec, std::map<std::string, std::string> blobs = {}) {
    KernelJobInput in;
    in.job_id = "j_engine_test";
    in.spec = spec;
    in.module_image = Cubin(spec["source"]["text"], gpu_.arch());
    if (spec.contains("reference") && spec["reference"].contains("source"))
      in.reference_image = Cubin(spec["reference"]["source"]["text"], gpu_.arch());
    in.blobs = std::move(blobs);
    return engine_->Run(in);
  }

  static inline GpuInfo gpu_;
  static inline std::unique_ptr<KernelEngine> engine_;
  static inline std::string skip_reason_, create_error_;
};

std::string Msg(const KernelJobOutput& o) { return o.status.ToString() + "\n" + o.result.dump(1).substr(0, 4000); }

TEST_F(EngineTest, CorrectVectorAddPassesAgainstReferenceKernel) {
  KernelJobOutput o = Run(engine_test::AddSpec(1000));
  ASSERT_TRUE(o.status.ok()) << Msg(o);
  EXPECT_FALSE(o.context_lost);
  const json& c = o.result["correctness"];
  EXPECT_TRUE(c["passed"].get<bool>());
  ASSERT_EQ(c["checks"].size(), 4u);  // 3 trials + the re-check after timing
  EXPECT_EQ(c["checks"][0]["seed"], 42);
  EXPECT_EQ(c["checks"][3]["label"], "after timing");
  EXPECT_EQ(c["checks"][0]["outputs"]["out"]["mismatches"], 0);
  EXPECT_GT(o.result["timing"]["median_ms"].get<double>(), 0);
  EXPECT_EQ(o.result["throughput"]["bytes"].get<double>(), 12000);
  EXPECT_TRUE(o.result["telemetry"].contains("before"));
  EXPECT_FALSE(o.result["gpu"]["name"].get<std::string>().empty());
  ASSERT_TRUE(o.outputs_npy.count("out"));
  auto a = ParseNpy(o.outputs_npy["out"]);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->shape, std::vector<int64_t>{1000});
  // Nothing uploaded, one output of 1000 f32 returned.
  const json& tr = o.result["transfers"];
  EXPECT_EQ(tr["h2d"]["bytes"], 0);
  EXPECT_TRUE(tr["h2d"]["bytes_per_s"].is_null());
  EXPECT_EQ(tr["d2h"]["bytes"], 4000);
  EXPECT_EQ(tr["d2h"]["tensors"], 1);
  EXPECT_GT(tr["total_ms"].get<double>(), o.result["timing"]["sampling_ms"].get<double>());
  json t = o.result["timing"];
  t.erase("samples_ms");
  std::printf("vector add n=1000 timing: %s\nthroughput: %s\n", t.dump().c_str(),
              o.result["throughput"].dump().c_str());
}

TEST_F(EngineTest, PassesAgainstExpectedNpyOutputs) {
  const int n = 777;
  std::vector<float> x(n), y(n), sum(n);
  for (int i = 0; i < n; ++i) x[i] = 0.5f * i, y[i] = 1.0f - i, sum[i] = x[i] + y[i];
  auto npy = [](const std::vector<float>& v) {
    return WriteNpy(DType::kF32, {static_cast<int64_t>(v.size())},
                    std::string_view(reinterpret_cast<const char*>(v.data()), v.size() * 4));
  };
  std::map<std::string, std::string> blobs;
  json spec = engine_test::AddSpec(n);
  for (auto [i, v] : {std::pair{0, &x}, std::pair{1, &y}}) {
    std::string f = npy(*v);
    spec["args"][i]["init"] = {{"kind", "blob"}, {"hash", Sha256Hex(f)}, {"format", "npy"}};
    blobs[Sha256Hex(f)] = f;
  }
  std::string expected = npy(sum);
  blobs[Sha256Hex(expected)] = expected;
  spec["reference"] = {{"expected", {{"out", {{"blob", Sha256Hex(expected)}, {"format", "npy"}}}}}};
  KernelJobOutput o = Run(spec, blobs);
  ASSERT_TRUE(o.status.ok()) << Msg(o);
  EXPECT_EQ(o.result["correctness"]["reference"], "expected");
  EXPECT_EQ(o.result["transfers"]["h2d"]["bytes"], 2 * n * 4);
  EXPECT_EQ(o.result["transfers"]["h2d"]["tensors"], 2);
  // A wrong expected value fails with its index and both values.
  sum[500] += 1;
  std::string wrong = npy(sum);
  blobs[Sha256Hex(wrong)] = wrong;
  spec["reference"]["expected"]["out"]["blob"] = Sha256Hex(wrong);
  spec["timing"]["enabled"] = false;
  KernelJobOutput bad = Run(spec, blobs);
  EXPECT_EQ(bad.status.error_class(), ErrorClass::kWrongResult) << Msg(bad);
  EXPECT_NE(bad.status.message().find("first at [500]"), std::string::npos) << bad.status.message();
  // The inputs went in; the outputs of a failed job are never read back.
  EXPECT_EQ(bad.result["transfers"]["h2d"]["bytes"], 2 * n * 4);
  EXPECT_TRUE(bad.result["transfers"]["d2h"].is_null());
  EXPECT_GT(bad.result["transfers"]["total_ms"].get<double>(), 0);
}

TEST_F(EngineTest, TransfersOfA64MiBInputAndOutputAreMeasured) {
  // y = x over 64 MiB: x uploaded as npy, y returned and checked against x itself.
  const int n = 16 << 20;
  std::vector<float> x(n);
  for (int i = 0; i < n; ++i) x[i] = 0.25f * static_cast<float>(i);
  const uint64_t bytes = uint64_t{64} << 20;
  std::string file = WriteNpy(DType::kF32, {n}, std::string_view(reinterpret_cast<const char*>(x.data()), bytes));
  const std::string hash = Sha256Hex(file);
  json spec = {
      {"schema_version", 1}, {"kind", "cuda"}, {"entry", "copy"},
      {"source", {{"text", R"(
extern "C" __global__ void copy(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i];
})"}}},
      {"launch", {{"grid", {"ceil_div(n, 256)"}}, {"block", {256}}}},
      {"args",
       {{{"name", "x"}, {"role", "in"}, {"dtype", "f32"}, {"shape", {"n"}},
         {"init", {{"kind", "blob"}, {"hash", hash}}}},
        {{"name", "y"}, {"role", "out"}, {"dtype", "f32"}, {"shape", {"n"}}},
        {{"name", "n"}, {"role", "scalar"}, {"dtype", "i32"}, {"value", n}}}},
      {"reference", {{"expected", {{"y", {{"blob", hash}}}}}}},
      {"correctness", {{"trials", 1}}},
      {"timing", {{"enabled", false}}},
      {"outputs", {"y"}}};
  KernelJobOutput o = Run(spec, {{hash, file}});
  ASSERT_TRUE(o.status.ok()) << Msg(o);
  const json& tr = o.result["transfers"];
  std::printf("transfers of 64 MiB each way: %s\n", tr.dump().c_str());
  for (const char* dir : {"h2d", "d2h"}) {
    SCOPED_TRACE(dir);
    ASSERT_TRUE(tr[dir].is_object()) << tr.dump();
    EXPECT_EQ(tr[dir]["bytes"].get<uint64_t>(), bytes);
    EXPECT_EQ(tr[dir]["tensors"], 1);
    EXPECT_TRUE(tr[dir]["pinned"].get<bool>());
    EXPECT_GT(tr[dir]["ms"].get<double>(), 0);
    // PCIe (or C2C) moves tens of GB/s; 1 GB/s would mean the copies were not timed alone.
    EXPECT_GT(tr[dir]["bytes_per_s"].get<double>(), 1e9);
    EXPECT_NEAR(tr[dir]["bytes_per_s"].get<double>(), bytes / (tr[dir]["ms"].get<double>() / 1e3), 1e3);
  }
  EXPECT_GE(tr["total_ms"].get<double>(), tr["h2d"]["ms"].get<double>() + tr["d2h"]["ms"].get<double>());
  // What came back is what went in.
  auto y = ParseNpy(o.outputs_npy["y"]);
  ASSERT_TRUE(y.ok());
  ASSERT_EQ(y->data.size(), bytes);
  EXPECT_EQ(std::memcmp(y->data.data(), x.data(), bytes), 0);
  // A second job of the same size reuses the warm staging memory and moves as fast.
  KernelJobOutput again = Run(spec, {{hash, file}});
  ASSERT_TRUE(again.status.ok()) << Msg(again);
  EXPECT_GT(again.result["transfers"]["h2d"]["bytes_per_s"].get<double>(), 1e9);
}

TEST_F(EngineTest, UnwrittenOutputIsWrongResult) {
  KernelJobOutput o = Run(engine_test::AddSpec(
      1000, R"(extern "C" __global__ void lazy(const float* x, const float* y, float* out, int n) {})", "lazy"));
  EXPECT_EQ(o.status.error_class(), ErrorClass::kWrongResult) << Msg(o);
  EXPECT_NE(o.status.message().find("output 'out' element [0] was never written"), std::string::npos)
      << o.status.message();
  const json& m = o.result["correctness"]["checks"][0]["outputs"]["out"];
  EXPECT_EQ(m["unwritten"], 1000);
  EXPECT_EQ(m["first_mismatches"].size(), 10u);
  EXPECT_EQ(m["first_mismatches"][0]["candidate"], "nan");
}

TEST_F(EngineTest, KernelWritingItsInputIsWrongResult) {
  KernelJobOutput o = Run(engine_test::AddSpec(1000, R"(
extern "C" __global__ void sneaky(float* x, const float* y, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { out[i] = x[i] + y[i]; x[i] = 0; }
})", "sneaky"));
  EXPECT_EQ(o.status.error_class(), ErrorClass::kWrongResult) << Msg(o);
  EXPECT_NE(o.status.message().find("kernel wrote to input 'x' (declared in)"), std::string::npos);
}

TEST_F(EngineTest, SkippedTailAtNonMultipleOfBlockIsCaught) {
  KernelJobOutput o = Run(engine_test::AddSpec(1000, R"(
extern "C" __global__ void tail(const float* x, const float* y, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n - n % 256) out[i] = x[i] + y[i];
})", "tail"));
  EXPECT_EQ(o.status.error_class(), ErrorClass::kWrongResult) << Msg(o);
  EXPECT_NE(o.status.message().find("element [768] was never written"), std::string::npos) << o.status.message();
}

TEST_F(EngineTest, KernelCachingAcrossCallsFailsTheRecheckAfterTiming) {
  // Computes on its first call only, then replays the cached answer.
  json spec = engine_test::AddSpec(256, R"(
__device__ float cache[256];
__device__ int done;
extern "C" __global__ void cached(const float* x, const float* y, float* out, int n) {
  int i = threadIdx.x;
  if (!done) { cache[i] = x[i] + y[i]; }
  __syncthreads();
  out[i] = cache[i];
  __syncthreads();
  if (i == 0) done = 1;
})", "cached");
  spec["correctness"]["trials"] = 1;
  KernelJobOutput o = Run(spec);
  EXPECT_EQ(o.status.error_class(), ErrorClass::kWrongResult) << Msg(o);
  EXPECT_NE(o.status.message().find("after timing"), std::string::npos) << o.status.message();
  // With several trials the second trial already catches it.
  spec["correctness"]["trials"] = 3;
  spec["timing"]["enabled"] = false;
  KernelJobOutput o3 = Run(spec);
  EXPECT_EQ(o3.status.error_class(), ErrorClass::kWrongResult);
  EXPECT_EQ(o3.result["correctness"]["checks"].size(), 2u) << Msg(o3);
}

TEST_F(EngineTest, RacyReductionIsCaught) {
  const char* kReduce = R"(
extern "C" __global__ void reduce(const float* x, float* out, int n) {
  __shared__ float s[1024];
  float acc = 0;
  for (int i = threadIdx.x; i < n; i += blockDim.x) acc += x[i];
  s[threadIdx.x] = acc;
#ifdef SAFE
  __syncthreads();
#endif
  for (int k = blockDim.x / 2; k > 0; k /= 2) {
    if (threadIdx.x < k) s[threadIdx.x] += s[threadIdx.x + k];
#ifdef SAFE
    __syncthreads();
#endif
  }
  if (threadIdx.x == 0) out[0] = s[0];
})";
  json spec = {
      {"schema_version", 1}, {"kind", "cuda"}, {"source", {{"text", kReduce}}}, {"entry", "reduce"},
      {"launch", {{"grid", {1}}, {"block", {1024}}}},
      {"args",
       {{{"name", "x"}, {"role", "in"}, {"dtype", "f32"}, {"shape", {"n"}}, {"init", {{"kind", "uniform"}, {"low", 0}, {"high", 1}}}},
        {{"name", "out"}, {"role", "out"}, {"dtype", "f32"}, {"shape", {1}}},
        {{"name", "n"}, {"role", "scalar"}, {"dtype", "i32"}, {"value", 1 << 20}}}},
      {"reference", {{"kind", "cuda"}, {"source", {{"text", std::string("#define SAFE\n") + kReduce}}}, {"entry", "reduce"},
                     {"launch", {{"grid", {1}}, {"block", {1024}}}}}},
      {"correctness", {{"trials", 5}}},
      {"timing", {{"enabled", false}}}};
  KernelJobOutput o = Run(spec);
  EXPECT_EQ(o.status.error_class(), ErrorClass::kWrongResult) << Msg(o);
  EXPECT_TRUE(o.result["correctness"]["seed_secret"].get<bool>());
  EXPECT_FALSE(o.result["correctness"]["checks"][0].contains("seed")) << "a random seed is secret";
}

TEST_F(EngineTest, TooLargeForTheGpuIsRejectedBeforeRunning) {
  json spec = engine_test::AddSpec(16);
  for (int i = 0; i < 3; ++i) spec["args"][i]["shape"] = {65536, 65536};
  spec["args"][0]["dtype"] = spec["args"][1]["dtype"] = spec["args"][2]["dtype"] = "f64";
  KernelJobOutput o = Run(spec);
  EXPECT_EQ(o.status.error_class(), ErrorClass::kRejected) << Msg(o);
  EXPECT_NE(o.status.message().find("GiB free"), std::string::npos) << o.status.message();
}

TEST_F(EngineTest, BadLaunchConfigIsLaunchErrorAndTheEngineCarriesOn) {
  json spec = engine_test::AddSpec(1000);
  spec["launch"]["block"] = {2048};
  EXPECT_EQ(Run(spec).status.error_class(), ErrorClass::kRejected);  // refused by the spec already
  // 1024 threads for a kernel built for at most 128: the driver refuses the launch.
  json bounded = engine_test::AddSpec(1000, R"(
extern "C" __global__ void __launch_bounds__(128) add(const float* x, const float* y, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = x[i] + y[i];
})");
  bounded["launch"]["block"] = {1024};
  bounded["launch"]["grid"] = {1};
  KernelJobOutput o = Run(bounded);
  EXPECT_EQ(o.status.error_class(), ErrorClass::kLaunchError) << Msg(o);
  EXPECT_NE(o.status.message().find("CUDA_ERROR_"), std::string::npos) << o.status.message();
  EXPECT_FALSE(o.context_lost);
  // A contract that does not match the kernel's parameters is refused before launching.
  json mismatch = engine_test::AddSpec(1000);
  mismatch["args"][3]["dtype"] = "i64";
  KernelJobOutput m = Run(mismatch);
  EXPECT_EQ(m.status.error_class(), ErrorClass::kLaunchError) << Msg(m);
  EXPECT_NE(m.status.message().find("parameter 3"), std::string::npos) << m.status.message();
  EXPECT_TRUE(Run(engine_test::AddSpec(100)).status.ok());
}

TEST_F(EngineTest, AllDtypesGenerateInRange) {
  const char* kCopy = R"(
extern "C" __global__ void copy(const unsigned char* x, unsigned char* y, int bytes) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < bytes; i += gridDim.x * blockDim.x) y[i] = x[i];
})";
  struct Case { const char* dtype; json init; double lo, hi; };
  const Case cases[] = {
      {"f64", {{"kind", "uniform"}, {"low", -2}, {"high", 3}}, -2, 3},
      {"f32", {{"kind", "uniform"}, {"low", -2}, {"high", 3}}, -2, 3},
      {"f16", {{"kind", "uniform"}, {"low", 0.5}, {"high", 1}}, 0.5, 1},
      {"bf16", {{"kind", "uniform"}, {"low", -1}, {"high", 1}}, -1, 1},
      {"i64", {{"kind", "int"}, {"low", -5}, {"high", 7}}, -5, 7},
      {"i32", {{"kind", "int"}, {"low", -5}, {"high", 7}}, -5, 7},
      {"i16", {{"kind", "int"}, {"low", -300}, {"high", 300}}, -300, 300},
      {"i8", {{"kind", "int"}, {"low", -128}, {"high", 127}}, -128, 127},
      {"u8", {{"kind", "int"}, {"low", 10}, {"high", 20}}, 10, 20},
      {"bool", {{"kind", "int"}, {"low", 0}, {"high", 1}}, 0, 1},
      {"f32", {{"kind", "const"}, {"value", 2.5}}, 2.5, 2.5},
  };
  const int n = 4096;
  for (const Case& c : cases) {
    DType t = *DTypeFromName(c.dtype);
    const bool closed = c.init["kind"] != "uniform";
    json spec = {
        {"schema_version", 1}, {"kind", "cuda"}, {"source", {{"text", kCopy}}}, {"entry", "copy"},
        {"launch", {{"grid", {16}}, {"block", {256}}}},
        {"args",
         {{{"name", "x"}, {"role", "in"}, {"dtype", c.dtype}, {"shape", {n}}, {"init", c.init}},
          {{"name", "y"}, {"role", "out"}, {"dtype", c.dtype}, {"shape", {n}}},
          {{"name", "bytes"}, {"role", "scalar"}, {"dtype", "i32"}, {"value", n * DTypeSize(t)}}}},
        {"correctness", {{"trials", 1}, {"seed", 7}}},
        {"timing", {{"enabled", false}}},
        {"outputs", {"y"}}};
    KernelJobOutput o = Run(spec);
    ASSERT_TRUE(o.status.ok()) << c.dtype << ": " << Msg(o);
    auto a = ParseNpy(o.outputs_npy["y"]);
    ASSERT_TRUE(a.ok());
    double lo = 1e300, hi = -1e300, sum = 0;
    for (int i = 0; i < n; ++i) {
      double v = ElementAsDouble(t, a->data.data(), i);
      ASSERT_GE(v, c.lo) << c.dtype;
      if (closed) ASSERT_LE(v, c.hi) << c.dtype;
      else ASSERT_LT(v, c.hi) << c.dtype;
      lo = std::min(lo, v), hi = std::max(hi, v), sum += v;
    }
    if (c.lo != c.hi) EXPECT_LT(lo, hi) << c.dtype << " is constant";
    const double mean = sum / n, mid = (c.lo + c.hi) / 2;
    EXPECT_NEAR(mean, mid, (c.hi - c.lo) * 0.1) << c.dtype;
  }
  // normal: mean and standard deviation as asked
  json spec = {
      {"schema_version", 1}, {"kind", "cuda"}, {"source", {{"text", kCopy}}}, {"entry", "copy"},
      {"launch", {{"grid", {16}}, {"block", {256}}}},
      {"args",
       {{{"name", "x"}, {"role", "in"}, {"dtype", "f32"}, {"shape", {n}}, {"init", {{"kind", "normal"}, {"mean", 10}, {"std", 2}}}},
        {{"name", "y"}, {"role", "out"}, {"dtype", "f32"}, {"shape", {n}}},
        {{"name", "bytes"}, {"role", "scalar"}, {"dtype", "i32"}, {"value", n * 4}}}},
      {"correctness", {{"trials", 1}}}, {"timing", {{"enabled", false}}}, {"outputs", {"y"}}};
  KernelJobOutput o = Run(spec);
  ASSERT_TRUE(o.status.ok()) << Msg(o);
  auto a = ParseNpy(o.outputs_npy["y"]);
  ASSERT_TRUE(a.ok());
  double sum = 0, sq = 0;
  for (int i = 0; i < n; ++i) {
    double v = ElementAsDouble(DType::kF32, a->data.data(), i);
    sum += v, sq += v * v;
  }
  const double mean = sum / n, sd = std::sqrt(sq / n - mean * mean);
  EXPECT_NEAR(mean, 10, 0.2);
  EXPECT_NEAR(sd, 2, 0.2);
}

// ---- Kernels that break the context: each in its own process. ----

// Runs `spec` in this (child) process with a fresh engine, writes what happened
// to stderr and exits 0 when it matches the expected class and CUDA error text.
[[noreturn]] void RunExpectingCrash(const json& spec, ErrorClass want, const std::string& want_text) {
  GpuInventory inv = ListGpus();
  auto e = KernelEngine::Create(inv.gpus.at(0), kWorkDir);
  if (!e.ok()) {
    std::fprintf(stderr, "create failed: %s\n", e.status().ToString().c_str());
    std::_Exit(2);
  }
  KernelJobInput in;
  in.spec = spec;
  in.module_image = Cubin(spec["source"]["text"], inv.gpus[0].arch());
  in.reference_image = Cubin(spec["reference"]["source"]["text"], inv.gpus[0].arch());
  KernelJobOutput o = (*e)->Run(in);
  std::fprintf(stderr, "status=%s context_lost=%d\n", o.status.ToString().c_str(), o.context_lost ? 1 : 0);
  bool ok = o.status.error_class() == want && o.context_lost &&
            o.status.message().find(want_text) != std::string::npos;
  // After a sticky error the engine refuses further jobs and says so.
  KernelJobOutput again = (*e)->Run(in);
  std::fprintf(stderr, "again=%s context_lost=%d\n", again.status.ToString().c_str(), again.context_lost ? 1 : 0);
  ok = ok && again.context_lost && again.status.error_class() == ErrorClass::kInfraError;
  std::fflush(stderr);
  std::_Exit(ok ? 0 : 1);
}

class EngineCrashTest : public EngineTest {
 protected:
  void SetUp() override {
    EngineTest::SetUp();
    GTEST_FLAG_SET(death_test_style, "threadsafe");
  }
};

TEST_F(EngineCrashTest, IllegalAddressIsRuntimeErrorAndLosesTheContext) {
  json spec = engine_test::AddSpec(1000, R"(
extern "C" __global__ void wild(const float* x, const float* y, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  ((float*)0x10)[i * 1024] = x[i];
})", "wild");
  EXPECT_EXIT(RunExpectingCrash(spec, ErrorClass::kRuntimeError, "CUDA_ERROR_ILLEGAL_ADDRESS"),
              ::testing::ExitedWithCode(0), "context_lost=1");
}

TEST_F(EngineCrashTest, TrapIsRuntimeErrorAndLosesTheContext) {
  json spec = engine_test::AddSpec(1000, R"(
extern "C" __global__ void trap(const float* x, const float* y, float* out, int n) { __trap(); })", "trap");
  EXPECT_EXIT(RunExpectingCrash(spec, ErrorClass::kRuntimeError, "CUDA_ERROR_"), ::testing::ExitedWithCode(0),
              "context_lost=1");
}

}  // namespace
}  // namespace assay

// The compile path against the real toolkit: NVRTC loaded at run time, nvcc
// as a child process, the cache on a real directory. No GPU is needed.
#include "compile/compiler.h"

#include <gtest/gtest.h>

#include <thread>

#include "common/util.h"
#include "compile/build.h"
#include "compile/compile_cache.h"
#include "compile/compile_command.h"
#include "compile/nvrtc_library.h"
#include "proc/subprocess.h"

namespace assay {
namespace {

static_assert(std::is_nothrow_move_constructible_v<NvrtcProgram>);
static_assert(!std::is_copy_constructible_v<NvrtcProgram>);

constexpr const char* kAdd = R"(
extern "C" __global__ void add(float* a, const float* b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] += b[i];
}
template <int N> __global__ void scale(float* a) { a[threadIdx.x] *= N; }
template __global__ void scale<3>(float*);
extern "C" __global__ void __launch_bounds__(128) bounded(float* a) {
  __shared__ float s[128];
  s[threadIdx.x] = a[threadIdx.x];
  __syncthreads();
  a[threadIdx.x] = s[127 - threadIdx.x];
}
)";

// A big, dynamically indexed local array: under -maxrregcount it must spill.
constexpr const char* kSpilly = R"(
extern "C" __global__ void spilly(float* o) {
  float v[64];
  for (int i = 0; i < 64; ++i) v[i] = o[i * threadIdx.x + 1];
  float s = 0;
  for (int i = 0; i < 64; ++i) for (int j = 0; j < 64; ++j) s += v[(i * 7 + j) % 64] * v[j];
  o[threadIdx.x] = s;
}
)";

std::string Slurp(const std::filesystem::path& p) {
  Result<std::string> r = ReadFile(p);
  return r.ok() ? *r : std::string();
}

bool HasDisassembler() {
  CompilerOptions o;
  for (const char* tool : {"cuobjdump", "nvdisasm"}) {
    if (ToolPath(o.cuda_root, tool).find('/') != std::string::npos) return true;
    ProcessOptions po;
    po.argv = {tool, "--version"};
    Result<ProcessResult> r = RunProcess(po);
    if (r.ok() && r->exit_code == 0) return true;
  }
  return false;
}

class CompilerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<TempDir> dir = TempDir::Create("assay-compile-test-");
    ASSERT_TRUE(dir.ok());
    dir_.emplace(std::move(dir).value());
    options_.cache_dir = dir_->path() / "cache";
  }
  CompileRequest Request(const char* source, std::string compiler = "nvrtc") {
    CompileRequest r;
    r.source = source;
    r.compiler = std::move(compiler);
    return r;
  }
  std::optional<TempDir> dir_;
  CompilerOptions options_;
};

TEST_F(CompilerTest, ToolkitVersionComesFromNvrtc) {
  Compiler c(options_);
  EXPECT_EQ(c.ToolkitVersion().substr(0, 3), "13.");
}

TEST_F(CompilerTest, NvrtcBuildsCubinWithResourceUsage) {
  Compiler c(options_);
  CompileOutput out = c.Compile(Request(kAdd));
  ASSERT_TRUE(out.status.ok()) << out.status.ToString() << "\n" << out.log;
  const std::string cubin = Slurp(out.artifact);
  ASSERT_GE(cubin.size(), 4u);
  EXPECT_EQ(cubin.substr(0, 4), "\x7f" "ELF");
  EXPECT_FALSE(out.cache_hit);
  EXPECT_EQ(out.cache_key.size(), 64u);
  ASSERT_TRUE(out.kernels.count("add"));
  EXPECT_GT(out.kernels["add"].registers, 0);
  EXPECT_EQ(out.kernels["add"].max_threads_per_block, 1024);
  EXPECT_GT(out.kernels["add"].const_bytes, 0);
  EXPECT_EQ(out.kernels["add"].demangled, "add");
  ASSERT_TRUE(out.kernels.count("_Z5scaleILi3EEvPf"));
  EXPECT_EQ(out.kernels["_Z5scaleILi3EEvPf"].demangled, "void scale<3>(float*)");
  EXPECT_EQ(out.kernels["bounded"].max_threads_per_block, 128);
  EXPECT_EQ(out.kernels["bounded"].shared_bytes, 512);
  EXPECT_TRUE(out.ptx.empty());
}

TEST_F(CompilerTest, NvrtcReturnsPtxOnRequest) {
  CompileRequest r = Request(kAdd);
  r.want_ptx = true;
  CompileOutput out = Compiler(options_).Compile(r);
  ASSERT_TRUE(out.status.ok()) << out.status.ToString();
  EXPECT_NE(out.ptx.find(".entry add"), std::string::npos);
  EXPECT_NE(out.ptx.find(".maxntid 128"), std::string::npos);
}

TEST_F(CompilerTest, HalfAndBfloat16HeadersResolveUnderNvrtc) {
  CompileOutput out = Compiler(options_).Compile(Request(R"(
#include <cuda_fp16.h>
#include <cuda_bf16.h>
extern "C" __global__ void h(__half* a, __nv_bfloat16* b) { a[0] = __float2half(1.f); b[0] = __float2bfloat16(2.f); }
)"));
  EXPECT_TRUE(out.status.ok()) << out.log;
}

TEST_F(CompilerTest, BrokenSourceIsCompileErrorWithLineNumber) {
  CompileRequest r = Request("extern \"C\" __global__ void k(float* a) {\n  a[0] = 1;\n  undefined_thing = 2;\n}\n");
  r.filename = "mine.cu";
  CompileOutput out = Compiler(options_).Compile(r);
  EXPECT_EQ(out.status.error_class(), ErrorClass::kCompileError);
  EXPECT_NE(out.log.find("mine.cu(3)"), std::string::npos) << out.log;
  EXPECT_NE(out.status.message().find("undefined_thing"), std::string::npos) << out.status.message();
  EXPECT_TRUE(out.artifact.empty());
}

TEST_F(CompilerTest, SecondCompileIsACacheHitWithTheSameBytes) {
  Compiler c(options_);
  CompileOutput first = c.Compile(Request(kAdd));
  ASSERT_TRUE(first.status.ok());
  CompileOutput second = c.Compile(Request(kAdd));
  ASSERT_TRUE(second.status.ok());
  EXPECT_TRUE(second.cache_hit);
  EXPECT_EQ(second.duration_ms, 0);
  EXPECT_EQ(second.cache_key, first.cache_key);
  EXPECT_EQ(Slurp(second.artifact), Slurp(first.artifact));
  EXPECT_EQ(second.kernels.at("add").registers, first.kernels.at("add").registers);
  EXPECT_EQ(second.log, first.log);
}

TEST_F(CompilerTest, CompileErrorsAreCachedToo) {
  Compiler c(options_);
  CompileOutput first = c.Compile(Request("__global__ void k() { nope; }"));
  CompileOutput second = c.Compile(Request("__global__ void k() { nope; }"));
  EXPECT_EQ(second.status.error_class(), ErrorClass::kCompileError);
  EXPECT_TRUE(second.cache_hit);
  EXPECT_EQ(second.log, first.log);
}

TEST_F(CompilerTest, FlagsArchAndCompilerChangeTheKey) {
  CompileRequest base = Request(kAdd);
  CompileRequest fast = base;
  fast.flags = {"-use_fast_math"};
  CompileRequest ampere = base;
  ampere.arch = "sm_80";
  CompileRequest nvcc = base;
  nvcc.compiler = "nvcc";
  CompileRequest reordered = base;
  reordered.flags = {"-DA", "-DB"};
  CompileRequest reordered2 = base;
  reordered2.flags = {"-DB", "-DA"};
  const std::string k = CompileCacheKey(base, "13.0");
  EXPECT_NE(k, CompileCacheKey(fast, "13.0"));
  EXPECT_NE(k, CompileCacheKey(ampere, "13.0"));
  EXPECT_NE(k, CompileCacheKey(nvcc, "13.0"));
  EXPECT_NE(CompileCacheKey(reordered, "13.0"), CompileCacheKey(reordered2, "13.0"));
  EXPECT_EQ(k, CompileCacheKey(Request(kAdd), "13.0"));

  Compiler c(options_);
  CompileOutput a = c.Compile(base);
  CompileOutput b = c.Compile(ampere);
  ASSERT_TRUE(a.status.ok() && b.status.ok());
  EXPECT_NE(a.cache_key, b.cache_key);
  EXPECT_FALSE(b.cache_hit);
}

TEST_F(CompilerTest, ForbiddenFlagIsRejectedAndNotCached) {
  CompileRequest r = Request(kAdd);
  r.flags = {"-I/etc"};
  CompileOutput out = Compiler(options_).Compile(r);
  EXPECT_EQ(out.status.error_class(), ErrorClass::kRejected);
  EXPECT_NE(out.status.message().find("-I/etc"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(options_.cache_dir));
}

TEST_F(CompilerTest, ForbiddenIncludeIsRejected) {
  CompileOutput out = Compiler(options_).Compile(Request("#include \"/etc/passwd\"\n__global__ void k() {}\n"));
  EXPECT_EQ(out.status.error_class(), ErrorClass::kRejected);
  EXPECT_EQ(out.status.field(), "source");
}

TEST_F(CompilerTest, RegisterCapCausesReportedSpills) {
  CompileRequest r = Request(kSpilly);
  r.flags = {"-maxrregcount=16"};
  CompileOutput out = Compiler(options_).Compile(r);
  ASSERT_TRUE(out.status.ok()) << out.log;
  const ResourceUsage& u = out.kernels.at("spilly");
  EXPECT_GT(u.local_bytes, 0);
  EXPECT_GT(u.spill_stores, 0);
  EXPECT_GT(u.spill_loads, 0);
  EXPECT_LE(u.registers, 24);  // ptxas' floor for sm_90 is 24
}

TEST_F(CompilerTest, NvccBuildsCubinWithResourceUsageAndPtx) {
  CompileRequest r = Request(kAdd, "nvcc");
  r.want_ptx = true;
  CompileOutput out = Compiler(options_).Compile(r);
  ASSERT_TRUE(out.status.ok()) << out.status.ToString() << "\n" << out.log;
  EXPECT_EQ(out.compiler, "nvcc");
  EXPECT_EQ(Slurp(out.artifact).substr(0, 4), "\x7f" "ELF");
  EXPECT_GT(out.kernels.at("add").registers, 0);
  EXPECT_EQ(out.kernels.at("bounded").max_threads_per_block, 128);
  EXPECT_NE(out.ptx.find(".entry add"), std::string::npos);
}

TEST_F(CompilerTest, NvccCompileErrorCarriesTheLog) {
  CompileOutput out = Compiler(options_).Compile(Request("__global__ void k() {\n  broken(;\n}\n", "nvcc"));
  EXPECT_EQ(out.status.error_class(), ErrorClass::kCompileError);
  EXPECT_NE(out.log.find("kernel.cu(2)"), std::string::npos) << out.log;
}

TEST_F(CompilerTest, ExecutableIsBuiltWithNvccAndRuns) {
  CompileRequest r = Request("#include <cstdio>\nint main() { std::printf(\"hello from assay\\n\"); return 0; }\n");
  r.output = CompileOutputKind::kExecutable;  // compiler "nvrtc" is overridden
  CompileOutput out = Compiler(options_).Compile(r);
  ASSERT_TRUE(out.status.ok()) << out.status.ToString() << "\n" << out.log;
  EXPECT_EQ(out.compiler, "nvcc");
  ProcessOptions po;
  po.argv = {out.artifact.string()};
  po.timeout_ms = 30'000;
  Result<ProcessResult> run = RunProcess(po);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_EQ(run->exit_code, 0);
  EXPECT_EQ(run->stdout_data, "hello from assay\n");
}

TEST_F(CompilerTest, SassNamesTheKernelOrIsAnInfraErrorWithoutATool) {
  CompileRequest r = Request(kAdd);
  r.want_sass = true;
  CompileOutput out = Compiler(options_).Compile(r);
  if (HasDisassembler()) {
    ASSERT_TRUE(out.status.ok()) << out.status.ToString();
    EXPECT_NE(out.sass.find("add"), std::string::npos);
  } else {
    // This host's toolkit has neither cuobjdump nor nvdisasm: our fault, not the user's.
    EXPECT_EQ(out.status.error_class(), ErrorClass::kInfraError);
    EXPECT_NE(out.status.message().find("cuobjdump"), std::string::npos);
    CompileOutput again = Compiler(options_).Compile(r);
    EXPECT_FALSE(again.cache_hit);  // infra errors are not cached
  }
}

TEST_F(CompilerTest, ConcurrentCompilesOfOneKeyAgree) {
  std::vector<CompileOutput> outs(2);
  std::vector<std::thread> threads;
  for (int i = 0; i < 2; ++i) {
    threads.emplace_back([&, i] { outs[i] = Compiler(options_).Compile(Request(kAdd)); });
  }
  for (auto& t : threads) t.join();
  ASSERT_TRUE(outs[0].status.ok() && outs[1].status.ok());
  EXPECT_EQ(outs[0].artifact, outs[1].artifact);
  EXPECT_EQ(Slurp(outs[0].artifact).substr(0, 4), "\x7f" "ELF");
  EXPECT_TRUE(std::filesystem::is_empty(options_.cache_dir / "tmp"));  // the loser's copy is gone
}

TEST_F(CompilerTest, IsolatedCompileRunsInAChildAndHitsTheCacheAfter) {
  Compiler c(options_);
  CompileOutput out = c.CompileIsolated(Request(kAdd), ASSAY_TEST_COMPILER);
  ASSERT_TRUE(out.status.ok()) << out.status.ToString() << "\n" << out.log;
  EXPECT_FALSE(out.cache_hit);
  EXPECT_EQ(Slurp(out.artifact).substr(0, 4), "\x7f" "ELF");
  EXPECT_GT(out.kernels.at("add").registers, 0);
  CompileOutput again = c.CompileIsolated(Request(kAdd), "/nonexistent/binary");  // no child needed
  EXPECT_TRUE(again.cache_hit);
  EXPECT_EQ(again.artifact, out.artifact);
}

TEST_F(CompilerTest, IsolatedCompileErrorKeepsTheLog) {
  CompileOutput out = Compiler(options_).CompileIsolated(Request("__global__ void k() {\n nope;\n}\n"),
                                                         ASSAY_TEST_COMPILER);
  EXPECT_EQ(out.status.error_class(), ErrorClass::kCompileError);
  EXPECT_NE(out.log.find("kernel.cu(2)"), std::string::npos) << out.log;
}

TEST_F(CompilerTest, IsolatedCompileWithMissingChildIsInfraError) {
  CompileOutput out = Compiler(options_).CompileIsolated(Request(kAdd), "/nonexistent/assay");
  EXPECT_EQ(out.status.error_class(), ErrorClass::kInfraError);
}

TEST_F(CompilerTest, IsolatedCompilerCrashIsTheUsersCompileError) {
  // A "compiler" that dies of SIGSEGV stands in for one crashed by the source.
  const std::filesystem::path crasher = dir_->path() / "crash.sh";
  ASSERT_TRUE(WriteFileAtomic(crasher, "#!/bin/sh\nkill -SEGV $$\n").ok());
  std::filesystem::permissions(crasher, std::filesystem::perms::owner_all);
  options_.sandbox = false;
  CompileOutput out = Compiler(options_).CompileIsolated(Request(kAdd), crasher);
  EXPECT_EQ(out.status.error_class(), ErrorClass::kCompileError);
  EXPECT_EQ(out.status.message(), "compiler crashed with SIGSEGV");
}

TEST_F(CompilerTest, IsolatedCompileTimeoutIsACompileError) {
  const std::filesystem::path sleeper = dir_->path() / "sleep.sh";
  ASSERT_TRUE(WriteFileAtomic(sleeper, "#!/bin/sh\nexec sleep 60\n").ok());
  std::filesystem::permissions(sleeper, std::filesystem::perms::owner_all);
  options_.sandbox = false;
  options_.timeout_ms = 1'000;  // + the child's 5 s slack
  CompileOutput out = Compiler(options_).CompileIsolated(Request(kAdd), sleeper);
  EXPECT_EQ(out.status.error_class(), ErrorClass::kCompileError);
  EXPECT_EQ(out.status.message(), "compilation timed out after 1 s");
}

TEST_F(CompilerTest, CompileCommandWritesCubinAndUsesExitCodes) {
  const std::filesystem::path file = dir_->path() / "add.cu";
  ASSERT_TRUE(WriteFileAtomic(file, kAdd).ok());
  CompileCommandOptions o;
  o.file = file;
  o.cache_dir = options_.cache_dir;
  testing::internal::CaptureStdout();
  EXPECT_EQ(RunCompileCommand(o), 0);
  const std::string printed = testing::internal::GetCapturedStdout();
  EXPECT_NE(printed.find("void scale<3>(float*)"), std::string::npos) << printed;
  EXPECT_EQ(Slurp(dir_->path() / "add.cubin").substr(0, 4), "\x7f" "ELF");

  o.flags = {"-o"};
  testing::internal::CaptureStderr();
  EXPECT_EQ(RunCompileCommand(o), 2);
  o.flags = {};
  const std::filesystem::path broken = dir_->path() / "broken.cu";
  ASSERT_TRUE(WriteFileAtomic(broken, "__global__ void k() { nope; }\n").ok());
  o.file = broken;
  EXPECT_EQ(RunCompileCommand(o), 1);
  const std::string errors = testing::internal::GetCapturedStderr();
  EXPECT_NE(errors.find("compile_error"), std::string::npos) << errors;
  o.file = dir_->path() / "missing.cu";
  testing::internal::CaptureStderr();
  EXPECT_EQ(RunCompileCommand(o), 2);
  testing::internal::GetCapturedStderr();
}

}  // namespace
}  // namespace assay

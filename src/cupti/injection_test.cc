// libassay_cupti.so in real processes: the nvcc-built probe (testdata/
// cupti_probe.cu) and a program that never touches CUDA, each run as a child
// with CUDA_INJECTION64_PATH / ASSAY_CUPTI_OUT set, then read back through
// KernelReportFromFile. The probe and the library are found relative to this
// binary, so the build folder can be carried to the GPU machine.
#include <gtest/gtest.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "common/util.h"
#include "cupti/kernel_report.h"
#include "gpu/devices.h"
#include "proc/subprocess.h"

extern char** environ;

namespace assay {
namespace {

using nlohmann::json;

bool ExpectGpu() {
  const char* e = std::getenv("ASSAY_EXPECT_GPU");
  return e && std::string(e) == "1";
}

std::filesystem::path SelfDir() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return {};
  return std::filesystem::path(std::string(buf, static_cast<size_t>(n))).parent_path();
}

std::map<std::string, std::string> InheritedEnv() {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string kv = *e;
    auto eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  env.erase("CUDA_INJECTION64_PATH");
  env.erase("ASSAY_CUPTI_OUT");
  return env;
}

class InjectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    lib_ = std::filesystem::weakly_canonical(SelfDir() / ASSAY_CUPTI_LIB_REL);
    probe_ = SelfDir() / "assay_cupti_probe";
    no_cuda_ = SelfDir() / "assay_cupti_no_cuda_probe";
    ASSERT_TRUE(std::filesystem::exists(lib_)) << lib_;
    ASSERT_TRUE(std::filesystem::exists(probe_)) << probe_;
    auto d = TempDir::Create("cupti_inject_");
    ASSERT_TRUE(d.ok());
    dir_.emplace(std::move(*d));
    out_ = dir_->path() / "cupti.json";
  }

  void RequireGpu() {
    GpuInventory inv = ListGpus();
    if (!inv.gpus.empty()) {
      gpu_name_ = inv.gpus[0].name;
      return;
    }
    if (ExpectGpu()) FAIL() << "ASSAY_EXPECT_GPU=1 but no GPU: " << inv.status.ToString();
    GTEST_SKIP() << "no GPU: " << inv.status.message();
  }

  // Runs `exe args...`, with the injection when `inject`.
  ProcessResult Run(const std::filesystem::path& exe, std::vector<std::string> args, bool inject,
                    std::map<std::string, std::string> extra_env = {}, bool sandbox = false) {
    ProcessOptions p;
    p.argv.push_back(exe.string());
    for (auto& a : args) p.argv.push_back(std::move(a));
    auto env = InheritedEnv();
    if (inject) {
      env["CUDA_INJECTION64_PATH"] = lib_.string();
      env["ASSAY_CUPTI_OUT"] = out_.string();
    }
    for (auto& [k, v] : extra_env) env[k] = v;
    p.env = std::move(env);
    p.cwd = dir_->path();
    p.timeout_ms = 45000;  // a deadlock in the injection must fail, not hang
    p.sandbox.enabled = sandbox;
    p.sandbox.writable_dir = dir_->path();
    auto r = RunProcess(p);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : ProcessResult{};
  }

  std::filesystem::path lib_, probe_, no_cuda_, out_;
  std::optional<TempDir> dir_;
  std::string gpu_name_;
};

const json* FindTotal(const json& totals, const std::string& name) {
  for (const json& t : totals) {
    if (t["name"] == name) return &t;
  }
  return nullptr;
}

// The probe's 9 launches come back with names, shapes, streams and a 1 ms
// spin timed to within 5%; the program's own output is unchanged.
TEST_F(InjectionTest, RecordsEveryLaunchOfACudaProgram) {
  RequireGpu();
  if (HasFatalFailure() || IsSkipped()) return;
  ProcessResult plain = Run(probe_, {}, false);
  ASSERT_EQ(plain.exit_code, 0) << plain.stderr_data;
  EXPECT_FALSE(std::filesystem::exists(out_));
  ProcessResult traced = Run(probe_, {}, true);
  ASSERT_EQ(traced.exit_code, 0) << traced.stderr_data;
  EXPECT_EQ(traced.stdout_data, plain.stdout_data);
  EXPECT_NE(plain.stdout_data.find("spin ok"), std::string::npos) << plain.stdout_data;

  ASSERT_TRUE(std::filesystem::exists(out_));
  auto report = KernelReportFromFile(out_);
  ASSERT_TRUE(report.ok()) << report.status().ToString() << "\n" << *ReadFile(out_);
  const json& r = *report;
  std::cout << "[ gpu ] " << gpu_name_ << "\n" << r.dump(1).substr(0, 6000) << "\n";
  EXPECT_EQ(r["kernels_complete"], true);
  EXPECT_EQ(r["kernel_records_dropped"], 0);
  ASSERT_EQ(r["kernel_count"], 9);

  const std::string scale = "probe::scale(float*, float, int)";
  const std::string add = "void probe::add_n<3>(int*, int)";
  const std::string spin = "spin_1ms";
  int n_scale = 0, n_add = 0, n_spin = 0;
  json scale_stream, add_stream;
  for (const json& k : r["kernels"]) {
    if (k["name"] == scale) {
      ++n_scale;
      EXPECT_EQ(k["grid"], json({8, 2, 1}));
      EXPECT_EQ(k["block"], json({64, 2, 1}));
      EXPECT_EQ(k["static_smem_bytes"], 1024);
      EXPECT_EQ(k["dynamic_smem_bytes"], 0);
      EXPECT_GT(k["registers"].get<int>(), 0);
      if (scale_stream.is_null()) scale_stream = k["stream"];
      EXPECT_EQ(k["stream"], scale_stream);
    } else if (k["name"] == add) {
      ++n_add;
      EXPECT_EQ(k["grid"], json({3, 1, 1}));
      EXPECT_EQ(k["block"], json({32, 1, 1}));
      EXPECT_EQ(k["dynamic_smem_bytes"], 1024);
      if (add_stream.is_null()) add_stream = k["stream"];
      EXPECT_EQ(k["stream"], add_stream);
    } else if (k["name"] == spin) {
      ++n_spin;
      EXPECT_EQ(k["grid"], json({1, 1, 1}));
      EXPECT_EQ(k["block"], json({1, 1, 1}));
      const double ms = k["duration_ms"].get<double>();
      EXPECT_GT(ms, 0.95);
      EXPECT_LT(ms, 1.05);
      EXPECT_EQ(k["stream"], scale_stream);  // both on the legacy default stream
    } else {
      ADD_FAILURE() << "unexpected kernel " << k["name"];
    }
    EXPECT_GT(k["correlation"].get<int64_t>(), 0);
  }
  EXPECT_EQ(n_scale, 5);
  EXPECT_EQ(n_add, 3);
  EXPECT_EQ(n_spin, 1);
  EXPECT_NE(scale_stream, add_stream);

  const json* t = FindTotal(r["kernel_totals"], spin);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(r["kernel_totals"][0]["name"], spin);  // the most expensive by far
  t = FindTotal(r["kernel_totals"], scale);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ((*t)["launches"], 5);
  const double gpu = r["gpu_time_ms"].get<double>();
  const double busy = r["gpu_busy_ms"].get<double>();
  EXPECT_GT(gpu, 0.95);
  EXPECT_LE(busy, gpu + 1e-9);
  EXPECT_GT(busy, 0.95);

  // The probe copies twice to the device, three times back, and sets once.
  std::map<std::string, int> copies;
  for (const json& m : r["memcpy_totals"]) copies[m["kind"]] = m["count"];
  EXPECT_EQ(copies["HtoD"], 2);
  EXPECT_EQ(copies["DtoH"], 3);
  EXPECT_EQ(copies["memset"], 1);
}

// cudaDeviceReset destroys the context before exit: the context-destroy
// snapshot and the at-exit flush must neither deadlock nor lose launches.
TEST_F(InjectionTest, SurvivesContextDestructionBeforeExit) {
  RequireGpu();
  if (HasFatalFailure() || IsSkipped()) return;
  ProcessResult traced = Run(probe_, {"reset"}, true);
  ASSERT_FALSE(traced.timed_out);
  ASSERT_EQ(traced.exit_code, 0) << traced.stderr_data;
  auto report = KernelReportFromFile(out_);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ((*report)["kernel_count"], 9);
  EXPECT_EQ((*report)["kernels_complete"], true);
}

// A process that leaves with _exit() after AssayCuptiFlush() (the Python
// harness does, to skip the interpreter's teardown) still leaves the final,
// complete file: every launch, "complete": true.
TEST_F(InjectionTest, FlushBeforeUnderscoreExitWritesTheFinalFile) {
  RequireGpu();
  if (HasFatalFailure() || IsSkipped()) return;
  ProcessResult traced = Run(probe_, {"flush_exit"}, true);
  ASSERT_EQ(traced.exit_code, 0) << traced.stderr_data;
  auto report = KernelReportFromFile(out_);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ((*report)["kernel_count"], 9);
  EXPECT_EQ((*report)["kernels_complete"], true);
}

// A libcupti that cannot be loaded costs the timing, never the program.
TEST_F(InjectionTest, MissingCuptiWritesAnErrorAndTheProgramStillRuns) {
  RequireGpu();
  if (HasFatalFailure() || IsSkipped()) return;
  ProcessResult plain = Run(probe_, {}, false);
  ProcessResult traced = Run(probe_, {}, true, {{"ASSAY_CUPTI_LIB", "/nonexistent/libcupti.so.13"}});
  ASSERT_EQ(traced.exit_code, 0) << traced.stderr_data;
  EXPECT_EQ(traced.stdout_data, plain.stdout_data);
  auto report = KernelReportFromFile(out_);
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.status().message().find("/nonexistent/libcupti.so.13"), std::string::npos)
      << report.status().message();
  json program = json::object();
  AttachKernelReport(out_, &program);
  EXPECT_TRUE(program["kernels"].empty());
  EXPECT_TRUE(program.contains("kernels_error"));
}

// The library's record cap: later launches are counted, not kept.
TEST_F(InjectionTest, RecordCapTruncates) {
  RequireGpu();
  if (HasFatalFailure() || IsSkipped()) return;
  ProcessResult traced = Run(probe_, {}, true, {{"ASSAY_CUPTI_MAX_RECORDS", "4"}});
  ASSERT_EQ(traced.exit_code, 0) << traced.stderr_data;
  auto report = KernelReportFromFile(out_);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ((*report)["kernel_count"], 4);
  EXPECT_EQ((*report)["kernel_records_truncated"], true);
}

// The worker runs programs sandboxed: the library (outside the job
// directory) must still be loadable and the file writable from inside.
TEST_F(InjectionTest, WorksInsideTheSandbox) {
  RequireGpu();
  if (HasFatalFailure() || IsSkipped()) return;
  ProcessResult traced = Run(probe_, {}, true, {}, /*sandbox=*/true);
  ASSERT_EQ(traced.exit_code, 0) << traced.stderr_data;
  auto report = KernelReportFromFile(out_);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ((*report)["kernel_count"], 9);
}

// No GPU needed: a program that never initialises CUDA never loads the
// library, runs unchanged, and leaves no file (the report is empty).
TEST_F(InjectionTest, ProgramWithoutCudaIsUnaffected) {
  ProcessResult plain = Run(no_cuda_, {"x"}, false);
  ProcessResult traced = Run(no_cuda_, {"x"}, true);
  ASSERT_EQ(plain.exit_code, 0);
  ASSERT_EQ(traced.exit_code, 0);
  EXPECT_EQ(traced.stdout_data, plain.stdout_data);
  EXPECT_EQ(traced.stdout_data, "no cuda here, sum 500500, args 1\n");
  EXPECT_TRUE(traced.stderr_data.empty()) << traced.stderr_data;
  EXPECT_FALSE(std::filesystem::exists(out_));
  auto report = KernelReportFromFile(out_);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(*report, EmptyKernelReport());
}

// No GPU needed: a process that loads the library itself, marks and flushes
// without ever initialising CUDA is unaffected, and no file appears (nothing
// started).
TEST_F(InjectionTest, MarkWithoutCudaIsHarmless) {
  ProcessResult traced = Run(no_cuda_, {"mark"}, true);
  ASSERT_EQ(traced.exit_code, 0) << traced.stdout_data << traced.stderr_data;
  EXPECT_EQ(traced.stdout_data, "no cuda here, sum 500500, args 1\nmarked\n");
  EXPECT_TRUE(traced.stderr_data.empty()) << traced.stderr_data;
  EXPECT_FALSE(std::filesystem::exists(out_));
}

// A program that loads the library with dlopen (as the Python harness does
// with ctypes) and marks a phase: SummarizePhase finds exactly the phase's
// kernels, without the excluded flush, and the spin time is right.
TEST_F(InjectionTest, MarksCutAPhaseOutOfTheRecord) {
  RequireGpu();
  if (HasFatalFailure() || IsSkipped()) return;
  ProcessResult plain = Run(probe_, {"marks"}, false);
  ASSERT_EQ(plain.exit_code, 0) << plain.stderr_data;
  EXPECT_EQ(plain.stdout_data, "marks: 0 calls\n");
  ProcessResult traced = Run(probe_, {"marks"}, true);
  ASSERT_EQ(traced.exit_code, 0) << traced.stderr_data;
  EXPECT_EQ(traced.stdout_data, "marks: 5 calls\n");

  auto text = ReadFile(out_);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  json doc = json::parse(*text);
  ASSERT_TRUE(doc.contains("marks")) << *text;
  std::cout << "[ gpu ] marks " << doc["marks"].dump() << " dropped " << doc["marks_dropped"] << "\n";
  ASSERT_EQ(doc["marks"].size(), 4u);  // before.cuda was taken before CUPTI was up
  EXPECT_EQ(doc["marks_dropped"], 1);
  EXPECT_EQ(doc["marks"][0]["label"], "phase.begin");
  EXPECT_EQ(doc["marks"][1]["label"], "phase.end");
  EXPECT_EQ(doc["marks"][2]["label"], "tab_here __");
  EXPECT_EQ(doc["marks"][3]["label"].get<std::string>().size(), 64u);

  auto s = SummarizePhase(out_, "phase.begin", "phase.end", {"assay_l2_flush"});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  std::cout << "[ gpu ] phase " << ToJson(*s).dump() << "\n";
  EXPECT_TRUE(s->begin_found);
  EXPECT_TRUE(s->end_found);
  EXPECT_TRUE(s->complete);
  EXPECT_EQ(s->records_dropped, 0u);
  EXPECT_EQ(s->kernels, 5u);           // 3 spin_ns + 2 add_n<3>
  EXPECT_EQ(s->excluded_kernels, 3u);  // assay_l2_flush
  ASSERT_GE(s->top.size(), 2u);
  EXPECT_EQ(s->top[0].name, "spin_ns");
  EXPECT_EQ(s->top[0].launches, 3u);
  EXPECT_NEAR(s->top[0].total_ms, 0.3, 0.015);
  EXPECT_EQ(s->top[1].name, "void probe::add_n<3>(int*, int)");
  EXPECT_EQ(s->top[1].launches, 2u);
  EXPECT_GT(s->kernel_sum_ms, 0.3);
  EXPECT_LE(s->kernel_busy_ms, s->kernel_sum_ms + 1e-9);
  EXPECT_GE(s->span_ms, s->kernel_busy_ms);
  // The whole record still holds every launch: 5 + 3 + 3 + 2 + 2.
  auto report = KernelReportFromFile(out_);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ((*report)["kernel_count"], 15);
}

// No GPU needed: the library exports the driver's entry point, the mark and
// flush functions, and nothing that could clash with the host's C++ runtime.
TEST_F(InjectionTest, LibraryExportsOnlyItsThreeEntryPoints) {
  ProcessOptions p;
  p.argv = {"nm", "-D", "--defined-only", lib_.string()};
  auto r = RunProcess(p);
  if (!r.ok() || r->exit_code != 0) GTEST_SKIP() << "nm not available";
  std::vector<std::string> symbols;
  size_t pos = 0;
  while (pos < r->stdout_data.size()) {
    size_t nl = r->stdout_data.find('\n', pos);
    if (nl == std::string::npos) nl = r->stdout_data.size();
    std::string line = r->stdout_data.substr(pos, nl - pos);
    pos = nl + 1;
    if (auto sp = line.rfind(' '); sp != std::string::npos) symbols.push_back(line.substr(sp + 1));
  }
  EXPECT_EQ(symbols, (std::vector<std::string>{"AssayCuptiFlush", "AssayCuptiMark", "InitializeInjection"})) << r->stdout_data;
}

}  // namespace
}  // namespace assay

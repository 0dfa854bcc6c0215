// KernelTimer and MeasureDevicePeaks on a real GPU. Skips without one, fails
// without one when ASSAY_EXPECT_GPU=1 (as on the GPU machine).
//
// The faulting-kernel test runs in a re-executed child process (gtest's
// "threadsafe" death-test style: fork + exec of this binary, filtered to that
// one test): an illegal address is a sticky error that poisons the context of
// the process it happens in, so it must not happen in the process that runs
// the other tests.
#include "measure/timer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpu/cuda_driver.h"
#include "gpu/cuda_handles.h"
#include "measure/helper_kernels.h"
#include "measure/reference_kernels.h"

namespace assay {
namespace {

const CudaDriverApi& Cu() { return **CudaDriver(); }

struct Gpu {
  GpuInfo info;
  std::optional<PrimaryContext> ctx;
  std::unique_ptr<KernelTimer> timer;
  Module kernels;
  CUfunction spin = nullptr, read_sum = nullptr, fault = nullptr;
};

// One context, timer and module for the whole binary (tests run in one thread).
Gpu* SharedGpu(std::string* why) {
  static Gpu* gpu = nullptr;
  static std::string error;
  if (gpu || !error.empty()) {
    *why = error;
    return gpu;
  }
  GpuInventory inv = ListGpus();
  if (inv.gpus.empty()) {
    error = inv.status.ok() ? "no GPU" : inv.status.message();
    *why = error;
    return nullptr;
  }
  auto g = std::make_unique<Gpu>();
  g->info = inv.gpus[0];
  auto ctx = PrimaryContext::Create(g->info.index);
  if (!ctx.ok()) {
    *why = error = ctx.status().ToString();
    return nullptr;
  }
  g->ctx.emplace(std::move(*ctx));
  auto timer = KernelTimer::Create(g->info);
  if (!timer.ok()) {
    *why = error = timer.status().ToString();
    return nullptr;
  }
  g->timer = std::move(*timer);
  auto module = CompileAndLoad(g->info, kReferenceKernelsSource, DefaultMeasureCacheDir(), "reference_kernels.cu");
  if (!module.ok()) {
    *why = error = module.status().ToString();
    return nullptr;
  }
  g->kernels = std::move(*module);
  g->spin = *g->kernels.Function("assay_spin");
  g->read_sum = *g->kernels.Function("assay_read_sum");
  g->fault = *g->kernels.Function("assay_fault");
  gpu = g.release();  // process lifetime: the context outlives every test
  return gpu;
}

Status LaunchChecked(CUfunction f, unsigned grid, unsigned block, CUstream s, void** args) {
  CUresult r = Cu().cuLaunchKernel(f, grid, 1, 1, block, 1, 1, 0, s, args, nullptr);
  return r == CUDA_SUCCESS ? Status::Ok() : CuStatus(ErrorClass::kLaunchError, r, "cuLaunchKernel");
}

LaunchFn SpinLaunch(CUfunction spin, unsigned long long ns) {
  return [spin, ns](CUstream s) mutable {
    void* args[] = {&ns};
    return LaunchChecked(spin, 1, 1, s, args);
  };
}

class TimerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    gpu_ = SharedGpu(&why);
    if (!gpu_) {
      const char* expect = std::getenv("ASSAY_EXPECT_GPU");
      if (expect && std::string(expect) == "1") FAIL() << "ASSAY_EXPECT_GPU=1 but no usable GPU: " << why;
      GTEST_SKIP() << "no GPU: " << why;
    }
  }
  KernelTimer& timer() { return *gpu_->timer; }
  Gpu* gpu_ = nullptr;
};

// Samples come from CUPTI's kernel records (source "cupti"): the spin's GPU
// duration, within 2 % + `slack_ms` of the spin. The slack covers the
// kernel's own start and finish on the GPU (a 1 ms spin read 1.000636 ms by
// CUPTI on an H200) and %globaltimer's update step, which can end a spin up
// to one step early or late; it matters only for the 10 us spin. It must read
// below the event median, which adds the event records around the launch
// (~3.3 us on an H200).
//
// The two clocks differ by the event records around the launch: the gap
// between the event and CUPTI medians is positive and at most the event
// overhead (an empty kernel's event time, event_overhead_ms, itself under
// 5 us) + 1 us. EventsOnRequest checks the event clock against the spin.
TimingResult ExpectSpin(KernelTimer& timer, CUfunction spin, double known_ms, TimingMode mode, double slack_ms) {
  TimingOptions o;
  o.mode = mode;
  auto r = timer.Measure(SpinLaunch(spin, static_cast<unsigned long long>(known_ms * 1e6)), o);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (!r.ok()) return {};
  std::printf("[ fidelity ] spin %.3f ms (%s): %s median %.6f ms (%+.3f us, %+.2f %%), event median %.6f ms, "
              "event overhead %.5f ms, min %.6f, noise %.5f, samples %d, notes: %s\n",
              known_ms, std::string(TimingModeName(mode)).c_str(), r->source.c_str(), r->stats.median_ms,
              (r->stats.median_ms - known_ms) * 1e3, 100 * (r->stats.median_ms / known_ms - 1), r->event_median_ms,
              r->event_overhead_ms, r->stats.min_ms, r->stats.noise, r->stats.samples, r->notes.c_str());
  EXPECT_EQ(r->mode, mode);
  EXPECT_EQ(r->source, "cupti") << r->notes;
  EXPECT_EQ(r->kernels_per_sample, 1);
  EXPECT_NEAR(r->stats.median_ms, known_ms, 0.02 * known_ms + slack_ms);
  EXPECT_LT(r->stats.median_ms, r->event_median_ms);
  EXPECT_GT(r->event_overhead_ms, 0.0);
  EXPECT_LT(r->event_overhead_ms, 0.005);
  EXPECT_LT(r->event_median_ms - r->stats.median_ms, r->event_overhead_ms + 0.001);
  nlohmann::json j = ToJson(*r);
  EXPECT_EQ(j["source"], r->source);
  EXPECT_DOUBLE_EQ(j["event_median_ms"].get<double>(), r->event_median_ms);
  return std::move(*r);
}

TEST_F(TimerTest, SpinKernelOf10usMeasuredWithin2Percent) {
  TimingResult r = ExpectSpin(timer(), gpu_->spin, 0.010, TimingMode::kCold, 0.001);
  // CUPTI strips most of the event overhead, not just a little.
  EXPECT_LT(r.stats.median_ms, r.event_median_ms - 0.001);
}

TEST_F(TimerTest, SpinKernelOf100usMeasuredWithin2Percent) {
  ExpectSpin(timer(), gpu_->spin, 0.100, TimingMode::kCold, 0.0);
}

TEST_F(TimerTest, SpinKernelOf1msMeasuredWithin2Percent) {
  ExpectSpin(timer(), gpu_->spin, 1.0, TimingMode::kCold, 0.0);
}

TEST_F(TimerTest, HotModeBackToBackLaunchesAreMatched) {
  ExpectSpin(timer(), gpu_->spin, 0.010, TimingMode::kHot, 0.001);
}

// Kernel records of graph replays come out as CONCURRENT_KERNEL records too.
TEST_F(TimerTest, GraphModeTimesGraphReplays) {
  ExpectSpin(timer(), gpu_->spin, 0.100, TimingMode::kGraph, 0.0);
}

// The target: the median of a 10 us kernel moves by at most 1 %
// between measurements.
TEST_F(TimerTest, CuptiMedianIsStableRunToRun) {
  std::vector<double> medians;
  for (int i = 0; i < 3; ++i) {
    auto r = timer().Measure(SpinLaunch(gpu_->spin, 10'000), TimingOptions{});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->source, "cupti") << r->notes;
    medians.push_back(r->stats.median_ms);
  }
  const double lo = *std::min_element(medians.begin(), medians.end());
  const double hi = *std::max_element(medians.begin(), medians.end());
  std::printf("[ fidelity ] spin 0.010 ms, 3 runs: %.6f %.6f %.6f ms, spread %.2f %%\n", medians[0], medians[1],
              medians[2], 100 * (hi - lo) / Median(medians));
  EXPECT_LE((hi - lo) / Median(medians), 0.01);
}

// A launch of two kernels (20 us then 30 us spin): one sample spans from the
// first kernel's start to the second's end.
TEST_F(TimerTest, LaunchOfTwoKernelsIsOneSample) {
  CUfunction spin = gpu_->spin;
  LaunchFn two = [spin](CUstream s) -> Status {
    unsigned long long a = 20'000, b = 30'000;
    void* aa[] = {&a};
    void* bb[] = {&b};
    ASSAY_RETURN_IF_ERROR(LaunchChecked(spin, 1, 1, s, aa));
    return LaunchChecked(spin, 1, 1, s, bb);
  };
  auto r = timer().Measure(two, TimingOptions{.mode = TimingMode::kHot});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::printf("two kernels: %s median %.6f ms, event median %.6f ms, notes: %s\n", r->source.c_str(),
              r->stats.median_ms, r->event_median_ms, r->notes.c_str());
  EXPECT_EQ(r->source, "cupti") << r->notes;
  EXPECT_EQ(r->kernels_per_sample, 2);
  // 50 us of spinning within 2 %, plus up to 3 us for two kernels' start and
  // finish and the launch gap between them.
  EXPECT_GE(r->stats.median_ms, 0.050 * 0.98);
  EXPECT_LE(r->stats.median_ms, 0.050 * 1.02 + 0.003);
  EXPECT_LT(r->stats.median_ms, r->event_median_ms);
}

// cupti=false: CUDA events, whose median minus the event overhead is the
// spin's length within 2 % + 0.5 us (the criterion before CUPTI samples).
TEST_F(TimerTest, EventsOnRequest) {
  TimingOptions o;
  o.cupti = false;
  auto r = timer().Measure(SpinLaunch(gpu_->spin, 10'000), o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->source, "cuda_event");
  EXPECT_EQ(r->kernels_per_sample, 0);
  EXPECT_DOUBLE_EQ(r->stats.median_ms, r->event_median_ms);
  EXPECT_NEAR(r->stats.median_ms - r->event_overhead_ms, 0.010, 0.02 * 0.010 + 0.0005);
  EXPECT_EQ(r->notes.find("CUPTI"), std::string::npos) << r->notes;
}

TEST_F(TimerTest, ColdModeIsSlowerThanHotForL2SizedReread) {
  // Half the L2: fits in L2 when hot, comes from DRAM after a flush.
  const unsigned long long n = static_cast<unsigned long long>(gpu_->info.l2_bytes / 2 / 16);
  auto buf = DeviceBuffer::Create(n * 16);
  ASSERT_TRUE(buf.ok()) << buf.status().ToString();
  ASSERT_EQ(Cu().cuMemsetD32(buf->get(), 0x3f800000u, n * 4), CUDA_SUCCESS);  // 1.0f
  auto out = DeviceBuffer::Create(64);
  ASSERT_TRUE(out.ok());
  CUdeviceptr p = buf->get(), o = out->get();
  CUfunction f = gpu_->read_sum;
  const unsigned grid = static_cast<unsigned>(gpu_->info.sm_count * 4);
  LaunchFn launch = [&](CUstream s) {
    void* args[] = {&p, const_cast<unsigned long long*>(&n), &o};
    return LaunchChecked(f, grid, 256, s, args);
  };
  TimingOptions cold, hot;
  hot.mode = TimingMode::kHot;
  auto c = timer().Measure(launch, cold);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  auto h = timer().Measure(launch, hot);
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  std::printf("read %llu bytes: cold %.5f ms, hot %.5f ms\n", n * 16, c->stats.median_ms, h->stats.median_ms);
  EXPECT_GT(c->stats.median_ms, 1.15 * h->stats.median_ms);
  EXPECT_EQ(c->l2_flush_bytes, 2.0 * static_cast<double>(gpu_->info.l2_bytes));
  EXPECT_EQ(h->l2_flush_bytes, 0.0);
}

TEST_F(TimerTest, AdaptiveStoppingConvergesOnStableKernel) {
  TimingOptions o;
  o.min_samples = 10;
  o.max_samples = 1000;
  auto r = timer().Measure(SpinLaunch(gpu_->spin, 50'000), o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->stats.converged) << "noise " << r->stats.noise << " notes " << r->notes;
  EXPECT_EQ(r->stop_reason, "converged");
  EXPECT_LE(r->stats.noise, o.noise_target);
  EXPECT_GE(r->stats.samples, o.min_samples);
  EXPECT_LT(static_cast<int>(r->samples_ms.size()), o.max_samples);
  EXPECT_GE(r->warmup_runs, 1);
  EXPECT_EQ(r->samples_ms.size(), r->throttled.size());
}

TEST_F(TimerTest, ImpossibleTargetWithTinyBudgetDoesNotConverge) {
  TimingOptions o;
  o.min_samples = 5;
  o.noise_target = 1e-7;
  o.time_budget_ms = 30;
  o.warmup_ms = 5;
  auto r = timer().Measure(SpinLaunch(gpu_->spin, 100'000), o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(r->stats.converged);
  EXPECT_EQ(r->stop_reason, "time_budget_spent");
  EXPECT_GE(r->stats.samples, 5);
  EXPECT_NE(r->notes.find("noise target not met"), std::string::npos) << r->notes;
  nlohmann::json j = ToJson(*r);
  EXPECT_EQ(j["converged"], false);
  EXPECT_EQ(j["samples_ms"].size(), r->samples_ms.size());
  EXPECT_EQ(j["mode"], "cold");
}

TEST_F(TimerTest, FailingLaunchReturnsItsStatusAndLeavesStreamIdle) {
  int calls = 0;
  LaunchFn spin = SpinLaunch(gpu_->spin, 20'000);
  auto r = timer().Measure(
      [&](CUstream s) -> Status {
        if (++calls == 15) return Status::LaunchError("launch 15 refused");
        return spin(s);
      },
      TimingOptions{.warmup_ms = 0});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().error_class(), ErrorClass::kLaunchError);
  EXPECT_EQ(r.status().message(), "launch 15 refused");
  // The blocking kernel was released and the stream drained before returning.
  EXPECT_EQ(Cu().cuStreamQuery(timer().stream()), CUDA_SUCCESS);
  // And the timer still works afterwards.
  auto again = timer().Measure(spin, TimingOptions{.mode = TimingMode::kHot, .min_samples = 5});
  EXPECT_TRUE(again.ok()) << again.status().ToString();
}

TEST_F(TimerTest, BadOptionsAreRejected) {
  auto r = timer().Measure(SpinLaunch(gpu_->spin, 1000), TimingOptions{.min_samples = 10, .max_samples = 5});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().error_class(), ErrorClass::kRejected);
}

TEST_F(TimerTest, TelemetryIsReadAroundTheMeasurement) {
  auto r = timer().Measure(SpinLaunch(gpu_->spin, 10'000), TimingOptions{.mode = TimingMode::kHot});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_TRUE(r->has_telemetry) << r->notes;
  EXPECT_TRUE(r->telemetry_before.sm_clock_mhz.has_value());
  EXPECT_GE(r->telemetry_after.at_ms, r->telemetry_before.at_ms);
  nlohmann::json j = ToJson(*r);
  EXPECT_TRUE(j["telemetry"]["before"].contains("sm_clock_mhz"));
  std::printf("telemetry after: %s\n", j["telemetry"]["after"].dump().c_str());
}

TEST_F(TimerTest, DevicePeaksArePlausible) {
  auto p = MeasureDevicePeaks(gpu_->info);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  std::printf("%s: DRAM %.3f TB/s, FP32 %.2f TFLOP/s\n", gpu_->info.name.c_str(), p->dram_bytes_per_s / 1e12,
              p->fp32_flops_per_s / 1e12);
  const std::string& name = gpu_->info.name;
  if (name.find("H100") != std::string::npos) {
    EXPECT_GT(p->dram_bytes_per_s, 2.0e12);
    EXPECT_LT(p->dram_bytes_per_s, 3.5e12);
    EXPECT_GT(p->fp32_flops_per_s, 30e12);
  } else if (name.find("H200") != std::string::npos) {
    EXPECT_GT(p->dram_bytes_per_s, 3.0e12);
    EXPECT_LT(p->dram_bytes_per_s, 5.0e12);
    EXPECT_GT(p->fp32_flops_per_s, 30e12);
  } else {
    EXPECT_GT(p->dram_bytes_per_s, 1e10);
    EXPECT_GT(p->fp32_flops_per_s, 1e11);
  }
}

// Without libcupti the timer still works, on events, and says why. In a child
// process (see the file comment): the process's CUPTI tracer is created once,
// so the missing library must be named before anything creates a timer.
TEST(TimerFallbackTest, WithoutLibcuptiTimesWithEvents) {
  GpuInventory inv = ListGpus();
  if (inv.gpus.empty()) {
    const char* expect = std::getenv("ASSAY_EXPECT_GPU");
    if (expect && std::string(expect) == "1") FAIL() << "ASSAY_EXPECT_GPU=1 but no GPU";
    GTEST_SKIP() << "no GPU";
  }
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        ::setenv("ASSAY_CUPTI_LIB", "/nonexistent/libcupti.so.13", 1);
        auto ctx = PrimaryContext::Create(inv.gpus[0].index);
        if (!ctx.ok()) std::_Exit(2);
        auto timer = KernelTimer::Create(inv.gpus[0]);
        auto module =
            CompileAndLoad(inv.gpus[0], kReferenceKernelsSource, DefaultMeasureCacheDir(), "reference_kernels.cu");
        if (!timer.ok() || !module.ok()) std::_Exit(2);
        auto r = (*timer)->Measure(SpinLaunch(*module->Function("assay_spin"), 10'000), TimingOptions{});
        const bool ok = r.ok() && r->source == "cuda_event" && r->stats.median_ms == r->event_median_ms;
        std::fprintf(stderr, "source %s notes: %s\n", r.ok() ? r->source.c_str() : "-",
                     r.ok() ? r->notes.c_str() : r.status().ToString().c_str());
        std::fflush(stderr);
        std::_Exit(ok ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "source cuda_event notes: .*CUPTI unavailable .*/nonexistent/libcupti.so.13");
}

// Runs in a child process (see the file comment). The child exits 0 only when
// Measure returned runtime_error naming CUDA_ERROR_ILLEGAL_ADDRESS.
TEST_F(TimerTest, FaultingKernelIsRuntimeErrorNamingIllegalAddress) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        CUdeviceptr bad = 0xdead0000ull;
        CUfunction f = gpu_->fault;
        auto r = timer().Measure(
            [&](CUstream s) {
              void* args[] = {&bad};
              return LaunchChecked(f, 1, 32, s, args);
            },
            TimingOptions{});
        const bool ok = !r.ok() && r.status().error_class() == ErrorClass::kRuntimeError;
        std::fprintf(stderr, "status: %s\n", r.status().ToString().c_str());
        std::fflush(stderr);
        std::_Exit(ok ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "runtime_error: .*CUDA_ERROR_ILLEGAL_ADDRESS");
}

}  // namespace
}  // namespace assay

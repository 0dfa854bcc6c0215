// Kernel timing by the measurement rules of PRODUCT.md: per-sample GPU
// durations from CUPTI activity records (CUDA events around each sample as the
// cross-check and the fallback) on the worker's own stream, time-based warm-up, cold mode (L2 flushed with a buffer
// sized from the device, persisting L2 reset) with launches queued behind a
// blocking kernel so host launch latency stays out of the samples, hot and
// CUDA-graph modes, adaptive stopping, full statistics, raw samples, NVML
// clocks and throttle reasons around the measurement.
//
// Thread-safety: a KernelTimer is used by one thread (the worker's job thread).
// REQUIRES: the device's primary context is current on that thread.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/status.h"
#include "gpu/devices.h"
#include "gpu/nvml.h"
#include "measure/stats.h"  // TimingStats, the statistics and stopping rule

namespace assay {

enum class TimingMode { kCold, kHot, kGraph };
// Wire names "cold" | "hot" | "graph" (stable: part of the result schema).
std::string_view TimingModeName(TimingMode m);
// Inverse of TimingModeName; Rejected for anything else.
Result<TimingMode> ParseTimingMode(std::string_view name);

struct TimingOptions {
  TimingMode mode = TimingMode::kCold;
  int min_samples = 10;
  int max_samples = 1000;
  double noise_target = 0.005;      // relative noise at which sampling stops
  double time_budget_ms = 2000;     // wall time for sampling (after warm-up)
  double warmup_ms = 100;           // time-based warm-up
  // kGraph only: flush L2 before each graph launch (outside the graph). Cold
  // is the default for graphs too; false gives hot graph replays.
  bool graph_cold = true;
  // Take each sample's time from CUPTI's kernel records (first kernel start to
  // last kernel end of the launch) when CUPTI can be used; false: CUDA events.
  bool cupti = true;
};

struct TimingResult {
  TimingMode mode = TimingMode::kCold;
  TimingStats stats;
  std::vector<double> samples_ms;   // raw, in order taken (throttled ones included)
  std::vector<bool> throttled;      // per sample: NVML reported a throttle reason while it ran
  int warmup_runs = 0;
  double warmup_ms = 0;
  double l2_flush_bytes = 0;
  GpuTelemetry telemetry_before, telemetry_after;  // NVML around the measurement
  std::string notes;                // e.g. "3 throttled samples dropped"
  // Additions (2026-11-21):
  bool has_telemetry = false;       // NVML answered; telemetry_* are meaningful
  std::string stop_reason;          // StopDecisionName: converged | time_budget_spent | max_samples_reached
  int batches = 0;                  // batches queued behind the blocking kernel
  int blocking_timeouts = 0;        // batches whose blocking kernel gave up waiting (see docs)
  int throttled_samples = 0;        // count of true in `throttled`
  double sampling_ms = 0;           // wall time of the sampling phase
  // Median event-to-event time of an empty kernel on this timer's stream (hot,
  // measured once per KernelTimer) [ms]: the fixed cost of event timing that
  // every sample includes (~3 us on an H200). Reported, never subtracted.
  double event_overhead_ms = 0;
  // Additions (2026-11-22): where samples_ms and the statistics come from.
  std::string source = "cuda_event";  // "cupti" | "cuda_event" (fallback reason in notes)
  // Median of the event-timed samples (same samples used as the statistics),
  // the cross-check of a CUPTI median [ms]; equals stats.median_ms for events.
  double event_median_ms = 0;
  int kernels_per_sample = 0;  // CUPTI: kernels one launch runs; 0 for events
  // The CUPTI median was well below event median - event overhead: work the
  // kernel records do not cover; the events were reported instead (source
  // "cuda_event"), see docs/measurement.md.
  bool clocks_disagree = false;
};

// Enqueues exactly one execution of the code under test on `stream`.
using LaunchFn = std::function<Status(CUstream stream)>;

class KernelTimer {
 public:
  // Allocates the L2 flush buffer (from gpu.l2_bytes) and the blocking-kernel flag.
  // The helper kernels are compiled with NVRTC into a cache under
  // $TMPDIR/assay-measure-<uid>; the overload names the cache directory.
  // Failures are infra_error (ours, not the user's).
  static Result<std::unique_ptr<KernelTimer>> Create(const GpuInfo& gpu);
  static Result<std::unique_ptr<KernelTimer>> Create(const GpuInfo& gpu,
                                                     const std::filesystem::path& cache_dir);
  virtual ~KernelTimer() = default;
  virtual CUstream stream() const = 0;
  // Measures `launch`. A failing launch ends the measurement with its Status;
  // a CUDA error on the stream (illegal address, trap, ...) is runtime_error
  // naming the CUDA error; bad options are rejected. On every error path the
  // stream is drained (nothing left pending) before returning.
  // `launch` must only enqueue work on the stream it is given (no synchronising
  // calls: it runs while the stream is held by the blocking kernel, and in
  // graph mode under stream capture).
  virtual Result<TimingResult> Measure(const LaunchFn& launch, const TimingOptions& options) = 0;
};

nlohmann::json ToJson(const TimingResult& r);

// Device peaks measured once per worker (DRAM bandwidth with a copy kernel,
// FP32 FMA throughput), for "percent of peak" figures.
struct DevicePeaks {
  double dram_bytes_per_s = 0;
  double fp32_flops_per_s = 0;
};
// REQUIRES: the device's primary context is current. Takes about a second.
Result<DevicePeaks> MeasureDevicePeaks(const GpuInfo& gpu);
Result<DevicePeaks> MeasureDevicePeaks(const GpuInfo& gpu, const std::filesystem::path& cache_dir);
nlohmann::json ToJson(const DevicePeaks& p);

}  // namespace assay

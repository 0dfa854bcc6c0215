#include "engine/engine_timing.h"

#include "gpu/cuda_driver.h"

namespace assay {
namespace {

TimingOptions OptionsFrom(const TimingSpec& t) {
  TimingOptions o;
  switch (t.mode) {
    case TimingSpec::Mode::kCold: o.mode = TimingMode::kCold; break;
    case TimingSpec::Mode::kHot: o.mode = TimingMode::kHot; break;
    case TimingSpec::Mode::kGraph: o.mode = TimingMode::kGraph; break;
  }
  o.min_samples = t.min_samples;
  o.max_samples = t.max_samples;
  o.noise_target = t.noise_target;
  o.time_budget_ms = static_cast<double>(t.time_budget_ms);
  o.warmup_ms = static_cast<double>(t.warmup_ms);
  return o;
}

}  // namespace

uint64_t DefaultTrafficBytes(const JobPlan& plan) {
  uint64_t bytes = 0;
  for (const TensorPlan& t : plan.tensors)
    bytes += plan.arg(t).role == ArgRole::kInOut ? 2 * t.bytes : t.bytes;
  return bytes;
}

TimingReport TimeKernel(KernelTimer& timer, const KernelLaunch& launch, const JobPlan& plan, const TimingSpec& spec,
                        const std::optional<DevicePeaks>& peaks, const GpuInfo& gpu, bool* context_lost) {
  TimingReport rep;
  const TimingOptions options = OptionsFrom(spec);
  auto measured = timer.Measure([&](CUstream s) { return launch.Launch(s, context_lost); }, options);
  if (!measured.ok()) {
    rep.status = measured.status();
    // A kernel that broke the context during timing: find out for sure.
    if (CUresult r = (**CudaDriver()).cuCtxSynchronize(); r != CUDA_SUCCESS) {
      Status s = KernelFailure(r, launch.who(), "cuCtxSynchronize (during timing)", context_lost);
      if (rep.status.error_class() != ErrorClass::kLaunchError) rep.status = s;
    }
    rep.status = Status(rep.status.error_class(), "timing: " + rep.status.message());
    return rep;
  }
  const TimingResult& r = *measured;
  rep.timing = ToJson(r);
  if (r.clocks_disagree) {
    rep.warnings.insert(
        "timing: the kernel's GPU records cover less time than the events around it (work outside the recorded "
        "kernels); the event time is reported, see timing.notes");
  }

  const double seconds = r.stats.median_ms / 1e3;
  const bool bytes_given = spec.bytes.has_value();
  const double bytes = bytes_given ? *spec.bytes : static_cast<double>(DefaultTrafficBytes(plan));
  nlohmann::json& t = rep.throughput;
  // time_ms is the timing median: CUPTI's GPU time when timing.source is "cupti".
  t = {{"bytes", bytes},
       {"bytes_source", bytes_given ? "spec" : "tensors"},
       {"time_ms", r.stats.median_ms},
       {"time_source", r.source}};
  if (seconds > 0) t["bandwidth_bytes_per_s"] = bytes / seconds;
  if (spec.flops) {
    t["flops"] = *spec.flops;
    if (seconds > 0) t["flops_per_s"] = *spec.flops / seconds;
  }
  if (peaks) {
    t["peak_dram_bytes_per_s"] = peaks->dram_bytes_per_s;
    t["peak_fp32_flops_per_s"] = peaks->fp32_flops_per_s;
    if (seconds > 0 && peaks->dram_bytes_per_s > 0)
      t["bandwidth_pct_of_peak"] = 100.0 * bytes / seconds / peaks->dram_bytes_per_s;
    if (seconds > 0 && spec.flops && peaks->fp32_flops_per_s > 0)
      t["flops_pct_of_peak_fp32"] = 100.0 * *spec.flops / seconds / peaks->fp32_flops_per_s;
    // Faster than DRAM allows: only meaningful when the data cannot sit in L2
    // between launches (cold mode flushes it; or it is larger than L2).
    const bool dram_bound_expected =
        options.mode == TimingMode::kCold || bytes > static_cast<double>(gpu.l2_bytes);
    if (peaks->dram_bytes_per_s > 0 && bytes > 0 && dram_bound_expected) {
      const double floor_ms = bytes / peaks->dram_bytes_per_s * 1e3 * 0.9;
      t["bandwidth_floor_ms"] = floor_ms;
      if (r.stats.median_ms < floor_ms) {
        rep.warnings.insert("faster than the memory-bandwidth floor: median " + std::to_string(r.stats.median_ms) +
                            " ms for " + std::to_string(static_cast<int64_t>(bytes)) + " bytes, floor " +
                            std::to_string(floor_ms) + " ms (90% of bytes / measured peak bandwidth)");
        t["suspicious"] = true;
      }
    }
  }
  return rep;
}

}  // namespace assay

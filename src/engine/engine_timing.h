// Timing of a candidate that passed its correctness trials: KernelTimer
// (measure/timer.h) with options from the spec's timing block, then
// throughput against the device's measured peaks and the suspicious-speedup
// check (docs/correctness.md, "Timing and throughput").
// Thread-safety: not thread-safe. REQUIRES: the engine's context is current.
#pragma once

#include <optional>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "engine/job_plan.h"
#include "engine/kernel_launch.h"
#include "gpu/devices.h"
#include "measure/timer.h"

namespace assay {

struct TimingReport {
  Status status;
  nlohmann::json timing;      // ToJson(TimingResult)
  nlohmann::json throughput;  // bytes, flops, rates, percent of peak
  std::set<std::string> warnings;
};

// The bytes a launch moves when the spec gives none: each `in` tensor read
// once, each `out` written once, each `inout` read and written.
uint64_t DefaultTrafficBytes(const JobPlan& plan);

TimingReport TimeKernel(KernelTimer& timer, const KernelLaunch& launch, const JobPlan& plan, const TimingSpec& spec,
                        const std::optional<DevicePeaks>& peaks, const GpuInfo& gpu, bool* context_lost);

}  // namespace assay

// The `timing` section of a result (docs/measurement.md documents every field).
#include <nlohmann/json.hpp>

#include "measure/timer.h"

namespace assay {

nlohmann::json ToJson(const TimingResult& r) {
  const TimingStats& s = r.stats;
  // Infinity (fewer than 2 samples) has no JSON form: null.
  auto finite = [](double v) -> nlohmann::json { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); };
  nlohmann::json throttled_idx = nlohmann::json::array();
  for (size_t i = 0; i < r.throttled.size(); ++i)
    if (r.throttled[i]) throttled_idx.push_back(i);
  nlohmann::json j = {
      {"mode", std::string(TimingModeName(r.mode))},
      {"min_ms", s.min_ms},
      {"max_ms", s.max_ms},
      {"mean_ms", s.mean_ms},
      {"median_ms", s.median_ms},
      {"std_ms", s.std_ms},
      {"p25_ms", s.p25_ms},
      {"p75_ms", s.p75_ms},
      {"noise", finite(s.noise)},
      {"spread", finite(s.spread)},
      {"samples", s.samples},
      {"converged", s.converged},
      {"stop_reason", r.stop_reason},
      {"samples_ms", r.samples_ms},
      {"samples_taken", r.samples_ms.size()},
      {"throttled", r.throttled_samples},
      {"throttled_indices", throttled_idx},
      {"warmup", {{"runs", r.warmup_runs}, {"ms", r.warmup_ms}}},
      {"batches", r.batches},
      {"blocking_timeouts", r.blocking_timeouts},
      {"sampling_ms", r.sampling_ms},
      {"event_overhead_ms", r.event_overhead_ms},
      {"source", r.source},
      {"event_median_ms", r.event_median_ms},
      {"kernels_per_sample", r.kernels_per_sample},
      {"clocks_disagree", r.clocks_disagree},
      {"l2_flush_bytes", static_cast<int64_t>(r.l2_flush_bytes)},
      {"telemetry",
       {{"before", r.has_telemetry ? ToJson(r.telemetry_before) : nlohmann::json()},
        {"after", r.has_telemetry ? ToJson(r.telemetry_after) : nlohmann::json()}}},
      {"notes", r.notes},
  };
  return j;
}

nlohmann::json ToJson(const DevicePeaks& p) {
  return {{"dram_bytes_per_s", p.dram_bytes_per_s}, {"fp32_flops_per_s", p.fp32_flops_per_s}};
}

}  // namespace assay

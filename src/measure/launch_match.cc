#include "measure/launch_match.h"

#include <algorithm>

namespace assay {
namespace {

bool Excluded(const std::string& name, std::span<const std::string> exclude) {
  return std::find(exclude.begin(), exclude.end(), name) != exclude.end();
}

}  // namespace

std::vector<std::string> LaunchSignature(std::span<const KernelSpan> records, std::span<const std::string> exclude) {
  std::vector<std::string> names;
  for (const KernelSpan& k : records) {
    if (!Excluded(k.name, exclude)) names.push_back(k.name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

Result<std::vector<double>> MatchBatch(std::vector<KernelSpan> records, std::span<const std::string> signature,
                                       std::span<const std::string> exclude, std::span<const double> event_ms) {
  const size_t samples = event_ms.size();
  const size_t k = signature.size();
  if (k == 0) return Status::Infra("no kernel in one launch");
  std::erase_if(records, [&](const KernelSpan& r) { return Excluded(r.name, exclude); });
  for (const KernelSpan& r : records) {
    if (r.start_ns == 0 || r.end_ns < r.start_ns) return Status::Infra("a kernel record has no valid timestamps");
  }
  if (records.size() != samples * k) {
    return Status::Infra(std::to_string(records.size()) + " kernel records for " + std::to_string(samples) +
                         " samples of " + std::to_string(k) + " kernel(s)");
  }
  std::stable_sort(records.begin(), records.end(),
                   [](const KernelSpan& a, const KernelSpan& b) { return a.start_ns < b.start_ns; });
  std::vector<double> out;
  out.reserve(samples);
  size_t over_events = 0;
  uint64_t prev_end = 0;
  std::vector<std::string> names(k);
  for (size_t i = 0; i < samples; ++i) {
    uint64_t first = UINT64_MAX, last = 0;
    for (size_t j = 0; j < k; ++j) {
      const KernelSpan& r = records[i * k + j];
      names[j] = r.name;
      first = std::min(first, r.start_ns);
      last = std::max(last, r.end_ns);
    }
    std::sort(names.begin(), names.end());
    if (!std::equal(names.begin(), names.end(), signature.begin(), signature.end())) {
      return Status::Infra("sample " + std::to_string(i) + " ran other kernels than the launch (" + names.front() +
                           " ...)");
    }
    if (first < prev_end) return Status::Infra("sample " + std::to_string(i) + " overlaps the sample before it");
    prev_end = last;
    const double ms = static_cast<double>(last - first) / 1e6;
    if (ms > event_ms[i] * (1 + kCuptiOverEventSlack) + kCuptiOverEventSlackMs) ++over_events;
    out.push_back(ms);
  }
  if (over_events * 10 > samples) {
    return Status::Infra(std::to_string(over_events) + " of " + std::to_string(samples) +
                         " samples took longer by CUPTI than between their events");
  }
  return out;
}

bool ClocksDisagree(double cupti_median_ms, double event_median_ms, double event_overhead_ms) {
  return cupti_median_ms < event_median_ms - event_overhead_ms - std::max(0.001, 0.1 * event_median_ms);
}

}  // namespace assay

#include "measure/stats.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace assay {

double SortedQuantile(std::span<const double> sorted, double q) {
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

double Median(std::span<const double> samples) {
  if (samples.empty()) return 0;
  std::vector<double> v(samples.begin(), samples.end());
  std::sort(v.begin(), v.end());
  return SortedQuantile(v, 0.5);
}

namespace {

// Robust sigma of sorted samples, floored by the event timer's quantisation.
double RobustSigma(std::span<const double> sorted) {
  const double iqr = SortedQuantile(sorted, 0.75) - SortedQuantile(sorted, 0.25);
  return std::max(iqr / 1.349, kEventResolutionMs / std::sqrt(12.0));
}

double NoiseOfSorted(std::span<const double> sorted) {
  const size_t n = sorted.size();
  if (n < 2) return std::numeric_limits<double>::infinity();
  const double median = SortedQuantile(sorted, 0.5);
  if (!(median > 0)) return std::numeric_limits<double>::infinity();
  return 1.2533 * RobustSigma(sorted) / (median * std::sqrt(static_cast<double>(n)));
}

}  // namespace

double RelativeNoise(std::span<const double> samples) {
  std::vector<double> v(samples.begin(), samples.end());
  std::sort(v.begin(), v.end());
  return NoiseOfSorted(v);
}

TimingStats ComputeStats(std::span<const double> samples) {
  TimingStats s;
  s.samples = static_cast<int>(samples.size());
  if (samples.empty()) return s;
  std::vector<double> v(samples.begin(), samples.end());
  std::sort(v.begin(), v.end());
  const double n = static_cast<double>(v.size());
  s.min_ms = v.front();
  s.max_ms = v.back();
  double sum = 0;
  for (double x : v) sum += x;
  s.mean_ms = sum / n;
  double ss = 0;
  for (double x : v) ss += (x - s.mean_ms) * (x - s.mean_ms);
  s.std_ms = v.size() > 1 ? std::sqrt(ss / (n - 1)) : 0;
  s.p25_ms = SortedQuantile(v, 0.25);
  s.median_ms = SortedQuantile(v, 0.5);
  s.p75_ms = SortedQuantile(v, 0.75);
  s.noise = NoiseOfSorted(v);
  s.spread = s.median_ms > 0 ? RobustSigma(v) / s.median_ms : 0;
  return s;
}

std::string_view StopDecisionName(StopDecision d) {
  switch (d) {
    case StopDecision::kContinue: return "continue";
    case StopDecision::kConverged: return "converged";
    case StopDecision::kBudgetSpent: return "time_budget_spent";
    case StopDecision::kMaxSamples: return "max_samples_reached";
  }
  return "?";
}

StopDecision DecideStop(const StopRule& rule, int used, int taken, double noise, double elapsed_ms) {
  if (used < rule.min_samples && taken < rule.max_samples) return StopDecision::kContinue;
  if (used >= rule.min_samples && noise <= rule.noise_target) return StopDecision::kConverged;
  if (taken >= rule.max_samples) return StopDecision::kMaxSamples;
  if (elapsed_ms >= rule.time_budget_ms) return StopDecision::kBudgetSpent;
  return StopDecision::kContinue;
}

int PlanBatch(const StopRule& rule, double per_sample_ms, int taken, double elapsed_ms) {
  const double per = std::max(per_sample_ms, 1e-4);  // 100 ns: guards a zero estimate
  int n = static_cast<int>(std::min(kBatchWorkMs / per, static_cast<double>(kMaxBatch)));
  const double left_ms = rule.time_budget_ms - elapsed_ms;
  n = std::min(n, static_cast<int>(std::max(left_ms, 0.0) / per));
  n = std::max(n, 1);
  n = std::max(n, std::min(rule.min_samples - taken, kMaxBatch));
  n = std::min(n, rule.max_samples - taken);
  return std::max(n, 1);
}

}  // namespace assay

// The pure arithmetic of kernel timing: summary statistics of a sample set,
// the relative-noise estimate, the adaptive stopping rule and the batch plan.
// No CUDA here, so all of it is tested on machines without a GPU
// (stats_test.cc). Definitions are documented in docs/measurement.md.
//
// Thread-safety: all functions are pure and reentrant.
#pragma once

#include <span>
#include <string_view>

namespace assay {

struct TimingStats {
  double min_ms = 0, max_ms = 0, mean_ms = 0, median_ms = 0, std_ms = 0, p25_ms = 0, p75_ms = 0;
  double noise = 0;                 // relative noise (definition in docs/measurement.md)
  int samples = 0;
  bool converged = false;           // noise <= target before the budget ran out
  // Robust relative spread of one sample: max(IQR/1.349, q/sqrt(12)) / median,
  // q = kEventResolutionMs. Unlike `noise` it does not shrink with more samples.
  double spread = 0;
};

// cuEventElapsedTime's documented resolution ("around 0.5 microseconds") [ms].
// A sample set whose IQR is 0 because of this quantisation is not noise-free:
// the quantisation error (q/sqrt(12)) is the floor of the spread estimate.
inline constexpr double kEventResolutionMs = 0.0005;

// Quantile with linear interpolation between order statistics (numpy's default,
// Hyndman-Fan type 7). REQUIRES: `sorted` ascending, non-empty; 0 <= q <= 1.
double SortedQuantile(std::span<const double> sorted, double q);

// Median of an unsorted sample set (0 for an empty one).
double Median(std::span<const double> samples);

// Summary statistics of `samples` (any order). std is the sample standard
// deviation (n-1); noise is RelativeNoise. converged is left false.
TimingStats ComputeStats(std::span<const double> samples);

// Relative standard error of the median, estimated robustly:
//   sigma = max(IQR / 1.349, kEventResolutionMs / sqrt(12))
//   noise = 1.2533 * sigma / (median * sqrt(n))
// 1.349 turns a normal distribution's IQR into its sigma; 1.2533 (sqrt(pi/2))
// is the asymptotic ratio of the median's standard error to the mean's. A few
// outliers move neither the IQR nor the median, so they cannot stop or prolong
// sampling much. Infinity for n < 2 or a non-positive median.
double RelativeNoise(std::span<const double> samples);

// When sampling stops (the adaptive rule of PRODUCT.md).
struct StopRule {
  int min_samples = 10;
  int max_samples = 1000;
  double noise_target = 0.005;
  double time_budget_ms = 2000;
};

enum class StopDecision { kContinue, kConverged, kBudgetSpent, kMaxSamples };
std::string_view StopDecisionName(StopDecision d);

// After each batch: `used` samples the statistics are computed on (the
// non-throttled ones when at least min_samples of them remain, else all),
// their `noise`, `taken` samples in all, sampling wall time `elapsed_ms`.
// min_samples always comes first (even past the budget); then the noise
// target; then max_samples (counted on `taken`) and the budget.
StopDecision DecideStop(const StopRule& rule, int used, int taken, double noise, double elapsed_ms);

// Samples to queue in the next batch behind one blocking kernel: enough for
// about kBatchWorkMs of device work, at most kMaxBatch (the launch queue holds
// ~1024 entries and a cold sample takes 4: flush, event, launch, event), at
// most what max_samples and the remaining budget allow, at least 1, and at
// least what is still missing to min_samples (capped by kMaxBatch).
// `per_sample_ms` is the warm-up's estimate of one sample's device time
// (flush included in cold mode); `taken` counts every sample taken so far.
inline constexpr int kMaxBatch = 100;
inline constexpr double kBatchWorkMs = 10.0;
int PlanBatch(const StopRule& rule, double per_sample_ms, int taken, double elapsed_ms);

}  // namespace assay

// The statistics and stopping rule of the timer, on known vectors (no GPU).
#include "measure/stats.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace assay {
namespace {

TEST(StatsTest, QuantilesInterpolateLikeNumpy) {
  const std::vector<double> v = {1, 2, 3, 4};
  // numpy.percentile([1,2,3,4], [25,50,75]) == [1.75, 2.5, 3.25]
  EXPECT_DOUBLE_EQ(SortedQuantile(v, 0.25), 1.75);
  EXPECT_DOUBLE_EQ(SortedQuantile(v, 0.5), 2.5);
  EXPECT_DOUBLE_EQ(SortedQuantile(v, 0.75), 3.25);
  EXPECT_DOUBLE_EQ(SortedQuantile(v, 0.0), 1);
  EXPECT_DOUBLE_EQ(SortedQuantile(v, 1.0), 4);
}

TEST(StatsTest, MedianOfUnsortedOddAndEvenSets) {
  EXPECT_DOUBLE_EQ(Median(std::vector<double>{5, 1, 3}), 3);
  EXPECT_DOUBLE_EQ(Median(std::vector<double>{4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(Median(std::vector<double>{}), 0);
}

TEST(StatsTest, ComputeStatsOnKnownVector) {
  const std::vector<double> v = {0.5, 0.1, 0.4, 0.2, 0.3};
  TimingStats s = ComputeStats(v);
  EXPECT_EQ(s.samples, 5);
  EXPECT_DOUBLE_EQ(s.min_ms, 0.1);
  EXPECT_DOUBLE_EQ(s.max_ms, 0.5);
  EXPECT_NEAR(s.mean_ms, 0.3, 1e-12);
  EXPECT_NEAR(s.median_ms, 0.3, 1e-12);
  EXPECT_NEAR(s.p25_ms, 0.2, 1e-12);
  EXPECT_NEAR(s.p75_ms, 0.4, 1e-12);
  EXPECT_NEAR(s.std_ms, std::sqrt(0.025), 1e-12);  // sample std (n-1)
  // IQR 0.2 -> sigma 0.2/1.349; noise = 1.2533 * sigma / (0.3 * sqrt(5))
  EXPECT_NEAR(s.noise, 1.2533 * (0.2 / 1.349) / (0.3 * std::sqrt(5.0)), 1e-12);
  EXPECT_NEAR(s.spread, (0.2 / 1.349) / 0.3, 1e-12);
  EXPECT_FALSE(s.converged);
}

TEST(StatsTest, NoiseShrinksWithSquareRootOfSampleCount) {
  std::vector<double> v;
  for (int i = 0; i < 100; ++i) v.push_back(1.0 + 0.01 * (i % 10));
  std::vector<double> v4;
  for (int k = 0; k < 4; ++k) v4.insert(v4.end(), v.begin(), v.end());
  EXPECT_NEAR(RelativeNoise(v4), RelativeNoise(v) / 2, 1e-9);
}

TEST(StatsTest, NoiseIgnoresAFewOutliers) {
  std::vector<double> v;
  for (int i = 0; i < 100; ++i) v.push_back(1.0 + 0.001 * (i % 10));
  const double clean = RelativeNoise(v);
  v[3] = 50.0;  // e.g. a preempted sample
  v[77] = 80.0;
  EXPECT_LT(RelativeNoise(v), clean * 1.1);
  // ... whereas the plain coefficient of variation explodes.
  TimingStats s = ComputeStats(v);
  EXPECT_GT(s.std_ms / s.mean_ms, 1.0);
}

TEST(StatsTest, IdenticalSamplesAreFlooredByEventResolution) {
  const std::vector<double> v(16, 0.002);  // 2 us, all equal: quantised, not noise-free
  const double expected = 1.2533 * (kEventResolutionMs / std::sqrt(12.0)) / (0.002 * 4);
  EXPECT_NEAR(RelativeNoise(v), expected, 1e-12);
  EXPECT_GT(RelativeNoise(v), 0.005);
}

TEST(StatsTest, NoiseIsInfiniteWithoutEnoughData) {
  EXPECT_TRUE(std::isinf(RelativeNoise(std::vector<double>{1.0})));
  EXPECT_TRUE(std::isinf(RelativeNoise(std::vector<double>{0.0, 0.0, 0.0})));
}

TEST(StopRuleTest, MinSamplesComeFirstEvenPastTheBudget) {
  StopRule rule{.min_samples = 10, .max_samples = 100, .noise_target = 0.01, .time_budget_ms = 5};
  EXPECT_EQ(DecideStop(rule, 5, 5, 0.0, 1000), StopDecision::kContinue);
}

TEST(StopRuleTest, ConvergesWhenNoiseMeetsTarget) {
  StopRule rule{.min_samples = 10, .max_samples = 100, .noise_target = 0.01, .time_budget_ms = 1000};
  EXPECT_EQ(DecideStop(rule, 10, 10, 0.01, 1), StopDecision::kConverged);
  EXPECT_EQ(DecideStop(rule, 10, 10, 0.0101, 1), StopDecision::kContinue);
  // Met on the last allowed sample or after the budget: still converged.
  EXPECT_EQ(DecideStop(rule, 100, 100, 0.005, 5000), StopDecision::kConverged);
}

TEST(StopRuleTest, StopsAtBudgetOrMaxSamplesUnconverged) {
  StopRule rule{.min_samples = 10, .max_samples = 100, .noise_target = 0.01, .time_budget_ms = 1000};
  EXPECT_EQ(DecideStop(rule, 50, 50, 0.02, 1000), StopDecision::kBudgetSpent);
  EXPECT_EQ(DecideStop(rule, 100, 100, 0.02, 10), StopDecision::kMaxSamples);
  // Throttled samples dropped: 60 used of 100 taken still stops at max_samples.
  EXPECT_EQ(DecideStop(rule, 60, 100, 0.02, 10), StopDecision::kMaxSamples);
}

TEST(StopRuleTest, MaxSamplesEndsEvenBelowMinUsed) {
  // All samples throttled would fall back to all samples; but if only a few are
  // usable and max is reached, sampling must still end.
  StopRule rule{.min_samples = 10, .max_samples = 20, .noise_target = 0.01, .time_budget_ms = 1000};
  EXPECT_EQ(DecideStop(rule, 5, 20, 0.001, 10), StopDecision::kMaxSamples);
}

TEST(BatchPlanTest, SizesBatchToAboutTenMillisecondsOfWork) {
  StopRule rule{.min_samples = 10, .max_samples = 1000, .noise_target = 0.005, .time_budget_ms = 2000};
  EXPECT_EQ(PlanBatch(rule, 1.0, 20, 0), 10);        // 1 ms per sample
  EXPECT_EQ(PlanBatch(rule, 0.001, 20, 0), kMaxBatch);  // 1 us: capped by queue depth
  EXPECT_EQ(PlanBatch(rule, 50.0, 20, 0), 1);        // longer than a batch: one at a time
}

TEST(BatchPlanTest, ReachesMinSamplesAndRespectsMaxAndBudget) {
  StopRule rule{.min_samples = 30, .max_samples = 1000, .noise_target = 0.005, .time_budget_ms = 2000};
  EXPECT_EQ(PlanBatch(rule, 5.0, 0, 0), 30);          // min_samples in one batch
  EXPECT_EQ(PlanBatch(rule, 0.001, 995, 0), 5);       // max_samples left
  EXPECT_EQ(PlanBatch(rule, 1.0, 40, 1997), 3);       // 3 ms of budget left
  EXPECT_EQ(PlanBatch(rule, 1.0, 40, 2500), 1);       // budget gone: at least 1
  EXPECT_EQ(PlanBatch(rule, 0.0, 40, 0), kMaxBatch);  // zero estimate is guarded
}

}  // namespace
}  // namespace assay

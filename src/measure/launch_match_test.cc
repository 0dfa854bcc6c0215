// CUPTI record matching on synthetic records (no GPU): what KernelTimer does
// with the kernel records of one batch.
#include "measure/launch_match.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace assay {
namespace {

const std::vector<std::string> kExclude = {"assay_blocking_kernel", "assay_empty"};

KernelSpan K(const std::string& name, uint64_t start_ns, uint64_t end_ns, uint32_t corr = 0) {
  return {name, start_ns, end_ns, corr};
}

// A batch as the timer queues it: the blocking kernel, then per sample one
// launch of `_Z4spinv` of (10 + i) us, 5 us apart.
std::vector<KernelSpan> OneKernelBatch(int samples) {
  std::vector<KernelSpan> r = {K("assay_blocking_kernel", 1000, 900000)};
  uint64_t t = 1000000;
  for (int i = 0; i < samples; ++i) {
    r.push_back(K("_Z4spinv", t, t + 10000 + 1000 * i, 100 + i));
    t += 10000 + 1000 * i + 5000;
  }
  return r;
}

TEST(LaunchMatchTest, SignatureIsSortedAndSkipsHelpers) {
  std::vector<KernelSpan> r = {K("b", 1, 2), K("assay_blocking_kernel", 0, 9), K("a", 3, 4), K("b", 5, 6)};
  EXPECT_EQ(LaunchSignature(r, kExclude), (std::vector<std::string>{"a", "b", "b"}));
  EXPECT_TRUE(LaunchSignature({}, kExclude).empty());
}

TEST(LaunchMatchTest, OneKernelPerSampleGivesEachKernelsDuration) {
  std::vector<KernelSpan> r = OneKernelBatch(4);
  std::swap(r[1], r[3]);  // CUPTI's buffers need not be in start order
  const std::vector<std::string> sig = {"_Z4spinv"};
  const std::vector<double> events = {0.0133, 0.0143, 0.0153, 0.0163};
  auto m = MatchBatch(r, sig, kExclude, events);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ASSERT_EQ(m->size(), 4u);
  EXPECT_DOUBLE_EQ((*m)[0], 0.010);
  EXPECT_DOUBLE_EQ((*m)[1], 0.011);
  EXPECT_DOUBLE_EQ((*m)[3], 0.013);
}

TEST(LaunchMatchTest, SeveralKernelsPerSampleSpanFirstStartToLastEnd) {
  // A graph of two parallel branches: "x" and "y" start in either order.
  std::vector<KernelSpan> r = {K("assay_blocking_kernel", 10, 20),
                               K("x", 1000, 3000), K("y", 1100, 2500),   // sample 0: 2.0 us
                               K("y", 4000, 5000), K("x", 4200, 7000)};  // sample 1: 3.0 us
  const std::vector<std::string> sig = {"x", "y"};
  auto m = MatchBatch(r, sig, kExclude, std::vector<double>{0.005, 0.006});
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_DOUBLE_EQ((*m)[0], 0.002);
  EXPECT_DOUBLE_EQ((*m)[1], 0.003);
}

TEST(LaunchMatchTest, MissingOrExtraRecordsAreErrors) {
  const std::vector<std::string> sig = {"_Z4spinv"};
  std::vector<KernelSpan> r = OneKernelBatch(3);
  r.pop_back();
  auto missing = MatchBatch(r, sig, kExclude, std::vector<double>{1, 1, 1});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().error_class(), ErrorClass::kInfraError);
  EXPECT_NE(missing.status().message().find("2 kernel records for 3 samples"), std::string::npos)
      << missing.status().message();
  r = OneKernelBatch(3);
  r.push_back(K("memset_kernel", 9000000, 9000100));  // an unexpected kernel
  EXPECT_FALSE(MatchBatch(r, sig, kExclude, std::vector<double>{1, 1, 1}).ok());
}

TEST(LaunchMatchTest, OtherKernelsInTheRightNumberAreErrors) {
  std::vector<KernelSpan> r = OneKernelBatch(2);
  r[2].name = "_Z5otherv";
  auto m = MatchBatch(r, std::vector<std::string>{"_Z4spinv"}, kExclude, std::vector<double>{1, 1});
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("sample 1 ran other kernels"), std::string::npos) << m.status().message();
}

TEST(LaunchMatchTest, OverlappingSamplesAreErrors) {
  // Two kernels per sample where sample 1's first kernel starts before sample
  // 0's last one ended: the groups are not the samples.
  std::vector<KernelSpan> r = {K("x", 1000, 5000), K("x", 2000, 3000), K("x", 4000, 6000), K("x", 7000, 8000)};
  auto m = MatchBatch(r, std::vector<std::string>{"x", "x"}, kExclude, std::vector<double>{1, 1});
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("overlaps"), std::string::npos) << m.status().message();
}

TEST(LaunchMatchTest, RecordsWithoutTimestampsAreErrors) {
  std::vector<KernelSpan> r = OneKernelBatch(2);
  r[1].end_ns = 0;
  EXPECT_FALSE(MatchBatch(r, std::vector<std::string>{"_Z4spinv"}, kExclude, std::vector<double>{1, 1}).ok());
  EXPECT_FALSE(MatchBatch(OneKernelBatch(2), {}, kExclude, std::vector<double>{1, 1}).ok());
}

TEST(LaunchMatchTest, KernelsLongerThanTheirEventsMeanAWrongMatch) {
  // Kernels of 10..29 us against events of 12 us: most are impossible.
  const std::vector<std::string> sig = {"_Z4spinv"};
  std::vector<double> events(20, 0.012);
  auto bad = MatchBatch(OneKernelBatch(20), sig, kExclude, events);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("longer by CUPTI than between their events"), std::string::npos);
  // One outlier in 20 (a timestamp blip) is tolerated; within the slack is fine.
  for (int i = 0; i < 20; ++i) events[i] = 0.010 + 0.001 * i;  // equal to the kernels
  events[0] = 0.0085;                                         // 10 us kernel, 8.5 us events: one over
  events[1] = 0.0105;                                         // 11 us kernel: within 1 % + 1 us
  auto ok = MatchBatch(OneKernelBatch(20), sig, kExclude, events);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->size(), 20u);
}

TEST(LaunchMatchTest, ClocksDisagreeOnlyWhenCuptiMissesRealWork) {
  // Seen on an H200: a 10 us spin reads ~13.4 us by events with a 3.3 us
  // overhead; CUPTI ~10.6 us. A 2 us kernel: events 4.3, CUPTI 2.3.
  EXPECT_FALSE(ClocksDisagree(0.0106, 0.0134, 0.0033));
  EXPECT_FALSE(ClocksDisagree(0.0023, 0.0043, 0.0033));
  EXPECT_FALSE(ClocksDisagree(1.0006, 1.0031, 0.0033));
  // Half of a 100 us sample's work not in the kernel records.
  EXPECT_TRUE(ClocksDisagree(0.050, 0.1033, 0.0033));
  // 1 ms sample, 0.15 ms missing: more than 10 %.
  EXPECT_TRUE(ClocksDisagree(0.85, 1.0033 + 0.15, 0.0033));
  // Below both thresholds: 0.5 us missing of 13 us.
  EXPECT_FALSE(ClocksDisagree(0.0096, 0.0134, 0.0033));
}

}  // namespace
}  // namespace assay

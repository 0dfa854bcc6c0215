#include "spec/job_state.h"

#include <gtest/gtest.h>

#include <set>
#include <utility>

namespace assay {
namespace {

constexpr JobState kAll[] = {JobState::kQueued,  JobState::kCompiling, JobState::kRunning,
                             JobState::kDone,    JobState::kFailed,    JobState::kCancelled,
                             JobState::kTimedOut};

TEST(JobStateTest, NamesRoundTrip) {
  for (JobState s : kAll) {
    auto back = JobStateFromName(JobStateName(s));
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(*back, s);
  }
  EXPECT_EQ(JobStateName(JobState::kTimedOut), "timed_out");
  EXPECT_FALSE(JobStateFromName("finished").has_value());
}

TEST(JobStateTest, KindNamesRoundTrip) {
  const JobKind kinds[] = {JobKind::kCompile, JobKind::kCuda,   JobKind::kCubin,
                           JobKind::kPtx,     JobKind::kFatbin, JobKind::kCudaProgram,
                           JobKind::kTriton,  JobKind::kTorch,  JobKind::kTorchCuda,
                           JobKind::kKernelbench};
  std::set<std::string_view> names;
  for (JobKind k : kinds) {
    names.insert(JobKindName(k));
    auto back = JobKindFromName(JobKindName(k));
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(*back, k);
  }
  EXPECT_EQ(names.size(), 10u);
  EXPECT_EQ(JobKindName(JobKind::kCudaProgram), "cuda_program");
  EXPECT_FALSE(JobKindFromName("CUDA").has_value());
}

TEST(JobStateTest, TerminalStates) {
  std::set<JobState> terminal;
  for (JobState s : kAll)
    if (IsTerminal(s)) terminal.insert(s);
  EXPECT_EQ(terminal, (std::set<JobState>{JobState::kDone, JobState::kFailed, JobState::kCancelled,
                                          JobState::kTimedOut}));
}

// The whole transition table, written out: every pair not listed is forbidden.
TEST(JobStateTest, EveryTransition) {
  using S = JobState;
  const std::set<std::pair<S, S>> allowed = {
      {S::kQueued, S::kCompiling},   {S::kQueued, S::kRunning},     {S::kQueued, S::kDone},
      {S::kQueued, S::kFailed},      {S::kQueued, S::kCancelled},   {S::kQueued, S::kTimedOut},
      {S::kCompiling, S::kRunning},  {S::kCompiling, S::kDone},     {S::kCompiling, S::kQueued},
      {S::kCompiling, S::kFailed},   {S::kCompiling, S::kCancelled}, {S::kCompiling, S::kTimedOut},
      {S::kRunning, S::kDone},       {S::kRunning, S::kQueued},     {S::kRunning, S::kFailed},
      {S::kRunning, S::kCancelled},  {S::kRunning, S::kTimedOut},
  };
  int checked = 0;
  for (S from : kAll) {
    for (S to : kAll) {
      EXPECT_EQ(CanTransition(from, to), allowed.count({from, to}) == 1)
          << JobStateName(from) << " -> " << JobStateName(to);
      ++checked;
    }
  }
  EXPECT_EQ(checked, 49);
}

TEST(JobStateTest, NothingLeavesATerminalState) {
  for (JobState from : kAll) {
    if (!IsTerminal(from)) continue;
    for (JobState to : kAll) EXPECT_FALSE(CanTransition(from, to));
  }
}

TEST(JobStateTest, NoSelfTransitions) {
  for (JobState s : kAll) EXPECT_FALSE(CanTransition(s, s)) << JobStateName(s);
}

}  // namespace
}  // namespace assay

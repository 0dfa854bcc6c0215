// Jobs, listing, transitions, events and concurrency of the SQLite store,
// against a real database file.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <latch>
#include <set>
#include <thread>
#include <vector>

#include "store/store_test_util.h"

namespace assay {
namespace {

constexpr JobState kAllStates[] = {JobState::kQueued, JobState::kCompiling, JobState::kRunning,
                                   JobState::kDone,   JobState::kFailed,    JobState::kCancelled,
                                   JobState::kTimedOut};

TransitionUpdate Msg(std::string message) {
  TransitionUpdate up;
  up.message = std::move(message);
  return up;
}

class SqliteStoreTest : public StoreTestBase {
 protected:
  std::vector<std::string> Ids(const JobFilter& f) {
    Result<std::vector<JobRecord>> jobs = store_->ListJobs(f);
    EXPECT_TRUE(jobs.ok()) << jobs.status().ToString();
    std::vector<std::string> ids;
    if (jobs.ok())
      for (auto& j : *jobs) ids.push_back(j.id);
    return ids;
  }
  size_t EventCount(const std::string& id) {
    Result<std::vector<JobEvent>> ev = store_->Events(id, 0);
    EXPECT_TRUE(ev.ok()) << ev.status().ToString();
    return ev.ok() ? ev->size() : 0;
  }
};

TEST_F(SqliteStoreTest, CreateAndGetRoundTripEveryField) {
  JobRecord j = MakeJob("j_1", "k_alice", 1'700'000'000'123);
  j.kind = JobKind::kCudaProgram;
  j.spec_json = R"({"x":"ünïcode"})";
  Create(j);
  Result<JobRecord> got = store_->GetJob("j_1");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->id, "j_1");
  EXPECT_EQ(got->key_id, "k_alice");
  EXPECT_EQ(got->name, "name of j_1");
  EXPECT_EQ(got->kind, JobKind::kCudaProgram);
  EXPECT_EQ(got->state, JobState::kQueued);
  EXPECT_EQ(got->spec_json, R"({"x":"ünïcode"})");
  EXPECT_EQ(got->result_json, "");
  EXPECT_EQ(got->attempts, 0);
  EXPECT_EQ(got->created_ms, 1'700'000'000'123);
  EXPECT_EQ(got->updated_ms, 1'700'000'000'123);
}

TEST_F(SqliteStoreTest, CreateAlwaysStartsQueuedAndStampsTime) {
  JobRecord j = MakeJob("j_1");
  j.state = JobState::kDone;  // ignored: every job starts queued
  int64_t before = NowUnixMs();
  Create(j);
  Result<JobRecord> got = store_->GetJob("j_1");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->state, JobState::kQueued);
  EXPECT_GE(got->created_ms, before);
  EXPECT_LE(got->created_ms, NowUnixMs());
}

TEST_F(SqliteStoreTest, CreateRejectsDuplicateIdAndKeepsTheOriginal) {
  Create(MakeJob("j_1", "k_a"));
  Status s = store_->CreateJob(MakeJob("j_1", "k_b"));
  EXPECT_EQ(s.error_class(), ErrorClass::kRejected) << s.ToString();
  EXPECT_EQ(store_->GetJob("j_1")->key_id, "k_a");
  EXPECT_EQ(EventCount("j_1"), 1u);
  EXPECT_EQ(store_->CreateJob(MakeJob("")).error_class(), ErrorClass::kRejected);
}

TEST_F(SqliteStoreTest, GetUnknownJobIsNotFound) {
  EXPECT_EQ(store_->GetJob("j_nope").status().error_class(), ErrorClass::kNotFound);
}

TEST_F(SqliteStoreTest, ListIsNewestFirstWithIdBreakingTies) {
  Create(MakeJob("j_a", "", 1000));
  Create(MakeJob("j_c", "", 3000));
  Create(MakeJob("j_b", "", 2000));
  Create(MakeJob("j_d", "", 2000));
  EXPECT_EQ(Ids({}), (std::vector<std::string>{"j_c", "j_d", "j_b", "j_a"}));
}

TEST_F(SqliteStoreTest, ListFiltersByStateAndKey) {
  Create(MakeJob("j_1", "k_a", 1000));
  Create(MakeJob("j_2", "k_b", 2000));
  Create(MakeJob("j_3", "k_a", 3000));
  Create(MakeJob("j_4", "k_a", 4000));
  Move("j_3", JobState::kRunning);
  Move("j_2", JobState::kRunning);
  JobFilter by_key;
  by_key.key_id = "k_a";
  EXPECT_EQ(Ids(by_key), (std::vector<std::string>{"j_4", "j_3", "j_1"}));
  JobFilter by_state;
  by_state.state = JobState::kRunning;
  EXPECT_EQ(Ids(by_state), (std::vector<std::string>{"j_3", "j_2"}));
  JobFilter both = by_key;
  both.state = JobState::kRunning;
  EXPECT_EQ(Ids(both), (std::vector<std::string>{"j_3"}));
  both.state = JobState::kDone;
  EXPECT_TRUE(Ids(both).empty());
}

TEST_F(SqliteStoreTest, ListPagesWithBeforeIdCursor) {
  std::vector<std::string> expected;
  for (int i = 0; i < 23; ++i) {
    // Pairs of jobs share a timestamp, so the cursor must break ties on id.
    std::string id = fmt::format("j_{:02}", i);
    Create(MakeJob(id, i % 2 ? "k_odd" : "k_even", 1000 + i / 2));
    expected.insert(expected.begin(), id);
  }
  std::vector<std::string> seen;
  JobFilter f;
  f.limit = 5;
  for (int page = 0; page < 10; ++page) {
    std::vector<std::string> ids = Ids(f);
    if (ids.empty()) break;
    EXPECT_LE(ids.size(), 5u);
    seen.insert(seen.end(), ids.begin(), ids.end());
    f.before_id = ids.back();
  }
  EXPECT_EQ(seen, expected);

  // Paging composes with a filter.
  JobFilter odd;
  odd.key_id = "k_odd";
  odd.limit = 4;
  odd.before_id = "j_15";
  EXPECT_EQ(Ids(odd), (std::vector<std::string>{"j_13", "j_11", "j_09", "j_07"}));

  JobFilter bad;
  bad.before_id = "j_gone";
  Result<std::vector<JobRecord>> r = store_->ListJobs(bad);
  EXPECT_EQ(r.status().error_class(), ErrorClass::kRejected);
  EXPECT_EQ(r.status().field(), "before_id");
}

TEST_F(SqliteStoreTest, ListClampsLimitTo1Through1000) {
  // 1005 rows in one raw transaction (through the API each would be its own fsync).
  RawDb raw(path_);
  raw.Exec("BEGIN");
  for (int i = 0; i < 1005; ++i) {
    raw.Exec(fmt::format(
        "INSERT INTO jobs (id, kind, state, spec_json, created_ms, updated_ms) "
        "VALUES ('j_{:04}', 'cuda', 'queued', '{{}}', {}, {})",
        i, 1000 + i, 1000 + i));
  }
  raw.Exec("COMMIT");
  JobFilter f;
  f.limit = 0;
  EXPECT_EQ(Ids(f), (std::vector<std::string>{"j_1004"}));
  f.limit = -7;
  EXPECT_EQ(Ids(f).size(), 1u);
  f.limit = 1'000'000;
  EXPECT_EQ(Ids(f).size(), 1000u);
}

// Drives a new job to `state` through allowed transitions.
void DriveTo(Store& store, const std::string& id, JobState state) {
  if (state == JobState::kQueued) return;
  if (state == JobState::kRunning || state == JobState::kCompiling) {
    ASSERT_TRUE(store.Transition(id, state, {}).ok());
    return;
  }
  ASSERT_TRUE(store.Transition(id, JobState::kRunning, {}).ok());
  ASSERT_TRUE(store.Transition(id, state, {}).ok());
}

TEST_F(SqliteStoreTest, TransitionFollowsTheStateMachineExactly) {
  int n = 0;
  int allowed = 0;
  for (JobState from : kAllStates) {
    for (JobState to : kAllStates) {
      std::string id = fmt::format("j_{}", n++);
      Create(MakeJob(id));
      DriveTo(*store_, id, from);
      JobRecord before = *store_->GetJob(id);
      size_t events_before = EventCount(id);
      TransitionUpdate up;
      up.message = "try";
      up.result_json = "{\"r\":1}";
      up.error_class = "infra_error";
      up.count_attempt = true;
      Result<JobRecord> r = store_->Transition(id, to, up);
      JobRecord after = *store_->GetJob(id);
      SCOPED_TRACE(fmt::format("{} -> {}", JobStateName(from), JobStateName(to)));
      if (CanTransition(from, to)) {
        ++allowed;
        ASSERT_TRUE(r.ok()) << r.status().ToString();
        EXPECT_EQ(r->state, to);
        EXPECT_EQ(after.state, to);
        EXPECT_EQ(after.result_json, "{\"r\":1}");
        EXPECT_EQ(after.attempts, before.attempts + 1);
        EXPECT_EQ(EventCount(id), events_before + 1);
      } else {
        EXPECT_EQ(r.status().error_class(), ErrorClass::kRejected) << r.status().ToString();
        EXPECT_EQ(after.state, before.state);
        EXPECT_EQ(after.updated_ms, before.updated_ms);
        EXPECT_EQ(after.result_json, before.result_json);
        EXPECT_EQ(after.attempts, before.attempts);
        EXPECT_EQ(after.error_class, before.error_class);
        EXPECT_EQ(EventCount(id), events_before);
      }
    }
  }
  // queued: compiling running done + 3 endings; compiling: running done queued + 3;
  // running: done queued + 3; terminal: none.
  EXPECT_EQ(allowed, 6 + 6 + 5);
}

TEST_F(SqliteStoreTest, TransitionOfUnknownJobIsNotFound) {
  EXPECT_EQ(store_->Transition("j_nope", JobState::kRunning, {}).status().error_class(),
            ErrorClass::kNotFound);
}

TEST_F(SqliteStoreTest, TransitionKeepsFieldsItDoesNotSet) {
  Create(MakeJob("j_1"));
  TransitionUpdate run;
  run.result_json = "{\"partial\":true}";
  Move("j_1", JobState::kRunning, run);
  TransitionUpdate fail;
  fail.error_class = "runtime_error";
  fail.error_message = "illegal address";
  Result<JobRecord> r = store_->Transition("j_1", JobState::kFailed, fail);
  ASSERT_TRUE(r.ok());
  Result<JobRecord> got = store_->GetJob("j_1");
  EXPECT_EQ(got->result_json, "{\"partial\":true}");
  EXPECT_EQ(got->error_class, "runtime_error");
  EXPECT_EQ(got->error_message, "illegal address");
  EXPECT_EQ(got->attempts, 0);
  EXPECT_EQ(got->updated_ms, r->updated_ms);
}

TEST_F(SqliteStoreTest, EventsAreStoredInOrderWithTimestamps) {
  int64_t t0 = NowUnixMs();
  Create(MakeJob("j_1"));
  Move("j_1", JobState::kCompiling, Msg("compiling with nvrtc"));
  Move("j_1", JobState::kRunning, Msg("on gpu 0"));
  Move("j_1", JobState::kDone, Msg("ok"));
  int64_t t1 = NowUnixMs();
  Result<std::vector<JobEvent>> ev = store_->Events("j_1", 0);
  ASSERT_TRUE(ev.ok());
  ASSERT_EQ(ev->size(), 4u);
  const JobState states[] = {JobState::kQueued, JobState::kCompiling, JobState::kRunning, JobState::kDone};
  const char* messages[] = {"accepted", "compiling with nvrtc", "on gpu 0", "ok"};
  int64_t last = 0;
  for (size_t i = 0; i < 4; ++i) {
    const JobEvent& e = (*ev)[i];
    EXPECT_EQ(e.job_id, "j_1");
    EXPECT_EQ(e.seq, static_cast<int64_t>(i + 1));
    EXPECT_EQ(e.state, states[i]);
    EXPECT_EQ(e.message, messages[i]);
    EXPECT_GE(e.at_ms, t0);
    EXPECT_LE(e.at_ms, t1);
    EXPECT_GE(e.at_ms, last);
    last = e.at_ms;
  }
  Result<std::vector<JobEvent>> tail = store_->Events("j_1", 2);
  ASSERT_TRUE(tail.ok());
  ASSERT_EQ(tail->size(), 2u);
  EXPECT_EQ((*tail)[0].seq, 3);
  EXPECT_TRUE(store_->Events("j_1", 4)->empty());
  EXPECT_EQ(store_->Events("j_nope", 0).status().error_class(), ErrorClass::kNotFound);
}

TEST_F(SqliteStoreTest, JobsInStatesAreOldestFirst) {
  Create(MakeJob("j_3", "", 3000));
  Create(MakeJob("j_1", "", 1000));
  Create(MakeJob("j_2", "", 2000));
  Create(MakeJob("j_4", "", 4000));
  Move("j_2", JobState::kRunning);
  Move("j_4", JobState::kDone);
  Result<std::vector<JobRecord>> r = store_->JobsInStates({JobState::kQueued, JobState::kRunning});
  ASSERT_TRUE(r.ok());
  std::vector<std::string> ids;
  for (auto& j : *r) ids.push_back(j.id);
  EXPECT_EQ(ids, (std::vector<std::string>{"j_1", "j_2", "j_3"}));
  EXPECT_TRUE(store_->JobsInStates({})->empty());
}

TEST_F(SqliteStoreTest, RacingTerminalTransitionsHaveExactlyOneWinner) {
  const JobState endings[] = {JobState::kDone, JobState::kFailed, JobState::kCancelled, JobState::kTimedOut};
  constexpr int kThreads = 8;
  for (int round = 0; round < 15; ++round) {
    std::string id = fmt::format("j_{}", round);
    Create(MakeJob(id));
    Move(id, JobState::kRunning);
    std::latch start(kThreads);
    std::atomic<int> wins{0};
    std::atomic<int> rejected{0};
    std::vector<JobState> winner(1);
    std::mutex mu;
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        start.arrive_and_wait();
        JobState to = endings[t % 4];
        Result<JobRecord> r = store_->Transition(id, to, Msg(fmt::format("thread {}", t)));
        if (r.ok()) {
          ++wins;
          std::lock_guard<std::mutex> lock(mu);
          winner[0] = to;
        } else if (r.status().error_class() == ErrorClass::kRejected) {
          ++rejected;
        }
      });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(wins.load(), 1);
    EXPECT_EQ(rejected.load(), kThreads - 1);
    EXPECT_EQ(store_->GetJob(id)->state, winner[0]);
    EXPECT_EQ(EventCount(id), 3u);  // queued, running, one ending
  }
}

TEST_F(SqliteStoreTest, ConcurrentCreatesAreAllStored) {
  constexpr int kThreads = 8;
  constexpr int kPerThread = 40;
  std::latch start(kThreads);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      for (int i = 0; i < kPerThread; ++i) {
        std::string id = fmt::format("j_{}_{}", t, i);
        if (!store_->CreateJob(MakeJob(id, fmt::format("k_{}", t))).ok()) ++failures;
        // Interleave reads, which go through the reader pool.
        if (!store_->GetJob(id).ok()) ++failures;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  JobFilter all;
  all.limit = 1000;
  std::vector<std::string> ids = Ids(all);
  EXPECT_EQ(ids.size(), size_t{kThreads * kPerThread});
  EXPECT_EQ(std::set<std::string>(ids.begin(), ids.end()).size(), size_t{kThreads * kPerThread});
  Result<StoreStats> stats = store_->Stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->jobs_by_state[0].first, JobState::kQueued);
  EXPECT_EQ(stats->jobs_by_state[0].second, kThreads * kPerThread);
}

TEST_F(SqliteStoreTest, ReadsDoNotWaitForAnOpenWriteTransaction) {
  Create(MakeJob("j_1"));
  SqliteOptions impatient;
  impatient.busy_timeout_ms = 1000;
  Reopen(impatient);
  // Another process (here: another connection) holds the write lock with an
  // uncommitted insert.
  RawDb other(path_);
  other.Exec("BEGIN IMMEDIATE");
  other.Exec("INSERT INTO jobs (id, kind, state, spec_json, created_ms, updated_ms) "
             "VALUES ('j_uncommitted', 'cuda', 'queued', '{}', 1, 1)");
  int64_t t0 = MonotonicMs();
  EXPECT_TRUE(store_->GetJob("j_1").ok());
  EXPECT_EQ(store_->GetJob("j_uncommitted").status().error_class(), ErrorClass::kNotFound);
  EXPECT_EQ(Ids({}).size(), 1u);
  EXPECT_LT(MonotonicMs() - t0, 900);  // under one busy timeout: nobody waited
  // A write has to wait, and fails as Infra once busy_timeout has passed.
  Status s = store_->CreateJob(MakeJob("j_2"));
  EXPECT_EQ(s.error_class(), ErrorClass::kInfraError) << s.ToString();
  EXPECT_NE(s.message().find("busy"), std::string::npos) << s.message();
  other.Exec("COMMIT");
  EXPECT_TRUE(store_->GetJob("j_uncommitted").ok());
  Create(MakeJob("j_2"));
}

}  // namespace
}  // namespace assay

// Batches in the SQLite store: all-or-nothing creation, members in order with
// their current job records, clean-up, and the schema step that adds them.
#include <gtest/gtest.h>

#include "store/sqlite_migrations.h"
#include "store/store_test_util.h"

namespace assay {
namespace {

class BatchStoreTest : public StoreTestBase {
 protected:
  static BatchRecord MakeBatch(const std::string& id, std::vector<std::string> job_ids, const std::string& key = "") {
    BatchRecord b;
    b.id = id;
    b.key_id = key;
    b.name = "sweep " + id;
    b.created_ms = 1'700'000'000'000;
    for (size_t i = 0; i < job_ids.size(); ++i)
      b.members.push_back(BatchMember{"cand" + std::to_string(i), MakeJob(job_ids[i], key)});
    return b;
  }
};

TEST_F(BatchStoreTest, CreateThenGetKeepsOrderNamesAndJobs) {
  ASSERT_TRUE(store_->CreateBatch(MakeBatch("b_1", {"j_c", "j_a", "j_b"}, "k_alice")).ok());
  Result<BatchRecord> b = store_->GetBatch("b_1");
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b->id, "b_1");
  EXPECT_EQ(b->key_id, "k_alice");
  EXPECT_EQ(b->name, "sweep b_1");
  EXPECT_EQ(b->created_ms, 1'700'000'000'000);
  ASSERT_EQ(b->members.size(), 3u);
  const char* ids[] = {"j_c", "j_a", "j_b"};
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(b->members[i].name, "cand" + std::to_string(i));
    EXPECT_EQ(b->members[i].job.id, ids[i]) << "submission order, not id order";
    EXPECT_EQ(b->members[i].job.state, JobState::kQueued);
    EXPECT_EQ(b->members[i].job.key_id, "k_alice");
    EXPECT_EQ(b->members[i].job.created_ms, 1'700'000'000'000) << "a member without a time takes the batch's";
  }
  // Every member is an ordinary job with its first event.
  Result<std::vector<JobEvent>> ev = store_->Events("j_a", 0);
  ASSERT_TRUE(ev.ok());
  ASSERT_EQ(ev->size(), 1u);
  EXPECT_EQ((*ev)[0].state, JobState::kQueued);
  JobFilter f;
  f.key_id = "k_alice";
  EXPECT_EQ(store_->ListJobs(f)->size(), 3u);
}

TEST_F(BatchStoreTest, GetSeesCurrentJobStates) {
  ASSERT_TRUE(store_->CreateBatch(MakeBatch("b_1", {"j_1", "j_2"})).ok());
  TransitionUpdate up;
  up.result_json = R"({"state":"done"})";
  Move("j_2", JobState::kRunning);
  Move("j_2", JobState::kDone, up);
  Result<BatchRecord> b = store_->GetBatch("b_1");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->members[0].job.state, JobState::kQueued);
  EXPECT_EQ(b->members[1].job.state, JobState::kDone);
  EXPECT_EQ(b->members[1].job.result_json, R"({"state":"done"})");
}

TEST_F(BatchStoreTest, CreationIsAllOrNothing) {
  Create(MakeJob("j_taken"));
  // The third member collides with an existing job: nothing of the batch stays.
  Status s = store_->CreateBatch(MakeBatch("b_1", {"j_1", "j_2", "j_taken"}));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error_class(), ErrorClass::kRejected);
  EXPECT_EQ(store_->GetJob("j_1").status().error_class(), ErrorClass::kNotFound);
  EXPECT_EQ(store_->GetJob("j_2").status().error_class(), ErrorClass::kNotFound);
  EXPECT_EQ(store_->GetBatch("b_1").status().error_class(), ErrorClass::kNotFound);
  EXPECT_EQ(RawDb(path_).Int("SELECT count(*) FROM batch_jobs"), 0);

  ASSERT_TRUE(store_->CreateBatch(MakeBatch("b_1", {"j_1"})).ok());
  Status dup = store_->CreateBatch(MakeBatch("b_1", {"j_9"}));
  EXPECT_EQ(dup.error_class(), ErrorClass::kRejected);
  EXPECT_EQ(store_->GetJob("j_9").status().error_class(), ErrorClass::kNotFound);
  EXPECT_EQ(store_->GetBatch("b_1")->members.size(), 1u);

  EXPECT_EQ(store_->CreateBatch(MakeBatch("b_2", {})).error_class(), ErrorClass::kRejected);
  EXPECT_EQ(store_->CreateBatch(MakeBatch("", {"j_x"})).error_class(), ErrorClass::kRejected);
}

TEST_F(BatchStoreTest, UnknownBatchIsNotFound) {
  EXPECT_EQ(store_->GetBatch("b_nope").status().error_class(), ErrorClass::kNotFound);
}

TEST_F(BatchStoreTest, CleanUpShrinksBatchesAndDropsEmptyOnes) {
  ASSERT_TRUE(store_->CreateBatch(MakeBatch("b_1", {"j_1", "j_2"})).ok());
  ASSERT_TRUE(store_->CreateBatch(MakeBatch("b_2", {"j_3"})).ok());
  for (const char* id : {"j_1", "j_3"}) Move(id, JobState::kCancelled);
  Result<int64_t> n = store_->DeleteJobsBefore(NowUnixMs() + 1000);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(*n, 2);
  Result<BatchRecord> b1 = store_->GetBatch("b_1");
  ASSERT_TRUE(b1.ok());
  ASSERT_EQ(b1->members.size(), 1u);
  EXPECT_EQ(b1->members[0].job.id, "j_2");
  EXPECT_EQ(store_->GetBatch("b_2").status().error_class(), ErrorClass::kNotFound);
}

TEST_F(BatchStoreTest, AVersionTwoDatabaseGainsBatches) {
  store_.reset();
  std::filesystem::path old_path = dir_->path() / "v2.db";
  {
    Result<SqliteConnection> conn = SqliteConnection::Open(old_path, {});
    ASSERT_TRUE(conn.ok());
    ASSERT_TRUE(ApplyMigrations(*conn, SqliteMigrations().first(2)).ok());
  }
  EXPECT_EQ(SqliteMigrations()[2].version, 3);
  Result<std::unique_ptr<Store>> s = OpenSqliteStore(old_path);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_TRUE((*s)->CreateBatch(MakeBatch("b_1", {"j_1"})).ok());
  EXPECT_EQ((*s)->GetBatch("b_1")->members.size(), 1u);
}

}  // namespace
}  // namespace assay

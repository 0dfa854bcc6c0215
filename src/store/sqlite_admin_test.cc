// Migrations, start-up recovery, clean-up and crash durability of the SQLite
// store: the parts that run when the server (re)starts or an admin tidies up.
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include "store/sqlite_migrations.h"
#include "store/store_test_util.h"

namespace assay {
namespace {

class SqliteAdminTest : public StoreTestBase {};

int64_t LatestVersion() { return SqliteMigrations().back().version; }

TEST_F(SqliteAdminTest, OpeningTwiceKeepsDataAndVersion) {
  Create(MakeJob("j_1"));
  Reopen();
  Reopen();
  EXPECT_TRUE(store_->GetJob("j_1").ok());
  RawDb raw(path_);
  EXPECT_EQ(raw.Int("SELECT max(version) FROM schema_migrations"), LatestVersion());
  EXPECT_EQ(raw.Int("SELECT count(*) FROM schema_migrations"), LatestVersion());
}

TEST_F(SqliteAdminTest, OlderDatabaseIsUpgradedOnOpen) {
  store_.reset();
  std::filesystem::path old_path = dir_->path() / "old.db";
  {
    Result<SqliteConnection> conn = SqliteConnection::Open(old_path, {});
    ASSERT_TRUE(conn.ok());
    // A database written by a build that knew only the first step.
    ASSERT_TRUE(ApplyMigrations(*conn, SqliteMigrations().first(1)).ok());
    EXPECT_EQ(*SchemaVersion(*conn), 1);
  }
  RawDb(old_path).Exec(
      "INSERT INTO jobs (id, kind, state, spec_json, created_ms, updated_ms) "
      "VALUES ('j_old', 'cuda', 'queued', '{}', 5, 5)");
  Result<std::unique_ptr<Store>> s = OpenSqliteStore(old_path);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_TRUE((*s)->GetJob("j_old").ok());
  EXPECT_TRUE((*s)->PutBlob("needs the blobs table of step 2").ok());
  EXPECT_TRUE((*s)->CreateKey("needs api_keys").ok());
  EXPECT_EQ(RawDb(old_path).Int("SELECT max(version) FROM schema_migrations"), LatestVersion());
}

TEST_F(SqliteAdminTest, DatabaseFromANewerBuildIsRefused) {
  store_.reset();
  RawDb(path_).Exec(fmt::format("INSERT INTO schema_migrations VALUES ({}, 0)", LatestVersion() + 1));
  Result<std::unique_ptr<Store>> s = OpenSqliteStore(path_);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().error_class(), ErrorClass::kInfraError);
  EXPECT_NE(s.status().message().find("newer than this build"), std::string::npos) << s.status().message();
}

TEST_F(SqliteAdminTest, RecoveryRequeuesInterruptedJobsThenFailsThem) {
  Create(MakeJob("j_compiling", "", 1000));
  Create(MakeJob("j_running", "", 2000));
  Create(MakeJob("j_queued", "", 3000));
  Create(MakeJob("j_done", "", 500));
  Move("j_compiling", JobState::kCompiling);
  Move("j_running", JobState::kRunning);
  Move("j_done", JobState::kDone);
  Reopen();  // the "restart"

  constexpr int kMax = 2;
  Result<std::vector<JobRecord>> q = RecoverInterruptedJobs(*store_, kMax);
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  std::vector<std::string> ids;
  for (auto& j : *q) ids.push_back(j.id);
  EXPECT_EQ(ids, (std::vector<std::string>{"j_compiling", "j_running", "j_queued"}));
  EXPECT_EQ(store_->GetJob("j_running")->attempts, 1);
  EXPECT_EQ(store_->GetJob("j_queued")->attempts, 0);
  EXPECT_EQ(store_->GetJob("j_done")->state, JobState::kDone);
  EXPECT_EQ(store_->Events("j_running", 0)->back().message, "requeued after server restart");

  // Interrupted again: attempts 1 < 2, requeued once more.
  Move("j_running", JobState::kRunning);
  ASSERT_TRUE(RecoverInterruptedJobs(*store_, kMax).ok());
  EXPECT_EQ(store_->GetJob("j_running")->attempts, 2);
  EXPECT_EQ(store_->GetJob("j_running")->state, JobState::kQueued);

  // A third time: attempts == max, so it fails as our fault.
  Move("j_running", JobState::kRunning);
  q = RecoverInterruptedJobs(*store_, kMax);
  ASSERT_TRUE(q.ok());
  for (auto& j : *q) EXPECT_NE(j.id, "j_running");
  Result<JobRecord> failed = store_->GetJob("j_running");
  EXPECT_EQ(failed->state, JobState::kFailed);
  EXPECT_EQ(failed->error_class, "infra_error");
  EXPECT_NE(failed->error_message.find("interrupted 3 times"), std::string::npos) << failed->error_message;
}

TEST_F(SqliteAdminTest, DeleteJobsBeforeRemovesOnlyOldFinishedJobs) {
  Create(MakeJob("j_old_done"));
  Create(MakeJob("j_old_queued"));
  Create(MakeJob("j_new_done"));
  Move("j_old_done", JobState::kDone);
  Move("j_new_done", JobState::kCancelled);
  RawDb raw(path_);
  raw.Exec("UPDATE jobs SET updated_ms = 1000 WHERE id IN ('j_old_done', 'j_old_queued')");
  Result<int64_t> n = store_->DeleteJobsBefore(2000);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(*n, 1);
  EXPECT_EQ(store_->GetJob("j_old_done").status().error_class(), ErrorClass::kNotFound);
  EXPECT_TRUE(store_->GetJob("j_old_queued").ok());
  EXPECT_TRUE(store_->GetJob("j_new_done").ok());
  EXPECT_EQ(raw.Int("SELECT count(*) FROM job_events WHERE job_id = 'j_old_done'"), 0);
  EXPECT_EQ(raw.Int("SELECT count(*) FROM job_events"), 1 + 2);
}

TEST_F(SqliteAdminTest, GarbageCollectionKeepsBlobsOfUnfinishedJobs) {
  std::string used = *store_->PutBlob("input of a queued job");
  std::string finished = *store_->PutBlob("input of a finished job");
  std::string orphan = *store_->PutBlob("nobody mentions me");
  JobRecord q = MakeJob("j_q");
  q.spec_json = fmt::format(R"({{"args":[{{"blob":"{}"}}]}})", used);
  Create(q);
  JobRecord d = MakeJob("j_d");
  d.spec_json = fmt::format(R"({{"args":[{{"blob":"{}"}}]}})", finished);
  Create(d);
  Move("j_d", JobState::kDone);

  Result<int64_t> none = store_->GarbageCollectBlobs(0);  // everything is newer than the cutoff
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, 0);
  Result<int64_t> n = store_->GarbageCollectBlobs(NowUnixMs() + 1);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(*n, 2);
  EXPECT_TRUE(*store_->HasBlob(used));
  EXPECT_FALSE(*store_->HasBlob(finished));
  EXPECT_FALSE(*store_->HasBlob(orphan));
  EXPECT_EQ(store_->Stats()->blobs, 1);
}

// The "nothing accepted is lost" proof: a child process creates jobs as fast
// as it can and reports each one CreateJob accepted; the parent kill -9s it
// mid-stream, reopens the file and finds every reported job.
void AcceptedJobsSurviveKill9(const std::filesystem::path& path, const SqliteOptions& options) {
  int fds[2];
  ASSERT_EQ(pipe2(fds, O_CLOEXEC), 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(fds[0]);
    Result<std::unique_ptr<Store>> store = OpenSqliteStore(path, options);
    if (!store.ok()) _exit(2);
    for (int i = 0;; ++i) {
      JobRecord j;
      j.id = fmt::format("j_{:08}", i);
      j.spec_json = "{}";
      if (!(*store)->CreateJob(j).ok()) _exit(3);
      std::string line = j.id + "\n";  // < PIPE_BUF: one atomic write
      while (write(fds[1], line.data(), line.size()) < 0 && errno == EINTR) {
      }
    }
  }
  close(fds[1]);
  std::vector<std::string> accepted;
  std::string buf;
  bool killed = false;
  char chunk[4096];
  for (;;) {
    ssize_t n = read(fds[0], chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    buf.append(chunk, static_cast<size_t>(n));
    size_t nl;
    while ((nl = buf.find('\n')) != std::string::npos) {
      accepted.push_back(buf.substr(0, nl));
      buf.erase(0, nl + 1);
    }
    if (!killed && accepted.size() >= 150) {
      kill(pid, SIGKILL);  // mid-stream: the child is inside some CreateJob now
      killed = true;
    }
  }
  close(fds[0]);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status)) << "child exited early with status " << WEXITSTATUS(status);
  EXPECT_EQ(WTERMSIG(status), SIGKILL);
  EXPECT_TRUE(buf.empty()) << "a torn line: " << buf;
  ASSERT_GE(accepted.size(), 150u);

  Result<std::unique_ptr<Store>> store = OpenSqliteStore(path, options);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  size_t missing = 0;
  for (const std::string& id : accepted) {
    Result<JobRecord> j = (*store)->GetJob(id);
    if (!j.ok() || j->state != JobState::kQueued) ++missing;
  }
  EXPECT_EQ(missing, 0u) << "of " << accepted.size() << " accepted jobs";
  RawDb raw(path);
  EXPECT_EQ(raw.Int("SELECT count(*) FROM job_events WHERE seq = 1"), raw.Int("SELECT count(*) FROM jobs"));
  sqlite3_stmt* s = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(raw.get(), "PRAGMA integrity_check", -1, &s, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(s), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(s, 0)), "ok");
  sqlite3_finalize(s);
}

SqliteOptions FullSync(bool full) {
  SqliteOptions o;
  o.synchronous_full = full;
  return o;
}

TEST_F(SqliteAdminTest, AcceptedJobsSurviveKill9WithSynchronousFull) {
  store_.reset();  // never carry an open connection across fork()
  AcceptedJobsSurviveKill9(dir_->path() / "full.db", FullSync(true));
}

TEST_F(SqliteAdminTest, AcceptedJobsSurviveKill9WithSynchronousNormal) {
  store_.reset();
  AcceptedJobsSurviveKill9(dir_->path() / "normal.db", FullSync(false));
}

}  // namespace
}  // namespace assay

// The SQLite implementation of Store (reached through OpenSqliteStore).
//
// Thread-safety: as Store. One writer connection, used only while holding
// writer_mu_; reader connections are leased from a pool (readers_mu_ guards
// only the pool itself, never a query). WAL gives readers a committed snapshot
// without waiting for the writer. Methods are split over files by concept:
// sqlite_store.cc (open, pool, stats, clean-up), sqlite_jobs.cc, sqlite_batches.cc,
// sqlite_blobs.cc, sqlite_keys.cc.
#pragma once

#include <filesystem>
#include <memory>
#include <mutex>
#include <vector>

#include "store/sqlite_connection.h"
#include "store/store.h"

namespace assay {

class SqliteStore final : public Store {
 public:
  static Result<std::unique_ptr<SqliteStore>> Open(const std::filesystem::path& path,
                                                   const SqliteOptions& options);

  Status CreateJob(const JobRecord& job) override;
  Result<JobRecord> GetJob(const std::string& id) override;
  Result<std::vector<JobRecord>> ListJobs(const JobFilter& filter) override;
  Result<JobRecord> Transition(const std::string& id, JobState to, const TransitionUpdate& update) override;
  Result<std::vector<JobEvent>> Events(const std::string& id, int64_t after_seq) override;
  Result<std::vector<JobRecord>> JobsInStates(const std::vector<JobState>& states) override;
  Status CreateBatch(const BatchRecord& batch) override;
  Result<BatchRecord> GetBatch(const std::string& id) override;

  Result<std::string> PutBlob(std::string_view data) override;
  Result<std::string> GetBlob(const std::string& hash) override;
  Result<bool> HasBlob(const std::string& hash) override;

  Result<CreatedKey> CreateKey(const std::string& name) override;
  Result<std::vector<ApiKeyInfo>> ListKeys() override;
  Status RevokeKey(const std::string& id) override;
  Result<std::string> Authenticate(const std::string& secret) override;

  Result<StoreStats> Stats() override;
  Result<int64_t> DeleteJobsBefore(int64_t unix_ms) override;
  Result<int64_t> GarbageCollectBlobs(int64_t unix_ms) override;

 private:
  // A reader connection leased from the pool; returned to it on destruction.
  class Reader {
   public:
    Reader(SqliteStore* store, std::unique_ptr<SqliteConnection> conn)
        : store_(store), conn_(std::move(conn)) {}
    Reader(Reader&&) noexcept = default;
    Reader(const Reader&) = delete;
    Reader& operator=(const Reader&) = delete;
    Reader& operator=(Reader&&) = delete;
    ~Reader();
    SqliteConnection& operator*() { return *conn_; }
    SqliteConnection* operator->() { return conn_.get(); }

   private:
    SqliteStore* store_;
    std::unique_ptr<SqliteConnection> conn_;
  };

  SqliteStore(std::filesystem::path path, const SqliteOptions& options, SqliteConnection writer);
  Result<Reader> AcquireReader();
  SqliteConnectionOptions ConnectionOptions(bool read_only) const;

  const std::filesystem::path path_;
  const SqliteOptions options_;

  std::mutex writer_mu_;
  SqliteConnection writer_;  // GUARDED_BY(writer_mu_)

  std::mutex readers_mu_;
  std::vector<std::unique_ptr<SqliteConnection>> idle_readers_;  // GUARDED_BY(readers_mu_)
};

}  // namespace assay

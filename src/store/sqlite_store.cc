#include "store/sqlite_store.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/log.h"
#include "store/sqlite_migrations.h"

namespace assay {
namespace {
// SQLite's hard limit on one value (SQLITE_MAX_LENGTH's default) [bytes].
constexpr int64_t kSqliteMaxValueBytes = 1'000'000'000;
}  // namespace

Result<std::unique_ptr<Store>> OpenSqliteStore(const std::filesystem::path& path) {
  return OpenSqliteStore(path, SqliteOptions{});
}

Result<std::unique_ptr<Store>> OpenSqliteStore(const std::filesystem::path& path,
                                               const SqliteOptions& options) {
  Result<std::unique_ptr<SqliteStore>> store = SqliteStore::Open(path, options);
  if (!store.ok()) return store.status();
  return std::unique_ptr<Store>(std::move(store).value());
}

Result<std::unique_ptr<SqliteStore>> SqliteStore::Open(const std::filesystem::path& path,
                                                       const SqliteOptions& options) {
  SqliteOptions opts = options;
  opts.max_blob_bytes = std::clamp<int64_t>(opts.max_blob_bytes, 0, kSqliteMaxValueBytes);
  opts.max_idle_readers = std::max(opts.max_idle_readers, 0);

  SqliteConnectionOptions conn_opts;
  conn_opts.busy_timeout_ms = opts.busy_timeout_ms;
  conn_opts.synchronous_full = opts.synchronous_full;
  Result<SqliteConnection> writer = SqliteConnection::Open(path, conn_opts);
  if (!writer.ok()) return writer.status();
  ASSAY_RETURN_IF_ERROR(ApplyMigrations(*writer, SqliteMigrations()));
  log::Event("store.open").Kv("path", path.string()).Kv("schema", SqliteMigrations().back().version)
      .Kv("synchronous", opts.synchronous_full ? "full" : "normal").Info();
  // Not make_unique: the constructor is private.
  return std::unique_ptr<SqliteStore>(new SqliteStore(path, opts, std::move(writer).value()));
}

SqliteStore::SqliteStore(std::filesystem::path path, const SqliteOptions& options,
                         SqliteConnection writer)
    : path_(std::move(path)), options_(options), writer_(std::move(writer)) {}

SqliteConnectionOptions SqliteStore::ConnectionOptions(bool read_only) const {
  SqliteConnectionOptions o;
  o.busy_timeout_ms = options_.busy_timeout_ms;
  o.synchronous_full = options_.synchronous_full;
  o.read_only = read_only;
  return o;
}

Result<SqliteStore::Reader> SqliteStore::AcquireReader() {
  {
    std::lock_guard<std::mutex> lock(readers_mu_);
    if (!idle_readers_.empty()) {
      std::unique_ptr<SqliteConnection> conn = std::move(idle_readers_.back());
      idle_readers_.pop_back();
      return Reader(this, std::move(conn));
    }
  }
  // Opened outside the lock: opening touches the file system.
  Result<SqliteConnection> conn = SqliteConnection::Open(path_, ConnectionOptions(true));
  if (!conn.ok()) return conn.status();
  return Reader(this, std::make_unique<SqliteConnection>(std::move(conn).value()));
}

SqliteStore::Reader::~Reader() {
  if (conn_ == nullptr) return;  // moved from
  // A read transaction left open by an early error return would pin an old
  // snapshot for the next user of this connection.
  if (!sqlite3_get_autocommit(conn_->raw())) (void)conn_->Exec("ROLLBACK");
  std::lock_guard<std::mutex> lock(store_->readers_mu_);
  if (static_cast<int>(store_->idle_readers_.size()) < store_->options_.max_idle_readers) {
    store_->idle_readers_.push_back(std::move(conn_));
  }
}

Result<StoreStats> SqliteStore::Stats() {
  Result<Reader> r = AcquireReader();
  if (!r.ok()) return r.status();
  StoreStats stats;
  for (JobState s : {JobState::kQueued, JobState::kCompiling, JobState::kRunning, JobState::kDone,
                     JobState::kFailed, JobState::kCancelled, JobState::kTimedOut}) {
    stats.jobs_by_state.emplace_back(s, 0);
  }
  // One read transaction so the numbers come from one snapshot.
  ASSAY_RETURN_IF_ERROR((*r)->Exec("BEGIN"));
  {
    Result<Stmt> q = (*r)->Prepare("SELECT state, count(*) FROM jobs GROUP BY state");
    if (!q.ok()) return q.status();
    for (;;) {
      Result<bool> row = q->Step();
      if (!row.ok()) return row.status();
      if (!*row) break;
      std::optional<JobState> s = JobStateFromName(q->Text(0));
      if (!s) continue;
      for (auto& [state, n] : stats.jobs_by_state) {
        if (state == *s) n = q->Int(1);
      }
    }
  }
  {
    Result<Stmt> q = (*r)->Prepare(
        "SELECT count(*), coalesce(sum(raw_size), 0), coalesce(sum(stored_size), 0) FROM blobs");
    if (!q.ok()) return q.status();
    Result<bool> row = q->Step();
    if (!row.ok()) return row.status();
    stats.blobs = q->Int(0);
    stats.blob_bytes_raw = q->Int(1);
    stats.blob_bytes_stored = q->Int(2);
  }
  ASSAY_RETURN_IF_ERROR((*r)->Exec("COMMIT"));
  return stats;
}

Result<int64_t> SqliteStore::DeleteJobsBefore(int64_t unix_ms) {
  std::lock_guard<std::mutex> lock(writer_mu_);
  Result<Transaction> tx = Transaction::Begin(writer_);
  if (!tx.ok()) return tx.status();
  // Events go with their job (ON DELETE CASCADE; foreign_keys is on).
  Result<Stmt> del = writer_.Prepare(
      "DELETE FROM jobs WHERE state IN ('done','failed','cancelled','timed_out') AND updated_ms < ?1");
  if (!del.ok()) return del.status();
  ASSAY_RETURN_IF_ERROR(del->Bind(1, unix_ms).Run());
  int64_t n = writer_.changes();
  // Batch membership went with the jobs (ON DELETE CASCADE); drop batches left empty.
  ASSAY_RETURN_IF_ERROR(writer_.Exec(
      "DELETE FROM batches WHERE NOT EXISTS (SELECT 1 FROM batch_jobs WHERE batch_jobs.batch_id = batches.id)"));
  ASSAY_RETURN_IF_ERROR(tx->Commit());
  log::Event("store.delete_jobs").Kv("before_ms", unix_ms).Kv("deleted", n).Info();
  return n;
}

Result<int64_t> SqliteStore::GarbageCollectBlobs(int64_t unix_ms) {
  std::lock_guard<std::mutex> lock(writer_mu_);
  Result<Transaction> tx = Transaction::Begin(writer_);
  if (!tx.ok()) return tx.status();
  // A plain substring search: a spec refers to a blob by its 64-hex hash, and
  // hex has no LIKE/instr metacharacters. Unfinished jobs are few, so the scan
  // is cheap; this is an admin operation, not a hot path.
  Result<Stmt> del = writer_.Prepare(
      "DELETE FROM blobs WHERE created_ms < ?1 AND NOT EXISTS ("
      " SELECT 1 FROM jobs WHERE state IN ('queued','compiling','running')"
      " AND instr(jobs.spec_json, blobs.hash) > 0)");
  if (!del.ok()) return del.status();
  ASSAY_RETURN_IF_ERROR(del->Bind(1, unix_ms).Run());
  int64_t n = writer_.changes();
  ASSAY_RETURN_IF_ERROR(tx->Commit());
  log::Event("store.gc_blobs").Kv("before_ms", unix_ms).Kv("deleted", n).Info();
  return n;
}

}  // namespace assay

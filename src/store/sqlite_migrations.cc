#include "store/sqlite_migrations.h"

#include <fmt/format.h>

#include <array>

#include "common/log.h"
#include "common/util.h"

namespace assay {
namespace {

// States and kinds are stored by their wire names (JobStateName / JobKindName)
// so the file reads well in `sqlite3` and maps 1:1 onto PostgreSQL.
constexpr std::array<Migration, 3> kMigrations = {{
    {1, "jobs and job events", R"sql(
CREATE TABLE jobs (
  id            TEXT PRIMARY KEY,
  key_id        TEXT NOT NULL DEFAULT '',
  name          TEXT NOT NULL DEFAULT '',
  kind          TEXT NOT NULL,
  state         TEXT NOT NULL CHECK (state IN ('queued','compiling','running','done',
                                                'failed','cancelled','timed_out')),
  spec_json     TEXT NOT NULL,
  result_json   TEXT NOT NULL DEFAULT '',
  error_class   TEXT NOT NULL DEFAULT '',
  error_message TEXT NOT NULL DEFAULT '',
  attempts      INTEGER NOT NULL DEFAULT 0,
  created_ms    INTEGER NOT NULL,
  updated_ms    INTEGER NOT NULL
);
CREATE INDEX jobs_by_state ON jobs (state, created_ms, id);
CREATE INDEX jobs_by_created ON jobs (created_ms, id);
CREATE INDEX jobs_by_key ON jobs (key_id, created_ms, id);
CREATE TABLE job_events (
  job_id  TEXT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
  seq     INTEGER NOT NULL,
  state   TEXT NOT NULL,
  at_ms   INTEGER NOT NULL,
  message TEXT NOT NULL DEFAULT '',
  PRIMARY KEY (job_id, seq)
) WITHOUT ROWID;
)sql"},
    {2, "blobs and api keys", R"sql(
CREATE TABLE blobs (
  hash        TEXT PRIMARY KEY,
  raw_size    INTEGER NOT NULL,
  stored_size INTEGER NOT NULL,
  codec       TEXT NOT NULL CHECK (codec IN ('zstd','raw')),
  data        BLOB NOT NULL,
  created_ms  INTEGER NOT NULL
);
CREATE TABLE api_keys (
  id            TEXT PRIMARY KEY,
  name          TEXT NOT NULL DEFAULT '',
  secret_sha256 TEXT NOT NULL UNIQUE,
  created_ms    INTEGER NOT NULL,
  revoked_ms    INTEGER
);
)sql"},
    // A batch (POST /v1/batches) groups jobs submitted together. Membership
    // goes with the job (ON DELETE CASCADE): clean-up of old jobs shrinks
    // their batch, and DeleteJobsBefore drops a batch left empty.
    {3, "batches", R"sql(
CREATE TABLE batches (
  id         TEXT PRIMARY KEY,
  key_id     TEXT NOT NULL DEFAULT '',
  name       TEXT NOT NULL DEFAULT '',
  created_ms INTEGER NOT NULL
);
CREATE TABLE batch_jobs (
  batch_id TEXT NOT NULL REFERENCES batches (id) ON DELETE CASCADE,
  idx      INTEGER NOT NULL,
  name     TEXT NOT NULL,
  job_id   TEXT NOT NULL UNIQUE REFERENCES jobs (id) ON DELETE CASCADE,
  PRIMARY KEY (batch_id, idx)
) WITHOUT ROWID;
)sql"},
}};

Status TooNew(int64_t found, int64_t latest) {
  return Status::Infra(fmt::format(
      "store: the database schema is version {}, newer than this build of assay supports "
      "(version {}); upgrade assay or use another data directory",
      found, latest));
}

}  // namespace

std::span<const Migration> SqliteMigrations() { return kMigrations; }

Result<int64_t> SchemaVersion(SqliteConnection& conn) {
  ASSAY_RETURN_IF_ERROR(conn.Exec(
      "CREATE TABLE IF NOT EXISTS schema_migrations ("
      " version INTEGER PRIMARY KEY, applied_ms INTEGER NOT NULL)"));
  Result<Stmt> q = conn.Prepare("SELECT coalesce(max(version), 0) FROM schema_migrations");
  if (!q.ok()) return q.status();
  Result<bool> row = q->Step();
  if (!row.ok()) return row.status();
  return q->Int(0);
}

Status ApplyMigrations(SqliteConnection& conn, std::span<const Migration> steps) {
  int64_t latest = steps.empty() ? 0 : steps.back().version;
  for (const Migration& step : steps) {
    // Version is re-read inside the write transaction: another process may
    // have migrated the file since we looked.
    Result<Transaction> tx = Transaction::Begin(conn);
    if (!tx.ok()) return tx.status();
    Result<int64_t> current = SchemaVersion(conn);
    if (!current.ok()) return current.status();
    if (*current > latest) {
      return TooNew(*current, latest);
    }
    if (*current >= step.version) continue;
    ASSAY_RETURN_IF_ERROR(conn.Exec(step.sql));
    Result<Stmt> rec = conn.Prepare("INSERT INTO schema_migrations (version, applied_ms) VALUES (?1, ?2)");
    if (!rec.ok()) return rec.status();
    ASSAY_RETURN_IF_ERROR(rec->Bind(1, step.version).Bind(2, NowUnixMs()).Run());
    ASSAY_RETURN_IF_ERROR(tx->Commit());
    log::Event("store.migrate").Kv("version", step.version).Kv("what", step.what).Info();
  }
  // With every step already applied the loop only checked; check once more
  // for the case of an empty or fully-applied list against a newer file.
  Result<int64_t> current = SchemaVersion(conn);
  if (!current.ok()) return current.status();
  if (*current > latest) {
    return TooNew(*current, latest);
  }
  return Status::Ok();
}

}  // namespace assay

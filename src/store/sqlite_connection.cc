#include "store/sqlite_connection.h"

#include <fmt/format.h>

namespace assay {

Status SqliteError(sqlite3* db, std::string_view what) {
  int code = db ? sqlite3_extended_errcode(db) : SQLITE_ERROR;
  std::string_view msg = db ? sqlite3_errmsg(db) : "no connection";
  if ((code & 0xff) == SQLITE_BUSY || (code & 0xff) == SQLITE_LOCKED) {
    return Status::Infra(fmt::format("store: {}: database is busy (locked by another writer): {}", what, msg));
  }
  return Status::Infra(fmt::format("store: {}: sqlite error {}: {}", what, code, msg));
}

// --- Stmt --------------------------------------------------------------------

Stmt::~Stmt() {
  if (s_ == nullptr) return;
  sqlite3_reset(s_);
  sqlite3_clear_bindings(s_);
}

Stmt& Stmt::Bind(int i, int64_t v) {
  sqlite3_bind_int64(s_, i, v);
  return *this;
}

Stmt& Stmt::Bind(int i, std::string_view text) {
  // SQLITE_TRANSIENT: SQLite copies, so callers may bind temporaries.
  sqlite3_bind_text64(s_, i, text.data(), text.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  return *this;
}

Stmt& Stmt::BindBlob(int i, std::string_view bytes) {
  // SQLITE_STATIC: blobs may be large; callers keep them alive until the Stmt ends.
  sqlite3_bind_blob64(s_, i, bytes.empty() ? "" : bytes.data(), bytes.size(), SQLITE_STATIC);
  return *this;
}

Stmt& Stmt::BindNull(int i) {
  sqlite3_bind_null(s_, i);
  return *this;
}

Result<bool> Stmt::Step() {
  last_code_ = sqlite3_step(s_);
  if (last_code_ == SQLITE_ROW) return true;
  if (last_code_ == SQLITE_DONE) return false;
  sqlite3* db = sqlite3_db_handle(s_);
  last_code_ = sqlite3_extended_errcode(db);
  return SqliteError(db, sqlite3_sql(s_));
}

Status Stmt::Run() {
  for (;;) {
    Result<bool> row = Step();
    if (!row.ok()) return row.status();
    if (!*row) return Status::Ok();
  }
}

std::string Stmt::Text(int col) const {
  const unsigned char* p = sqlite3_column_text(s_, col);
  if (p == nullptr) return {};
  return std::string(reinterpret_cast<const char*>(p), sqlite3_column_bytes(s_, col));
}

std::string_view Stmt::Blob(int col) const {
  const void* p = sqlite3_column_blob(s_, col);
  if (p == nullptr) return {};
  return std::string_view(static_cast<const char*>(p), sqlite3_column_bytes(s_, col));
}

// --- SqliteConnection --------------------------------------------------------

Result<SqliteConnection> SqliteConnection::Open(const std::filesystem::path& path,
                                                const SqliteConnectionOptions& options) {
  sqlite3* raw = nullptr;
  // NOMUTEX: each connection is used by one thread at a time (see header), so
  // SQLite's per-connection mutex would only cost time.
  int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
  int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  SqliteConnection conn(raw);  // owns raw even when open failed
  if (rc != SQLITE_OK) return SqliteError(raw, fmt::format("open {}", path.string()));
  sqlite3_extended_result_codes(raw, 1);
  sqlite3_busy_timeout(raw, options.busy_timeout_ms);

  // journal_mode=WAL is persistent in the file; asking again is cheap and
  // tells us if the file system refused it (e.g. no shared memory support).
  Result<Stmt> wal = conn.Prepare("PRAGMA journal_mode=WAL");
  if (!wal.ok()) return wal.status();
  Result<bool> row = wal->Step();
  if (!row.ok()) return row.status();
  if (!*row || wal->Text(0) != "wal") {
    return Status::Infra(fmt::format("store: {}: could not enable WAL journal mode", path.string()));
  }
  std::string pragmas = fmt::format(
      "PRAGMA synchronous={}; PRAGMA foreign_keys=ON; PRAGMA query_only={};",
      options.synchronous_full ? "FULL" : "NORMAL", options.read_only ? 1 : 0);
  ASSAY_RETURN_IF_ERROR(conn.Exec(pragmas));
  return conn;
}

SqliteConnection::~SqliteConnection() {
  cache_.clear();  // finalize statements before the connection closes
}

Status SqliteConnection::Exec(std::string_view sql) {
  std::string owned(sql);
  char* err = nullptr;
  int rc = sqlite3_exec(db_.get(), owned.c_str(), nullptr, nullptr, &err);
  if (rc == SQLITE_OK) return Status::Ok();
  std::string msg = err ? err : "unknown error";
  sqlite3_free(err);
  Status s = SqliteError(db_.get(), owned.substr(0, 60));
  return Status::Infra(fmt::format("{} ({})", s.message(), msg));
}

Result<Stmt> SqliteConnection::Prepare(const std::string& sql) {
  auto it = cache_.find(sql);
  if (it != cache_.end()) return Stmt(it->second.get());
  sqlite3_stmt* s = nullptr;
  int rc = sqlite3_prepare_v3(db_.get(), sql.c_str(), static_cast<int>(sql.size()),
                              SQLITE_PREPARE_PERSISTENT, &s, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(s);
    return SqliteError(db_.get(), fmt::format("prepare `{}`", sql));
  }
  Stmt stmt(s);
  cache_.emplace(sql, std::unique_ptr<sqlite3_stmt, FinalizeStmt>(s));
  return stmt;
}

// --- Transaction -------------------------------------------------------------

Result<Transaction> Transaction::Begin(SqliteConnection& conn) {
  ASSAY_RETURN_IF_ERROR(conn.Exec("BEGIN IMMEDIATE"));
  return Transaction(&conn);
}

Transaction::~Transaction() {
  if (conn_ != nullptr) (void)conn_->Exec("ROLLBACK");
}

Status Transaction::Commit() {
  Status s = conn_->Exec("COMMIT");
  if (!s.ok()) return s;  // destructor rolls back
  conn_ = nullptr;
  return Status::Ok();
}

}  // namespace assay

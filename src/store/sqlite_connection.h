// One SQLite connection with its prepared-statement cache, plus the RAII
// helpers every query goes through (Stmt resets on scope exit, Transaction
// rolls back unless committed).
//
// Thread-safety: a SqliteConnection is used by ONE thread at a time (the
// connection is opened with SQLITE_OPEN_NOMUTEX); SqliteStore hands
// connections out under its own locks. Moving it is safe; copying is not.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "common/status.h"

namespace assay {

struct SqliteConnectionOptions {
  int busy_timeout_ms = 5000;  // how long a writer waits for another process's lock [ms]
  bool synchronous_full = true;  // PRAGMA synchronous=FULL (else NORMAL); see docs/store.md
  bool read_only = false;        // PRAGMA query_only: a reader can never write by mistake
};

// A prepared statement borrowed from a connection's cache. Resets and clears
// its bindings when it goes out of scope so the cached statement is reusable.
class Stmt {
 public:
  explicit Stmt(sqlite3_stmt* s) : s_(s) {}
  Stmt(Stmt&& o) noexcept : s_(o.s_) { o.s_ = nullptr; }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  Stmt& operator=(Stmt&&) = delete;
  ~Stmt();

  // Parameter indexes are 1-based, as in SQLite.
  Stmt& Bind(int i, int64_t v);
  Stmt& Bind(int i, std::string_view text);
  Stmt& BindBlob(int i, std::string_view bytes);
  Stmt& BindNull(int i);

  // One step: true when a row is available, false when done.
  Result<bool> Step();
  // Steps to completion (for statements that return no rows).
  Status Run();
  // The SQLite result code of the last Step (SQLITE_CONSTRAINT_PRIMARYKEY, ...).
  int last_code() const { return last_code_; }

  int64_t Int(int col) const { return sqlite3_column_int64(s_, col); }
  std::string Text(int col) const;
  // Valid until the next Step or the end of this Stmt.
  std::string_view Blob(int col) const;
  bool IsNull(int col) const { return sqlite3_column_type(s_, col) == SQLITE_NULL; }

 private:
  sqlite3_stmt* s_;
  int last_code_ = SQLITE_OK;
};

class SqliteConnection {
 public:
  static Result<SqliteConnection> Open(const std::filesystem::path& path,
                                       const SqliteConnectionOptions& options);
  SqliteConnection(SqliteConnection&&) noexcept = default;
  SqliteConnection& operator=(SqliteConnection&&) noexcept = default;
  SqliteConnection(const SqliteConnection&) = delete;
  SqliteConnection& operator=(const SqliteConnection&) = delete;
  ~SqliteConnection();

  // Runs one or more SQL statements that return no rows we need.
  Status Exec(std::string_view sql);
  // A cached prepared statement for `sql` (prepared on first use).
  Result<Stmt> Prepare(const std::string& sql);
  sqlite3* raw() const { return db_.get(); }
  int64_t changes() const { return sqlite3_changes64(db_.get()); }

 private:
  struct CloseDb {
    void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
  };
  struct FinalizeStmt {
    void operator()(sqlite3_stmt* s) const { sqlite3_finalize(s); }
  };
  explicit SqliteConnection(sqlite3* db) : db_(db) {}

  // Statements are destroyed before the connection (declared after it).
  std::unique_ptr<sqlite3, CloseDb> db_;
  std::unordered_map<std::string, std::unique_ptr<sqlite3_stmt, FinalizeStmt>> cache_;
};

// BEGIN IMMEDIATE on construction (takes the database write lock up front, so
// read-check-write sequences cannot interleave with another writer); ROLLBACK
// in the destructor unless Commit() succeeded.
class Transaction {
 public:
  static Result<Transaction> Begin(SqliteConnection& conn);
  Transaction(Transaction&& o) noexcept : conn_(o.conn_) { o.conn_ = nullptr; }
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  Transaction& operator=(Transaction&&) = delete;
  ~Transaction();
  Status Commit();

 private:
  explicit Transaction(SqliteConnection* conn) : conn_(conn) {}
  SqliteConnection* conn_;  // null once committed or rolled back
};

// Infra status naming the failed operation and SQLite's message.
Status SqliteError(sqlite3* db, std::string_view what);

}  // namespace assay

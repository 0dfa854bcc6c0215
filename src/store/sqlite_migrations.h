// Schema migrations of the SQLite store.
//
// The schema version is the highest `version` in `schema_migrations`. Each
// step runs in its own BEGIN IMMEDIATE transaction together with the row that
// records it, so a crash mid-upgrade leaves the database at the previous
// version, and two processes opening the same file never apply a step twice.
// A database from a NEWER build (version above the last known step) is
// refused: an older binary must not write rows it does not understand.
//
// Bump rules: never edit a released step; append a new one with the next
// version number.
//
// Thread-safety: call with a connection no other thread is using.
#pragma once

#include <cstdint>
#include <span>

#include "common/status.h"
#include "store/sqlite_connection.h"

namespace assay {

struct Migration {
  int64_t version;    // 1, 2, 3, ... in order, no gaps
  const char* what;   // one line, for logs
  const char* sql;    // one or more statements
};

// Assay's schema, oldest step first.
std::span<const Migration> SqliteMigrations();

// The version the database is at (0 for a new file). Creates schema_migrations if missing.
Result<int64_t> SchemaVersion(SqliteConnection& conn);

// Applies the steps of `steps` above the database's version. Refuses a
// database whose version is above steps.back().version.
Status ApplyMigrations(SqliteConnection& conn, std::span<const Migration> steps);

}  // namespace assay

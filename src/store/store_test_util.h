// Shared helpers of the store tests: a fresh store in a temp dir, and a raw
// sqlite3 handle for poking at the file behind the store's back.
#pragma once

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <memory>
#include <string>

#include "common/util.h"
#include "store/store.h"

namespace assay {

// A raw connection to the store's file (tests only).
class RawDb {
 public:
  explicit RawDb(const std::filesystem::path& path) {
    sqlite3* db = nullptr;
    EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    db_.reset(db);
    sqlite3_busy_timeout(db, 5000);
  }
  void Exec(const std::string& sql) {
    char* err = nullptr;
    int rc = sqlite3_exec(db_.get(), sql.c_str(), nullptr, nullptr, &err);
    EXPECT_EQ(rc, SQLITE_OK) << sql << ": " << (err ? err : "");
    sqlite3_free(err);
  }
  // First column of the first row as an integer (0 when no row).
  int64_t Int(const std::string& sql) {
    sqlite3_stmt* s = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db_.get(), sql.c_str(), -1, &s, nullptr), SQLITE_OK) << sql;
    int64_t v = 0;
    if (sqlite3_step(s) == SQLITE_ROW) v = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return v;
  }
  sqlite3* get() { return db_.get(); }

 private:
  struct Close {
    void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
  };
  std::unique_ptr<sqlite3, Close> db_;
};

class StoreTestBase : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<TempDir> dir = TempDir::Create("assay-store-test-");
    ASSERT_TRUE(dir.ok()) << dir.status().ToString();
    dir_ = std::make_unique<TempDir>(std::move(dir).value());
    path_ = dir_->path() / "assay.db";
    Reopen();
  }
  void Reopen(const SqliteOptions& options = {}) {
    store_.reset();
    Result<std::unique_ptr<Store>> s = OpenSqliteStore(path_, options);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(s).value();
  }
  static JobRecord MakeJob(const std::string& id, const std::string& key = "", int64_t created_ms = 0) {
    JobRecord j;
    j.id = id;
    j.key_id = key;
    j.name = "name of " + id;
    j.kind = JobKind::kCuda;
    j.spec_json = R"({"schema_version":1,"kind":"cuda"})";
    j.created_ms = created_ms;
    return j;
  }
  void Create(const JobRecord& j) {
    Status s = store_->CreateJob(j);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  void Move(const std::string& id, JobState to, TransitionUpdate up = {}) {
    Result<JobRecord> r = store_->Transition(id, to, up);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }

  std::unique_ptr<TempDir> dir_;
  std::filesystem::path path_;
  std::unique_ptr<Store> store_;
};

}  // namespace assay

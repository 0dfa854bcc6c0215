// The store: jobs, their state transitions, results, content-addressed blobs
// and API keys. SQLite (WAL) is the embedded default; PostgreSQL implements the
// same interface for multi-host deployments.
//
// Thread-safety: every method may be called concurrently from any thread.
// Durability: a method that returns OK has committed its transaction.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "spec/job_state.h"

namespace assay {

struct JobRecord {
  std::string id;            // "j_<24 hex>"
  std::string key_id;        // submitting API key ("" when the server runs without auth)
  std::string name;          // user label, may be empty
  JobKind kind = JobKind::kCompile;
  JobState state = JobState::kQueued;
  std::string spec_json;     // the normalized, validated spec
  std::string result_json;   // the result document; "" until one exists
  std::string error_class;   // ErrorClassName(...) when failed; "" otherwise
  std::string error_message;
  int attempts = 0;          // times the job entered compiling/running after a requeue
  int64_t created_ms = 0;    // Unix ms
  int64_t updated_ms = 0;    // Unix ms of the last transition
};

// One stored transition, in order. seq is 1-based and per job.
struct JobEvent {
  std::string job_id;
  int64_t seq = 0;
  JobState state = JobState::kQueued;
  int64_t at_ms = 0;     // Unix ms
  std::string message;   // human-readable reason, may be empty
};

struct JobFilter {
  std::optional<JobState> state;
  std::string key_id;       // only this key's jobs; "" = all
  std::string before_id;    // paging cursor: jobs created before this one
  int limit = 50;           // 1..1000
};

// What a transition writes besides the state.
struct TransitionUpdate {
  std::string message;
  std::optional<std::string> result_json;   // replaces the stored result when set
  std::string error_class;                  // for failed/timed_out/cancelled
  std::string error_message;
  bool count_attempt = false;               // increments attempts
};

struct ApiKeyInfo {
  std::string id;       // "k_<24 hex>"
  std::string name;
  int64_t created_ms = 0;
  bool revoked = false;
};

struct CreatedKey {
  ApiKeyInfo info;
  std::string secret;   // "assay_<48 hex>"; shown once, only its SHA-256 is stored
};

struct StoreStats {
  std::vector<std::pair<JobState, int64_t>> jobs_by_state;
  int64_t blobs = 0;
  int64_t blob_bytes_raw = 0;
  int64_t blob_bytes_stored = 0;
};

class Store {
 public:
  virtual ~Store() = default;

  // Inserts a job in state queued and its first event. Rejects a duplicate id.
  virtual Status CreateJob(const JobRecord& job) = 0;
  virtual Result<JobRecord> GetJob(const std::string& id) = 0;
  // Newest first.
  virtual Result<std::vector<JobRecord>> ListJobs(const JobFilter& filter) = 0;
  // Atomically moves the job to `to` if CanTransition(current, to), records the
  // event, and returns the updated record. A forbidden transition (e.g. the
  // job already ended) returns Rejected and changes nothing.
  virtual Result<JobRecord> Transition(const std::string& id, JobState to, const TransitionUpdate& update) = 0;
  // Events with seq > after_seq, in order.
  virtual Result<std::vector<JobEvent>> Events(const std::string& id, int64_t after_seq) = 0;
  // Jobs in one of `states`, oldest first (used on start-up and by the scheduler).
  virtual Result<std::vector<JobRecord>> JobsInStates(const std::vector<JobState>& states) = 0;

  // Content-addressed blobs, compressed with zstd, deduplicated by SHA-256 of the raw bytes.
  // Returns the hash.
  virtual Result<std::string> PutBlob(std::string_view data) = 0;
  virtual Result<std::string> GetBlob(const std::string& hash) = 0;
  virtual Result<bool> HasBlob(const std::string& hash) = 0;

  virtual Result<CreatedKey> CreateKey(const std::string& name) = 0;
  virtual Result<std::vector<ApiKeyInfo>> ListKeys() = 0;
  virtual Status RevokeKey(const std::string& id) = 0;
  // The key's id for a valid, unrevoked secret; Unauthorized otherwise.
  virtual Result<std::string> Authenticate(const std::string& secret) = 0;

  virtual Result<StoreStats> Stats() = 0;
};

// Opens (creating if needed) the SQLite store at `path`, in WAL mode, and
// applies pending schema migrations.
Result<std::unique_ptr<Store>> OpenSqliteStore(const std::filesystem::path& path);

// Start-up recovery: a job found compiling or running was interrupted by a
// crash. It is requeued (attempt counted) while attempts < max_attempts, else
// failed with infra_error. Returns the jobs that are queued afterwards, oldest first.
Result<std::vector<JobRecord>> RecoverInterruptedJobs(Store& store, int max_attempts);

}  // namespace assay

// The store: jobs, their state transitions, results, content-addressed blobs
// and API keys. SQLite (WAL) is the embedded default; PostgreSQL implements the
// same interface for multi-host deployments.
//
// Thread-safety: every method may be called concurrently from any thread.
// Every read-check-write operation (Transition, CreateJob, RevokeKey, ...) is
// one transaction, so two threads racing on one job cannot both win: exactly
// one transition succeeds and the other gets Rejected.
// The SQLite implementation has ONE writer connection behind a mutex (SQLite
// allows one writer at a time anyway) and a pool of reader connections; in WAL
// mode readers see the last committed snapshot and never wait for a writer, so
// reads are not serialized behind long writes. Blob compression and hashing
// run outside the writer mutex. Prepared statements are cached per connection.
// Durability: a method that returns OK has committed its transaction; with the
// default SqliteOptions (synchronous=FULL) that commit survives a kill -9 of the
// server and a power loss (docs/store.md).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
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

// A batch (POST /v1/batches): jobs submitted together, one per candidate.
struct BatchMember {
  std::string name;   // the candidate's name, unique within the batch
  JobRecord job;      // CreateBatch: the job to insert; GetBatch: its current record
};

struct BatchRecord {
  std::string id;                    // "b_<24 hex>"
  std::string key_id;                // submitting API key ("" without auth)
  std::string name;                  // user label, may be empty
  int64_t created_ms = 0;            // Unix ms
  std::vector<BatchMember> members;  // in submission order
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

  // Inserts the batch and every member's job (queued, with its first event)
  // in ONE transaction: all of them or none. Rejects a duplicate batch or job id.
  virtual Status CreateBatch(const BatchRecord& batch) = 0;
  // The batch with its members' current job records, in submission order.
  // Jobs deleted by DeleteJobsBefore have left their batch; a batch with no
  // job left is deleted with the last one.
  virtual Result<BatchRecord> GetBatch(const std::string& id) = 0;

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

  // Admin clean-up. Deletes jobs in a terminal state whose last transition
  // (updated_ms) is before `unix_ms` [Unix ms], with their events. Unfinished
  // jobs are never deleted. Returns the number of jobs deleted.
  virtual Result<int64_t> DeleteJobsBefore(int64_t unix_ms) = 0;
  // Deletes blobs created before `unix_ms` [Unix ms] whose hash does not occur
  // anywhere in the spec_json of an unfinished (queued/compiling/running) job.
  // Finished jobs do not protect their blobs: choose a cutoff at least as old
  // as the result retention. Returns the number of blobs deleted.
  virtual Result<int64_t> GarbageCollectBlobs(int64_t unix_ms) = 0;
};

struct SqliteOptions {
  // PRAGMA synchronous=FULL: every commit is fsynced, so an accepted job
  // survives a power loss, not only a process crash. false = NORMAL: faster
  // commits, still safe against kill -9, but the last commits may be lost
  // when the machine loses power.
  bool synchronous_full = true;
  // How long a write waits for a lock held by ANOTHER process (e.g. a second
  // `assay` on the same file) before failing with Infra [ms].
  int busy_timeout_ms = 5000;
  // Largest blob PutBlob accepts [bytes]; larger ones are Rejected. SQLite
  // cannot hold one value above 1e9 bytes, so larger settings are clamped.
  int64_t max_blob_bytes = int64_t{512} << 20;
  // Reader connections kept open between calls; more are opened on demand.
  int max_idle_readers = 8;
};

// Opens (creating if needed) the SQLite store at `path`, in WAL mode, and
// applies pending schema migrations.
// Refuses (Infra) a database written by a newer assay (schema version above
// the ones this build knows).
Result<std::unique_ptr<Store>> OpenSqliteStore(const std::filesystem::path& path);
Result<std::unique_ptr<Store>> OpenSqliteStore(const std::filesystem::path& path,
                                               const SqliteOptions& options);

// Start-up recovery: a job found compiling or running was interrupted by a
// crash. It is requeued (attempt counted) while attempts < max_attempts, else
// failed with infra_error. Returns the jobs that are queued afterwards, oldest first.
Result<std::vector<JobRecord>> RecoverInterruptedJobs(Store& store, int max_attempts);

}  // namespace assay

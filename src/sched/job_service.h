// The facade the HTTP API (and the drop folder) talk to: accepts jobs, answers
// questions about them, and hands them to the scheduler. One per server.
//
// Thread-safety: every method may be called concurrently.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "store/store.h"

namespace assay {

// One job of a batch: the candidate's name and its complete job spec.
struct BatchItem {
  std::string name;
  std::string spec_body;
};

class JobService {
 public:
  virtual ~JobService() = default;

  // Validates the JSON job spec (Rejected names the bad field), stores it as
  // queued and schedules it. key_id is the caller's key ("" without auth).
  virtual Result<JobRecord> Submit(const std::string& key_id, std::string_view spec_body) = 0;
  virtual Result<JobRecord> Get(const std::string& id) = 0;
  // A batch (POST /v1/batches), all or nothing: every spec is validated (as
  // Submit does) before any job is stored, then the jobs and the batch are
  // stored in one transaction and scheduled, fair-queued under key_id like any
  // job. On a rejected spec nothing is stored, the Status is that spec's, and
  // *failed_index (when not null) is set to its index in `items`.
  virtual Result<BatchRecord> SubmitBatch(const std::string& key_id, const std::string& name,
                                          const std::vector<BatchItem>& items, size_t* failed_index) = 0;
  // The batch with its members' current job records.
  virtual Result<BatchRecord> GetBatch(const std::string& id) = 0;
  virtual Result<std::vector<JobRecord>> List(const JobFilter& filter) = 0;
  // Cancels a queued, compiling or running job. Rejected if it already ended.
  virtual Result<JobRecord> Cancel(const std::string& id) = 0;
  virtual Result<std::vector<JobEvent>> Events(const std::string& id, int64_t after_seq) = 0;
  // Blocks until job `id` may have events after `after_seq`, or timeout_ms passes.
  // Returns true if woken by a new event.
  virtual bool WaitForEvents(const std::string& id, int64_t after_seq, int64_t timeout_ms) = 0;
  // 1-based position among queued jobs in the order the scheduler will take
  // them; nullopt if the job is not queued.
  virtual std::optional<int> QueuePosition(const std::string& id) = 0;

  // The document returned by GET /v1/jobs/{id}: record + result + position.
  virtual nlohmann::json JobJson(const JobRecord& job) = 0;
  virtual nlohmann::json Gpus() = 0;       // GET /v1/gpus
  virtual nlohmann::json Stats() = 0;      // GET /v1/stats
  virtual std::string Metrics() = 0;       // GET /metrics (Prometheus text format)
  virtual nlohmann::json Health() = 0;     // GET /health

  virtual Result<std::string> PutBlob(std::string_view data) = 0;
  virtual Result<std::string> GetBlob(const std::string& hash) = 0;
  virtual Result<bool> HasBlob(const std::string& hash) = 0;

  // Key id for a secret, Unauthorized otherwise.
  virtual Result<std::string> Authenticate(const std::string& secret) = 0;
};

}  // namespace assay

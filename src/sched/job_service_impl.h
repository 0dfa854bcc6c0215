// The server's JobService: validation and storage of submitted jobs, event
// wake-ups for SSE watchers, and the /v1/gpus, /v1/stats and /metrics documents.
//
// Thread-safety: all methods may be called concurrently (see JobService).
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>

#include "gpu/devices.h"
#include "sched/job_service.h"
#include "sched/scheduler.h"
#include "spec/capabilities.h"
#include "spec/limits.h"

namespace assay {

// Adds what the workers' hellos offer to `caps`: the Python kinds of every
// worker whose probe succeeded (also to cpu_kinds for `--python-device cpu`),
// and python_note, the first reason a worker gave for having none.
void AddWorkerCapabilities(const std::vector<nlohmann::json>& hellos, Capabilities* caps);

class JobServiceImpl final : public JobService {
 public:
  // `scheduler` may be null until SetScheduler (the scheduler's listener needs
  // this object first).
  JobServiceImpl(Store& store, GpuInventory gpus, Capabilities caps, SpecLimits limits = {});
  void SetScheduler(Scheduler* scheduler) { scheduler_ = scheduler; }
  // The scheduler's listener: wakes event waiters.
  void OnTransition(const JobRecord& job);

  Result<JobRecord> Submit(const std::string& key_id, std::string_view spec_body) override;
  Result<JobRecord> Get(const std::string& id) override;
  Result<BatchRecord> SubmitBatch(const std::string& key_id, const std::string& name,
                                  const std::vector<BatchItem>& items, size_t* failed_index) override;
  Result<BatchRecord> GetBatch(const std::string& id) override;
  Result<std::vector<JobRecord>> List(const JobFilter& filter) override;
  Result<JobRecord> Cancel(const std::string& id) override;
  Result<std::vector<JobEvent>> Events(const std::string& id, int64_t after_seq) override;
  bool WaitForEvents(const std::string& id, int64_t after_seq, int64_t timeout_ms) override;
  std::optional<int> QueuePosition(const std::string& id) override;
  nlohmann::json JobJson(const JobRecord& job) override;
  nlohmann::json Gpus() override;
  nlohmann::json Stats() override;
  std::string Metrics() override;
  nlohmann::json Health() override;
  Result<std::string> PutBlob(std::string_view data) override;
  Result<std::string> GetBlob(const std::string& hash) override;
  Result<bool> HasBlob(const std::string& hash) override;
  Result<std::string> Authenticate(const std::string& secret) override;

 private:
  // caps_ plus what the workers offer, when `spec` involves a Python kind
  // (may wait for the workers' first hello).
  Capabilities CapabilitiesFor(const JobSpec& spec);

  Store& store_;
  GpuInventory gpus_;
  Capabilities caps_;
  SpecLimits limits_;
  Scheduler* scheduler_ = nullptr;
  int64_t started_ms_;

  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t generation_ = 0;   // GUARDED_BY(mu_); bumped on every transition
  std::atomic<int64_t> submitted_{0}, rejected_{0};
};

}  // namespace assay

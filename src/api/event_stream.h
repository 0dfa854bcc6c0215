// GET /v1/jobs/{id}/events as Server-Sent Events. Replays the stored events
// after the client's Last-Event-ID, then follows new ones with
// JobService::WaitForEvents until the job reaches a terminal state; ends with
// `event: end` carrying the job document. Wire format in docs/api.md.
//
// Thread-safety: EventStreamGate may be shared by all connection threads.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "api/http.h"
#include "store/store.h"

namespace assay {
class JobService;
}

namespace assay::api {

// Counts open streams against a cap, and tells open streams to end on shutdown.
class EventStreamGate {
 public:
  explicit EventStreamGate(int64_t max_streams) : max_(max_streams) {}
  // Takes a slot; false when max_streams are already open.
  bool TryAcquire();
  void Release();
  int64_t open() const { return open_.load(); }
  void Shutdown() { stopping_ = true; }
  bool stopping() const { return stopping_.load(); }

 private:
  const int64_t max_;
  std::atomic<int64_t> open_{0};
  std::atomic<bool> stopping_{false};
};

// {"seq": 3, "state": "running", "at": "2026-...Z", "at_ms": 1790000000000, "message": "..."}
nlohmann::json EventJson(const JobEvent& e);

// Makes `res` an event stream of `job_id` starting after `after_seq`.
// REQUIRES: the job exists and a slot was taken from `gate`; the slot is
// released when the response is destroyed (stream ended or client gone).
void StartEventStream(JobService& service, EventStreamGate& gate, const std::string& job_id,
                      int64_t after_seq, int64_t keepalive_ms, httplib::Response& res);

}  // namespace assay::api

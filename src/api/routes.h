// Route handlers beyond the core job routes of server.cc: the seed-002
// evaluation endpoint (POST /v1/eval, POST /, GET /v1/eval/{id}) and batches
// (POST /v1/batches, GET /v1/batches/{id}, POST /v1/batches/{id}/cancel).
// server.cc authenticates and routes; these translate (docs/api.md).
//
// Thread-safety: handlers run concurrently on connection threads; the context
// holds only thread-safe parts.
#pragma once

#include <cstdint>
#include <string>

#include "api/event_stream.h"
#include "api/http.h"

namespace assay {
class JobService;
}

namespace assay::api {

struct RouteContext {
  JobService& service;
  // Requests that wait for a job (POST /v1/eval) hold a connection thread
  // like an event stream does, so they take a slot of the same gate; its
  // stopping() ends their wait when the server stops.
  EventStreamGate& gate;
  // Longest a waiting POST /v1/eval waits for the job to end, beyond the
  // job's own timeout: queue time and a retry [s].
  int64_t eval_queue_wait_s = 600;
  // Interval at which a waiting request re-checks its job and the gate [ms].
  int64_t wait_slice_ms = 250;
};

// Whether a caller with key `caller` may see an object owned by `owner`: its
// own, ones submitted without a key, and everything when the server runs
// without auth (caller ""). Others' objects answer 404 as if absent.
bool Visible(const std::string& caller, const std::string& owner);

void PostEval(const RouteContext& ctx, const std::string& key_id, const httplib::Request& req,
              httplib::Response& res);
void GetEval(const RouteContext& ctx, const std::string& key_id, const std::string& job_id,
             httplib::Response& res);

void PostBatch(const RouteContext& ctx, const std::string& key_id, const httplib::Request& req,
               httplib::Response& res);
void GetBatch(const RouteContext& ctx, const std::string& key_id, const std::string& batch_id,
              httplib::Response& res);
void CancelBatch(const RouteContext& ctx, const std::string& key_id, const std::string& batch_id,
                 httplib::Response& res);

// Accepts `want` with or without parameters (charset=...), or no Content-Type.
bool ContentTypeIs(const httplib::Request& req, std::string_view want);

}  // namespace assay::api

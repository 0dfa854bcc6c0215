// The HTTP API: JSON under /v1 (jobs, events over SSE, batches, blobs, GPUs,
// stats, the seed-002 /v1/eval), plus /health, /metrics, the seed-003 /info
// and seed 002's POST /, in front of a JobService.
// docs/api.md is the reference; docs/openapi.yaml the machine-readable form.
//
// Threading model: httplib hands every accepted connection to a pool of
// `threads` threads; a connection holds its thread until it closes. Event
// streams hold theirs for the whole life of a job, so at most
// `max_sse_streams` may be open at once (more get 503), which keeps
// `threads - max_sse_streams` threads for ordinary requests. Idle keep-alive
// connections are closed after a few seconds so they cannot pin threads.
//
// Thread-safety: Bind() and Serve() are called once, in that order, from one
// thread; Stop() may be called from any thread (also before Serve()).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "common/status.h"

namespace assay {

class JobService;

struct ApiOptions {
  // Address to listen on. "127.0.0.1" keeps the server private to this host;
  // "0.0.0.0" or "::" exposes it (auth is then mandatory).
  std::string host = "127.0.0.1";

  // TCP port; 0 picks a free ephemeral port (Bind() returns it).
  int port = 8080;

  // Accept every request without an API key (key id ""). Only allowed when
  // `host` is a loopback address (127.0.0.0/8, ::1, localhost): Bind() returns
  // Rejected otherwise, so a public server can never run open.
  bool no_auth = false;

  // Largest request body accepted [bytes]; larger bodies get 413 (class
  // rejected) without being read.
  int64_t max_request_bytes = int64_t{64} << 20;

  // Event streams (GET /v1/jobs/{id}/events) open at once; one more gets 503
  // (class infra_error). Must be below `threads`.
  int64_t max_sse_streams = 64;

  // Connection threads. 0 = max_sse_streams + 32.
  int threads = 0;

  // Interval between `: keepalive` comments on an idle event stream [ms];
  // keeps proxies from closing the stream and notices a vanished client.
  int64_t sse_keepalive_ms = 15'000;

  // How long an idle keep-alive connection may hold a thread [s].
  int keep_alive_timeout_s = 5;

  // Socket read/write timeouts for request bodies and responses [s]. A client
  // that stops sending or reading for this long is disconnected.
  int io_timeout_s = 30;

  // POST /v1/eval without ?wait waits for the job to end at most its
  // timeout_s plus this [s] (queue time, a retry); then it answers 202 and the
  // client polls. Waiting requests count against max_sse_streams.
  int64_t eval_queue_wait_s = 600;
};

// True for 127.0.0.0/8, ::1, [::1] and "localhost".
bool IsLoopbackHost(const std::string& host);

class ApiServer {
 public:
  // `service` must outlive the server.
  ApiServer(JobService& service, ApiOptions options);
  ~ApiServer();  // stops and joins every connection thread
  ApiServer(const ApiServer&) = delete;
  ApiServer& operator=(const ApiServer&) = delete;

  // Validates the options and binds the listening socket. Returns the bound
  // port. Rejected: bad options (no_auth on a public host, threads too few);
  // Infra: the port could not be bound.
  Result<int> Bind();
  // Accepts connections until Stop(). REQUIRES: Bind() succeeded.
  void Serve();
  // Stops accepting, ends open event streams, and makes Serve() return.
  void Stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace assay

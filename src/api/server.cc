#include "api/server.h"

#include <arpa/inet.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <thread>

#include <nlohmann/json.hpp>

#include "api/event_stream.h"
#include "api/http.h"
#include "api/http_error.h"
#include "api/routes.h"
#include "common/log.h"
#include "common/util.h"
#include "sched/job_service.h"

namespace assay {
namespace {

using api::ContentTypeIs;
using api::SetError;
using api::SetJson;
using nlohmann::json;

// Per-request context. httplib runs a request start to finish (pre-routing
// handler, handler, logger) on one connection thread, so thread_local is a
// request-local without changing httplib's types.
struct RequestContext {
  int64_t start_ms = -1;   // monotonic; -1 if the request never reached routing
  std::string key_id;      // "" without auth or before authentication
};
thread_local RequestContext t_request;

bool IsOpenPath(const std::string& path) { return path == "/health" || path == "/metrics"; }

bool StartsWithNoCase(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(s[i])) != prefix[i]) return false;
  return true;
}

std::string SecretFrom(const httplib::Request& req) {
  std::string auth = req.get_header_value("Authorization");
  if (StartsWithNoCase(auth, "bearer ")) {
    auth.erase(0, 7);
    while (!auth.empty() && auth.front() == ' ') auth.erase(0, 1);
    return auth;
  }
  return req.get_header_value("X-API-Key");
}

bool IsHexHash(const std::string& s) {
  return s.size() == 64 &&
         std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

std::optional<int64_t> ParseInt(const std::string& s) {
  if (s.empty() || s.size() > 18) return std::nullopt;
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

// Seed 003's /info document for one GPU of JobService::Gpus().
json InfoEntry(const json& gpu) {
  json cc = json::array({0, 0});
  std::string text = gpu.value("compute_capability", std::string());
  if (auto dot = text.find('.'); dot != std::string::npos) {
    cc = json::array({std::atoi(text.substr(0, dot).c_str()), std::atoi(text.substr(dot + 1).c_str())});
  }
  return {{"device_name", gpu.value("name", std::string())},
          {"compute_capability", cc},
          {"total_memory_mb", gpu.value("total_memory_bytes", int64_t{0}) >> 20},
          {"multiprocessor_count", gpu.value("sm_count", 0)},
          {"index", gpu.value("index", 0)}};
}

}  // namespace

bool IsLoopbackHost(const std::string& host) {
  if (host == "localhost" || host == "::1" || host == "[::1]") return true;
  in_addr addr{};
  if (inet_pton(AF_INET, host.c_str(), &addr) != 1) return false;
  return (ntohl(addr.s_addr) >> 24) == 127;
}

struct ApiServer::Impl {
  Impl(JobService& s, ApiOptions o)
      : service(s), options(std::move(o)), gate(options.max_sse_streams),
        routes{service, gate, options.eval_queue_wait_s} {}

  void Install();
  bool Authenticate(const httplib::Request& req, httplib::Response& res);
  // The job if it exists and the caller may see it (its own key's jobs, jobs
  // submitted without a key, or any job when the server runs without auth).
  Result<JobRecord> VisibleJob(const std::string& id);

  void SubmitJob(const httplib::Request& req, httplib::Response& res);
  void ListJobs(const httplib::Request& req, httplib::Response& res);
  void JobEvents(const httplib::Request& req, httplib::Response& res);
  void JobResult(const httplib::Request& req, httplib::Response& res);
  void PutBlob(const httplib::Request& req, httplib::Response& res);
  void GetBlob(const httplib::Request& req, httplib::Response& res);
  void Info(httplib::Response& res);

  JobService& service;
  ApiOptions options;
  api::EventStreamGate gate;
  api::RouteContext routes;  // for the handlers of routes.h
  httplib::Server svr;
  std::atomic<bool> stopped{false};
  std::atomic<bool> serving{false};
  std::atomic<bool> serve_done{false};
  bool bound = false;
};

bool ApiServer::Impl::Authenticate(const httplib::Request& req, httplib::Response& res) {
  t_request.key_id.clear();
  if (options.no_auth || IsOpenPath(req.path)) return true;
  std::string secret = SecretFrom(req);
  Status failure = Status::Unauthorized("missing API key: send 'Authorization: Bearer <key>' or 'X-API-Key: <key>'");
  if (!secret.empty()) {
    auto key = service.Authenticate(secret);
    if (key.ok()) {
      t_request.key_id = *key;
      return true;
    }
    failure = key.status().error_class() == ErrorClass::kUnauthorized
                  ? Status::Unauthorized("invalid or revoked API key")
                  : key.status();
  }
  SetError(res, failure);
  res.set_header("WWW-Authenticate", "Bearer");
  return false;
}

Result<JobRecord> ApiServer::Impl::VisibleJob(const std::string& id) {
  auto job = service.Get(id);
  if (!job.ok()) return job;
  if (!api::Visible(t_request.key_id, job->key_id)) {
    return Status::NotFound("no job " + id);  // other keys' jobs do not exist for this caller
  }
  return job;
}

void ApiServer::Impl::SubmitJob(const httplib::Request& req, httplib::Response& res) {
  if (!ContentTypeIs(req, "application/json")) {
    return SetError(res, Status::Rejected("Content-Type must be application/json"), 415);
  }
  try {
    [[maybe_unused]] json doc = json::parse(req.body);
  } catch (const json::parse_error& e) {
    return SetError(res, Status::Rejected("malformed JSON at byte " + std::to_string(e.byte) + ": " + e.what()));
  }
  auto job = service.Submit(t_request.key_id, req.body);
  if (!job.ok()) return SetError(res, job.status());
  res.set_header("Location", "/v1/jobs/" + job->id);
  SetJson(res, service.JobJson(*job), 201);
}

void ApiServer::Impl::ListJobs(const httplib::Request& req, httplib::Response& res) {
  JobFilter filter;
  filter.key_id = t_request.key_id;
  if (req.has_param("state")) {
    auto s = JobStateFromName(req.get_param_value("state"));
    if (!s) return SetError(res, Status::Rejected("unknown state '" + req.get_param_value("state") + "'", "state"));
    filter.state = *s;
  }
  if (req.has_param("limit")) {
    auto n = ParseInt(req.get_param_value("limit"));
    if (!n || *n < 1 || *n > 1000) return SetError(res, Status::Rejected("limit must be 1..1000", "limit"));
    filter.limit = static_cast<int>(*n);
  }
  filter.before_id = req.get_param_value("before");
  auto jobs = service.List(filter);
  if (!jobs.ok()) return SetError(res, jobs.status());
  json list = json::array();
  for (const JobRecord& j : *jobs) list.push_back(service.JobJson(j));
  json next = nullptr;
  if (static_cast<int>(jobs->size()) == filter.limit && !jobs->empty()) next = jobs->back().id;
  SetJson(res, {{"jobs", std::move(list)}, {"next", std::move(next)}});
}

void ApiServer::Impl::JobEvents(const httplib::Request& req, httplib::Response& res) {
  std::string id = req.matches[1];
  auto job = VisibleJob(id);
  if (!job.ok()) return SetError(res, job.status());
  int64_t after = 0;
  std::string resume = req.has_header("Last-Event-ID") ? req.get_header_value("Last-Event-ID")
                                                        : req.get_param_value("after");
  if (!resume.empty()) {
    auto n = ParseInt(resume);
    if (!n) return SetError(res, Status::Rejected("Last-Event-ID must be an event seq", "Last-Event-ID"));
    after = *n;
  }
  if (!gate.TryAcquire()) {
    res.set_header("Retry-After", "5");
    return SetError(res, Status::Infra("too many event streams, retry later"), 503);
  }
  api::StartEventStream(service, gate, id, after, options.sse_keepalive_ms, res);
}

void ApiServer::Impl::JobResult(const httplib::Request& req, httplib::Response& res) {
  auto job = VisibleJob(req.matches[1]);
  if (!job.ok()) return SetError(res, job.status());
  if (!IsTerminal(job->state)) {
    auto position = service.QueuePosition(job->id);
    return SetJson(res,
                   {{"id", job->id},
                    {"state", std::string(JobStateName(job->state))},
                    {"queue_position", position ? json(*position) : json(nullptr)}},
                   202);
  }
  if (job->result_json.empty()) {
    return SetError(res, Status::NotFound("job " + job->id + " ended (" + std::string(JobStateName(job->state)) +
                                          ") without a result document"));
  }
  res.status = 200;
  res.set_content(job->result_json, "application/json");
}

void ApiServer::Impl::PutBlob(const httplib::Request& req, httplib::Response& res) {
  if (!ContentTypeIs(req, "application/octet-stream")) {
    return SetError(res, Status::Rejected("Content-Type must be application/octet-stream"), 415);
  }
  auto hash = service.PutBlob(req.body);
  if (!hash.ok()) return SetError(res, hash.status());
  res.set_header("Location", "/v1/blobs/" + *hash);
  SetJson(res, {{"hash", *hash}, {"size", req.body.size()}}, 201);
}

void ApiServer::Impl::GetBlob(const httplib::Request& req, httplib::Response& res) {
  std::string hash = req.matches[1];
  if (!IsHexHash(hash)) return SetError(res, Status::Rejected("blob hash must be 64 lower-case hex digits", "hash"));
  if (req.method == "HEAD") {
    auto has = service.HasBlob(hash);
    if (!has.ok()) return SetError(res, has.status());
    res.status = *has ? 200 : 404;
    return;
  }
  auto data = service.GetBlob(hash);
  if (!data.ok()) return SetError(res, data.status());
  res.status = 200;
  res.set_content(std::move(*data), "application/octet-stream");
}

void ApiServer::Impl::Info(httplib::Response& res) {
  json inv = service.Gpus();
  const json& gpus = inv.is_array() ? inv : inv.value("gpus", json::array());
  if (gpus.empty()) {
    std::string reason = inv.is_object() ? inv.value("reason", std::string("no GPU")) : "no GPU";
    return SetJson(res, {{"success", false}, {"error", "no GPU available: " + reason}}, 503);
  }
  json all = json::array();
  for (const json& g : gpus) all.push_back(InfoEntry(g));
  SetJson(res, {{"success", true}, {"info", all.front()}, {"gpus", all}});
}

void ApiServer::Impl::Install() {
  const size_t threads = static_cast<size_t>(options.threads);
  // httplib owns the queue it gets from this factory (it deletes it).
  svr.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  svr.set_payload_max_length(static_cast<size_t>(options.max_request_bytes));
  svr.set_keep_alive_timeout(options.keep_alive_timeout_s);
  svr.set_keep_alive_max_count(100);
  svr.set_read_timeout(options.io_timeout_s, 0);
  svr.set_write_timeout(options.io_timeout_s, 0);

  svr.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    t_request.start_ms = MonotonicMs();
    // Refuse an announced oversized body before reading it (httplib would
    // otherwise drain it all before answering 413).
    if (auto length = ParseInt(req.get_header_value("Content-Length"));
        length && *length > options.max_request_bytes) {
      SetError(res, Status::Rejected("request body exceeds " + std::to_string(options.max_request_bytes) + " bytes"),
               413);
      res.set_header("Connection", "close");
      return httplib::Server::HandlerResponse::Handled;
    }
    if (Authenticate(req, res)) return httplib::Server::HandlerResponse::Unhandled;
    // The body (if any) was not read; closing the connection keeps it from
    // being parsed as the next request.
    if (req.get_header_value("Content-Length") != "" && req.get_header_value("Content-Length") != "0") {
      res.set_header("Connection", "close");
    }
    return httplib::Server::HandlerResponse::Handled;
  });
  // Turns httplib's own failures (unknown route, 413, malformed request) into
  // the JSON error document; responses that already have a body are left alone.
  svr.set_error_handler(httplib::Server::HandlerWithResponse([this](const httplib::Request& req,
                                                                      httplib::Response& res) {
    if (!res.body.empty() || req.method == "HEAD") return httplib::Server::HandlerResponse::Unhandled;
    int status = res.status;
    if (status == 413) {
      SetError(res, Status::Rejected("request body exceeds " + std::to_string(options.max_request_bytes) + " bytes"), 413);
    } else if (status == 404) {
      SetError(res, Status::NotFound("no route for " + req.method + " " + req.path), 404);
    } else if (status >= 500) {
      SetError(res, Status::Infra("internal error"), status);
    } else {
      SetError(res, Status::Rejected("bad request"), status);
    }
    return httplib::Server::HandlerResponse::Handled;
  }));
  svr.set_exception_handler([](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "unknown exception";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    log::Event("http.exception").Kv("method", req.method).Kv("path", req.path).Kv("what", what).Error();
    SetError(res, Status::Infra("internal error: " + what), 500);
  });
  svr.set_logger([](const httplib::Request& req, const httplib::Response& res) {
    int64_t ms = t_request.start_ms >= 0 ? MonotonicMs() - t_request.start_ms : -1;
    // The path only: query strings carry no secrets today, but keys never
    // travel in URLs and logging less keeps it that way.
    log::Event("http.request")
        .Kv("method", req.method)
        .Kv("path", req.path)
        .Kv("status", res.status)
        .Kv("duration_ms", ms)
        .Kv("key", t_request.key_id.empty() ? "-" : t_request.key_id)
        .Info();
    t_request = RequestContext{};
  });

  using Req = const httplib::Request&;
  using Res = httplib::Response&;
  svr.Get("/health", [this](Req, Res res) { SetJson(res, service.Health()); });
  svr.Get("/metrics", [this](Req, Res res) {
    res.set_content(service.Metrics(), "text/plain; version=0.0.4; charset=utf-8");
  });
  svr.Get("/info", [this](Req, Res res) { Info(res); });
  svr.Get("/v1/gpus", [this](Req, Res res) { SetJson(res, service.Gpus()); });
  svr.Get("/v1/stats", [this](Req, Res res) { SetJson(res, service.Stats()); });
  svr.Post("/v1/jobs", [this](Req req, Res res) { SubmitJob(req, res); });
  svr.Get("/v1/jobs", [this](Req req, Res res) { ListJobs(req, res); });
  svr.Get(R"(/v1/jobs/([^/]+))", [this](Req req, Res res) {
    auto job = VisibleJob(req.matches[1]);
    if (!job.ok()) return SetError(res, job.status());
    SetJson(res, service.JobJson(*job));
  });
  svr.Post(R"(/v1/jobs/([^/]+)/cancel)", [this](Req req, Res res) {
    auto job = VisibleJob(req.matches[1]);
    if (!job.ok()) return SetError(res, job.status());
    auto cancelled = service.Cancel(job->id);
    if (!cancelled.ok()) return SetError(res, cancelled.status());
    SetJson(res, service.JobJson(*cancelled));
  });
  svr.Get(R"(/v1/jobs/([^/]+)/events)", [this](Req req, Res res) { JobEvents(req, res); });
  svr.Get(R"(/v1/jobs/([^/]+)/result)", [this](Req req, Res res) { JobResult(req, res); });
  // Seed 002 posts its requests to "/"; nothing else uses POST / (docs/api.md).
  svr.Post("/v1/eval", [this](Req req, Res res) { api::PostEval(routes, t_request.key_id, req, res); });
  svr.Post("/", [this](Req req, Res res) { api::PostEval(routes, t_request.key_id, req, res); });
  svr.Get(R"(/v1/eval/([^/]+))", [this](Req req, Res res) {
    api::GetEval(routes, t_request.key_id, req.matches[1], res);
  });
  svr.Post("/v1/batches", [this](Req req, Res res) { api::PostBatch(routes, t_request.key_id, req, res); });
  svr.Get(R"(/v1/batches/([^/]+))", [this](Req req, Res res) {
    api::GetBatch(routes, t_request.key_id, req.matches[1], res);
  });
  svr.Post(R"(/v1/batches/([^/]+)/cancel)", [this](Req req, Res res) {
    api::CancelBatch(routes, t_request.key_id, req.matches[1], res);
  });
  svr.Post("/v1/blobs", [this](Req req, Res res) { PutBlob(req, res); });
  svr.Get(R"(/v1/blobs/([^/]+))", [this](Req req, Res res) { GetBlob(req, res); });  // GET and HEAD
}

ApiServer::ApiServer(JobService& service, ApiOptions options)
    : impl_(std::make_unique<Impl>(service, std::move(options))) {}

ApiServer::~ApiServer() { Stop(); }

Result<int> ApiServer::Bind() {
  ApiOptions& o = impl_->options;
  if (o.no_auth && !IsLoopbackHost(o.host)) {
    return Status::Rejected("--no-auth is only allowed on a loopback host (127.0.0.1, ::1, localhost), not '" +
                                o.host + "'",
                            "no_auth");
  }
  if (o.max_sse_streams < 0) return Status::Rejected("max_sse_streams must be >= 0", "max_sse_streams");
  if (o.threads == 0) o.threads = static_cast<int>(o.max_sse_streams) + 32;
  if (o.threads <= o.max_sse_streams) {
    return Status::Rejected("threads (" + std::to_string(o.threads) + ") must exceed max_sse_streams (" +
                                std::to_string(o.max_sse_streams) + ") so ordinary requests keep threads",
                            "threads");
  }
  if (o.max_request_bytes <= 0) return Status::Rejected("max_request_bytes must be positive", "max_request_bytes");
  if (impl_->bound) return Status::Rejected("already bound");
  impl_->Install();
  int port = o.port;
  if (o.port == 0) {
    port = impl_->svr.bind_to_any_port(o.host);
    if (port < 0) return Status::Infra("cannot bind " + o.host + " (ephemeral port)");
  } else if (!impl_->svr.bind_to_port(o.host, o.port)) {
    return Status::Infra("cannot bind " + o.host + ":" + std::to_string(o.port) + " (in use, or not permitted)");
  }
  impl_->bound = true;
  log::Event("api.listening").Kv("host", o.host).Kv("port", port).Kv("auth", o.no_auth ? "off" : "on")
      .Kv("threads", o.threads).Kv("max_sse_streams", o.max_sse_streams).Info();
  return port;
}

void ApiServer::Serve() {
  if (!impl_->bound) return;
  impl_->serving = true;
  if (!impl_->stopped) impl_->svr.listen_after_bind();
  impl_->serve_done = true;
}

void ApiServer::Stop() {
  impl_->stopped = true;
  impl_->gate.Shutdown();
  if (!impl_->serving) return;
  // Serve() may not have reached httplib's accept loop yet; stop() before
  // that would be lost.
  while (!impl_->svr.is_running() && !impl_->serve_done) std::this_thread::yield();
  impl_->svr.stop();
}

}  // namespace assay

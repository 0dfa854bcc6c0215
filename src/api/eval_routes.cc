// POST /v1/eval (and POST /): a seed-002 request mapped to a kernelbench job,
// submitted like POST /v1/jobs, answered in seed 002's shape once the job
// ends (or at once with ?wait=0). GET /v1/eval/{id}: the same answer later.
#include <algorithm>
#include <cctype>
#include <optional>

#include <nlohmann/json.hpp>

#include "api/http_error.h"
#include "api/routes.h"
#include "common/util.h"
#include "sched/job_service.h"
#include "spec/seed002.h"

namespace assay::api {
namespace {

using nlohmann::json;

// Longest ?wait=N a client may ask for [s].
constexpr int64_t kMaxWaitS = 7200;

std::optional<int64_t> ParseSeconds(const std::string& s) {
  if (s.empty() || s.size() > 9 || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  return std::stoll(s);
}

// Holds a slot of the gate for the life of a waiting request.
class GateSlot {
 public:
  explicit GateSlot(EventStreamGate& gate) : gate_(gate), held_(gate.TryAcquire()) {}
  ~GateSlot() {
    if (held_) gate_.Release();
  }
  GateSlot(const GateSlot&) = delete;
  GateSlot& operator=(const GateSlot&) = delete;
  bool held() const { return held_; }

 private:
  EventStreamGate& gate_;
  bool held_;
};

// Waits until job `id` ends, the deadline passes or the server stops; returns
// the last record seen.
Result<JobRecord> WaitForEnd(const RouteContext& ctx, const std::string& id, int64_t deadline_ms) {
  int64_t seen = 0;
  while (true) {
    auto job = ctx.service.Get(id);
    if (!job.ok() || IsTerminal(job->state)) return job;
    int64_t left = deadline_ms - MonotonicMs();
    if (left <= 0 || ctx.gate.stopping()) return job;
    if (auto ev = ctx.service.Events(id, seen); ev.ok() && !ev->empty()) seen = ev->back().seq;
    ctx.service.WaitForEvents(id, seen, std::min(left, ctx.wait_slice_ms));
  }
}

void Answer(const RouteContext& ctx, const JobRecord& job, const std::vector<std::string>& warnings,
            int status_if_pending, httplib::Response& res) {
  if (!IsTerminal(job.state)) res.set_header("Location", "/v1/jobs/" + job.id);
  SetJson(res, Seed002Response(ctx.service.JobJson(job), warnings), IsTerminal(job.state) ? 200 : status_if_pending);
}

}  // namespace

bool Visible(const std::string& caller, const std::string& owner) {
  return caller.empty() || owner.empty() || caller == owner;
}

bool ContentTypeIs(const httplib::Request& req, std::string_view want) {
  if (!req.has_header("Content-Type")) return true;
  std::string ct = req.get_header_value("Content-Type");
  if (ct.size() < want.size()) return false;
  for (size_t i = 0; i < want.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(ct[i])) != want[i]) return false;
  return ct.size() == want.size() || ct[want.size()] == ';' || ct[want.size()] == ' ';
}

void PostEval(const RouteContext& ctx, const std::string& key_id, const httplib::Request& req,
              httplib::Response& res) {
  if (!ContentTypeIs(req, "application/json"))
    return SetError(res, Status::Rejected("Content-Type must be application/json"), 415);
  auto mapping = ParseSeed002Request(req.body);
  if (!mapping.ok()) return SetError(res, mapping.status());

  // wait: absent = until the job ends (bounded), 0 = answer at once, N = at most N s.
  std::optional<int64_t> wait_s;
  if (req.has_param("wait")) {
    wait_s = ParseSeconds(req.get_param_value("wait"));
    if (!wait_s || *wait_s > kMaxWaitS)
      return SetError(res, Status::Rejected("wait must be 0..." + std::to_string(kMaxWaitS) + " seconds", "wait"));
  }
  bool wait = !wait_s || *wait_s > 0;
  // Take the slot before submitting: a refused request leaves no job behind.
  std::optional<GateSlot> slot;
  if (wait) {
    slot.emplace(ctx.gate);
    if (!slot->held()) {
      res.set_header("Retry-After", "5");
      return SetError(res,
                      Status::Infra("too many requests are waiting for results, retry later (or send ?wait=0 "
                                    "and poll GET /v1/eval/{id})"),
                      503);
    }
  }

  auto job = ctx.service.Submit(key_id, mapping->spec.dump());
  if (!job.ok()) {
    const Status& s = job.status();
    if (s.error_class() != ErrorClass::kRejected) return SetError(res, s);
    return SetError(res, Status::Rejected(s.message(), Seed002Field(s.field(), mapping->legacy)));
  }
  if (!wait) {
    res.set_header("Location", "/v1/jobs/" + job->id);
    return SetJson(res, Seed002Response(ctx.service.JobJson(*job), mapping->warnings), 201);
  }
  int64_t budget_s = wait_s ? *wait_s
                            : mapping->spec.value("timeout_s", int64_t{kSeed002DefaultTimeoutS}) + ctx.eval_queue_wait_s;
  auto last = WaitForEnd(ctx, job->id, MonotonicMs() + budget_s * 1000);
  if (!last.ok()) return SetError(res, last.status());
  Answer(ctx, *last, mapping->warnings, 202, res);
}

void GetEval(const RouteContext& ctx, const std::string& key_id, const std::string& job_id,
             httplib::Response& res) {
  auto job = ctx.service.Get(job_id);
  if (job.ok() && !Visible(key_id, job->key_id)) job = Status::NotFound("no job " + job_id);
  if (!job.ok()) return SetError(res, job.status());
  if (job->kind != JobKind::kKernelbench)
    return SetError(res, Status::Rejected("job " + job_id + " is a '" + std::string(JobKindName(job->kind)) +
                                          "' job; /v1/eval/{id} answers for kernelbench jobs (use "
                                          "/v1/jobs/{id})"));
  Answer(ctx, *job, {}, 202, res);
}

}  // namespace assay::api

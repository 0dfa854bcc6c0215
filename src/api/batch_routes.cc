// POST /v1/batches, GET /v1/batches/{id}, POST /v1/batches/{id}/cancel: a
// template and candidates expanded into jobs (spec/batch.h), submitted all or
// nothing, reported with a per-candidate line and a summary.
#include <nlohmann/json.hpp>

#include "api/http_error.h"
#include "api/routes.h"
#include "common/util.h"
#include "sched/job_service.h"
#include "spec/batch.h"

namespace assay::api {
namespace {

using nlohmann::json;

Result<BatchRecord> VisibleBatch(const RouteContext& ctx, const std::string& key_id, const std::string& id) {
  auto batch = ctx.service.GetBatch(id);
  if (batch.ok() && !Visible(key_id, batch->key_id)) return Status::NotFound("no batch " + id);
  return batch;
}

json BatchJson(const BatchRecord& b) {
  json entries = json::array();
  for (const BatchMember& m : b.members) {
    const JobRecord& j = m.job;
    json doc = {{"id", j.id}, {"state", std::string(JobStateName(j.state))}};
    doc["error"] = j.error_class.empty() ? json(nullptr)
                                         : json{{"class", j.error_class}, {"message", j.error_message}};
    json result = j.result_json.empty() ? json(nullptr) : json::parse(j.result_json, nullptr, false);
    doc["result"] = result.is_discarded() ? json(nullptr) : std::move(result);
    entries.push_back(BatchEntry(m.name, doc));
  }
  json summary = BatchSummary(entries);
  return {{"batch_id", b.id},
          {"name", b.name},
          {"created_at", FormatUnixMs(b.created_ms)},
          {"jobs", std::move(entries)},
          {"summary", std::move(summary)}};
}

}  // namespace

void PostBatch(const RouteContext& ctx, const std::string& key_id, const httplib::Request& req,
               httplib::Response& res) {
  if (!ContentTypeIs(req, "application/json"))
    return SetError(res, Status::Rejected("Content-Type must be application/json"), 415);
  json body;
  try {
    body = json::parse(req.body);
  } catch (const json::exception& e) {
    size_t byte = 0;
    if (const auto* pe = dynamic_cast<const json::parse_error*>(&e)) byte = pe->byte;
    return SetError(res, Status::Rejected("malformed JSON at byte " + std::to_string(byte) + ": " + e.what()));
  }
  auto plan = ExpandBatch(body);
  if (!plan.ok()) return SetError(res, plan.status());
  std::vector<BatchItem> items;
  items.reserve(plan->candidates.size());
  for (const BatchCandidate& c : plan->candidates) items.push_back(BatchItem{c.name, c.spec.dump()});
  size_t failed = items.size();
  auto batch = ctx.service.SubmitBatch(key_id, plan->name, items, &failed);
  if (!batch.ok()) {
    if (failed < items.size()) return SetError(res, BatchCandidateError(batch.status(), *plan, failed));
    return SetError(res, batch.status());
  }
  json jobs = json::array();
  for (const BatchMember& m : batch->members) jobs.push_back({{"name", m.name}, {"job_id", m.job.id}});
  res.set_header("Location", "/v1/batches/" + batch->id);
  SetJson(res, {{"batch_id", batch->id}, {"name", batch->name}, {"jobs", std::move(jobs)}}, 201);
}

void GetBatch(const RouteContext& ctx, const std::string& key_id, const std::string& batch_id,
              httplib::Response& res) {
  auto batch = VisibleBatch(ctx, key_id, batch_id);
  if (!batch.ok()) return SetError(res, batch.status());
  SetJson(res, BatchJson(*batch));
}

void CancelBatch(const RouteContext& ctx, const std::string& key_id, const std::string& batch_id,
                 httplib::Response& res) {
  auto batch = VisibleBatch(ctx, key_id, batch_id);
  if (!batch.ok()) return SetError(res, batch.status());
  for (const BatchMember& m : batch->members) {
    if (IsTerminal(m.job.state)) continue;
    // A job that ends between the read and the cancel is left as it ended.
    auto cancelled = ctx.service.Cancel(m.job.id);
    if (!cancelled.ok() && cancelled.status().error_class() != ErrorClass::kRejected)
      return SetError(res, cancelled.status());
  }
  GetBatch(ctx, key_id, batch_id, res);
}

}  // namespace assay::api

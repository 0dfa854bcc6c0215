#include "cli/commands.h"

#include <optional>
#include <ostream>

#include <nlohmann/json.hpp>

#include "cli/client.h"
#include "cli/format.h"
#include "cli/wait.h"
#include "spec/job_state.h"

namespace assay::cli {
namespace {

using nlohmann::json;

ApiClient MakeClient(const CommonOptions& c) {
  ClientOptions o;
  o.server = c.server;
  return ApiClient(o);
}

void PrintJson(const json& doc, std::ostream& out) {
  out << doc.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
}

std::string ErrorClassOf(const json& job) {
  if (job.contains("error") && job["error"].is_object()) return job["error"].value("class", std::string());
  if (job.contains("error_class") && job["error_class"].is_string()) return job["error_class"];
  if (job.contains("result") && job["result"].is_object() && job["result"].contains("error") &&
      job["result"]["error"].is_object())
    return job["result"]["error"].value("class", std::string());
  return "";
}

// The finished job's result document: from the job document when it embeds
// one, else from /result; nullopt when the job ended without one.
std::optional<json> ResultOf(ApiClient& client, const json& job) {
  if (job.contains("result") && job["result"].is_object()) return job["result"];
  auto reply = client.GetJson("/v1/jobs/" + job.value("id", std::string()) + "/result");
  if (reply.ok()) return *reply;
  return std::nullopt;
}

int PrintFinished(ApiClient& client, const json& job, const CommonOptions& c, std::ostream& out) {
  std::optional<json> result = ResultOf(client, job);
  if (c.json) {
    PrintJson(result ? *result : job, out);
  } else if (result) {
    out << FormatResult(*result);
  } else {
    out << FormatJob(job);
  }
  return ExitCodeForJob(job);
}

Result<json> Submit(ApiClient& client, const RunOptions& o) {
  auto spec = BuildSpec(o.spec);
  if (!spec.ok()) return spec.status();
  return client.PostJson("/v1/jobs", spec->dump());
}

}  // namespace

int ExitCodeFor(const Status& status) {
  switch (status.error_class()) {
    case ErrorClass::kOk: return kExitOk;
    case ErrorClass::kRejected:
    case ErrorClass::kUnauthorized:
    case ErrorClass::kNotFound: return kExitUsage;
    case ErrorClass::kInfraError: return kExitInfra;
    case ErrorClass::kCancelled: return kExitCancelled;
    default: return kExitJobFailed;
  }
}

int ExitCodeForJob(const json& job) {
  auto state = JobStateFromName(job.value("state", std::string()));
  if (!state) return kExitInfra;
  switch (*state) {
    case JobState::kDone: return kExitOk;
    case JobState::kCancelled: return kExitCancelled;
    case JobState::kTimedOut: return kExitJobFailed;
    case JobState::kFailed: {
      auto cls = ErrorClassFromName(ErrorClassOf(job));
      // A failed job with no class is treated as ours, never blamed on the user.
      if (!cls) return kExitInfra;
      int code = ExitCodeFor(Status(*cls, ""));
      return code == kExitOk ? kExitInfra : code;
    }
    default: return kExitInfra;  // not finished: callers only ask about finished jobs
  }
}

int ReportError(const Status& status, std::ostream& err) {
  err << "error: " << ErrorClassName(status.error_class()) << ": " << status.message();
  if (!status.field().empty()) err << " (field " << status.field() << ")";
  err << "\n";
  return ExitCodeFor(status);
}

int RunCommand(const RunOptions& o, std::ostream& out, std::ostream& err) {
  if (o.print_spec) {
    auto spec = BuildSpec(o.spec);
    if (!spec.ok()) return ReportError(spec.status(), err);
    PrintJson(*spec, out);
    return kExitOk;
  }
  ApiClient client = MakeClient(o.common);
  auto job = Submit(client, o);
  if (!job.ok()) return ReportError(job.status(), err);
  std::string id = job->value("id", std::string());
  if (!o.common.tty) err << "submitted " << id << "\n";
  auto done = WaitForJob(client, id, err, o.common.tty);
  if (!done.ok()) return ReportError(done.status(), err);
  return PrintFinished(client, *done, o.common, out);
}

int SubmitCommand(const RunOptions& o, std::ostream& out, std::ostream& err) {
  ApiClient client = MakeClient(o.common);
  auto job = Submit(client, o);
  if (!job.ok()) return ReportError(job.status(), err);
  if (o.common.json) PrintJson(*job, out);
  else out << job->value("id", std::string()) << "\n";
  return kExitOk;
}

int StatusCommand(const JobOptions& o, std::ostream& out, std::ostream& err) {
  ApiClient client = MakeClient(o.common);
  auto job = client.GetJson("/v1/jobs/" + o.id);
  if (!job.ok()) return ReportError(job.status(), err);
  if (o.common.json) {
    json copy = *job;
    copy.erase("result");  // `assay result` prints it
    PrintJson(copy, out);
  } else {
    out << FormatJob(*job);
  }
  return kExitOk;
}

int ResultCommand(const JobOptions& o, std::ostream& out, std::ostream& err) {
  ApiClient client = MakeClient(o.common);
  auto done = WaitForJob(client, o.id, err, o.common.tty);
  if (!done.ok()) return ReportError(done.status(), err);
  return PrintFinished(client, *done, o.common, out);
}

int CancelCommand(const JobOptions& o, std::ostream& out, std::ostream& err) {
  ApiClient client = MakeClient(o.common);
  if (o.id.rfind("b_", 0) == 0) {  // a batch: every unfinished job of it
    auto batch = client.PostJson("/v1/batches/" + o.id + "/cancel", "");
    if (!batch.ok()) return ReportError(batch.status(), err);
    if (o.common.json) PrintJson(*batch, out);
    else out << "cancelled the unfinished jobs of " << o.id << "\n" << FormatBatch(*batch);
    return kExitOk;
  }
  auto job = client.PostJson("/v1/jobs/" + o.id + "/cancel", "");
  if (!job.ok()) return ReportError(job.status(), err);
  if (o.common.json) PrintJson(*job, out);
  else out << "cancelled " << o.id << " (state " << job->value("state", std::string("?")) << ")\n";
  return kExitOk;
}

int ListCommand(const ListOptions& o, std::ostream& out, std::ostream& err) {
  if (o.limit < 1 || o.limit > 1000) return ReportError(Status::Rejected("--limit must be 1..1000", "limit"), err);
  std::string path = "/v1/jobs?limit=" + std::to_string(o.limit);
  if (!o.state.empty()) path += "&state=" + o.state;
  if (!o.before.empty()) path += "&before=" + o.before;
  ApiClient client = MakeClient(o.common);
  auto list = client.GetJson(path);
  if (!list.ok()) return ReportError(list.status(), err);
  if (o.common.json) PrintJson(*list, out);
  else out << FormatJobList(*list);
  return kExitOk;
}

int GpusCommand(const CommonOptions& o, std::ostream& out, std::ostream& err) {
  ApiClient client = MakeClient(o);
  auto gpus = client.GetJson("/v1/gpus");
  if (!gpus.ok()) return ReportError(gpus.status(), err);
  return PrintGpus(*gpus, o.json, out);
}

int ExitCodeForBatch(const json& batch) {
  bool infra = false, failed = false, rejected = false, cancelled = false;
  for (const json& j : batch.value("jobs", json::array())) {
    json job = {{"state", j.value("state", std::string())}, {"error", j.value("error", json())}};
    switch (ExitCodeForJob(job)) {
      case kExitOk: break;
      case kExitJobFailed: failed = true; break;
      case kExitUsage: rejected = true; break;
      case kExitCancelled: cancelled = true; break;
      default: infra = true; break;
    }
  }
  if (infra) return kExitInfra;
  if (failed) return kExitJobFailed;
  if (rejected) return kExitUsage;
  return cancelled ? kExitCancelled : kExitOk;
}

int BatchCommand(const BatchOptions& o, std::ostream& out, std::ostream& err) {
  ApiClient client = MakeClient(o.common);
  std::string id = o.id;
  if (id.empty()) {
    auto body = BuildBatchRequest(o.request);
    if (!body.ok()) return ReportError(body.status(), err);
    auto submitted = client.PostJson("/v1/batches", body->dump());
    if (!submitted.ok()) return ReportError(submitted.status(), err);
    id = submitted->value("batch_id", std::string());
    if (o.no_wait) {
      if (o.common.json) PrintJson(*submitted, out);
      else out << id << "\n";
      return kExitOk;
    }
    if (!o.common.tty) err << "submitted batch " << id << " (" << (*submitted)["jobs"].size() << " jobs)\n";
  }
  auto done = o.no_wait ? client.GetJson("/v1/batches/" + id) : WaitForBatch(client, id, err, o.common.tty);
  if (!done.ok()) return ReportError(done.status(), err);
  if (o.common.json) PrintJson(*done, out);
  else out << FormatBatch(*done);
  if (!done->value("summary", json::object()).value("all_finished", false)) return kExitOk;  // --id --no-wait
  return ExitCodeForBatch(*done);
}

int EvalCommand(const EvalOptions& o, std::ostream& out, std::ostream& err) {
  auto body = BuildEvalRequest(o.request);
  if (!body.ok()) return ReportError(body.status(), err);
  ApiClient client = MakeClient(o.common);
  // Submit without holding the connection, then poll like `run`: survives
  // proxies and restarts, and shows progress.
  auto submitted = client.PostJson("/v1/eval?wait=0", body->dump());
  if (!submitted.ok()) return ReportError(submitted.status(), err);
  for (const json& w : submitted->value("warnings", json::array())) err << "warning: " << w.get<std::string>() << "\n";
  std::string id = submitted->value("job_id", std::string());
  if (o.no_wait) {
    if (o.common.json) PrintJson(*submitted, out);
    else out << id << "\n";
    return kExitOk;
  }
  if (!o.common.tty) err << "submitted " << id << "\n";
  auto job = WaitForJob(client, id, err, o.common.tty);
  if (!job.ok()) return ReportError(job.status(), err);
  auto answer = client.GetJson("/v1/eval/" + id);
  if (!answer.ok()) return ReportError(answer.status(), err);
  (*answer)["warnings"] = submitted->value("warnings", json::array());
  if (o.common.json) PrintJson(*answer, out);
  else out << FormatEval(*answer);
  return ExitCodeForJob(*job);
}

int PrintGpus(const json& inventory, bool as_json, std::ostream& out) {
  if (as_json) PrintJson(inventory, out);
  else out << FormatGpus(inventory);
  const json& gpus = inventory.is_array() ? inventory : inventory.value("gpus", json::array());
  return gpus.empty() ? kExitInfra : kExitOk;
}

}  // namespace assay::cli

#include "spec/batch.h"

#include <algorithm>
#include <set>

#include "spec/json_reader.h"

namespace assay {
namespace si = spec_internal;
using nlohmann::json;

namespace {

constexpr size_t kMaxNameChars = 200;

size_t Utf8Chars(const std::string& s) {
  return static_cast<size_t>(std::count_if(s.begin(), s.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

Status CheckName(const std::string& name, const std::string& path) {
  if (name.empty()) return Status::Rejected("'" + path + "' is empty", path);
  if (Utf8Chars(name) > kMaxNameChars)
    return Status::Rejected("'" + path + "' is longer than " + std::to_string(kMaxNameChars) + " characters", path);
  if (std::any_of(name.begin(), name.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }))
    return Status::Rejected("'" + path + "' contains a control character", path);
  return Status::Ok();
}

bool Under(const std::string& field, const std::string& key) {
  return field == key || (field.size() > key.size() && field.compare(0, key.size(), key) == 0 &&
                          (field[key.size()] == '.' || field[key.size()] == '['));
}

json Get(const json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  return it == obj.end() ? json(nullptr) : *it;
}

}  // namespace

Result<BatchPlan> ExpandBatch(const json& body, const SpecLimits& limits) {
  if (!body.is_object()) return Status::Rejected("a batch is a JSON object {template, candidates}", "");
  auto rr = si::ObjectReader::Make(body, "");
  const si::ObjectReader& r = *rr;
  ASSAY_RETURN_IF_ERROR(r.RejectUnknown({"name", "template", "candidates"}));
  BatchPlan plan;
  ASSAY_RETURN_IF_ERROR(r.String("name", 800, &plan.name));
  if (r.Has("name")) ASSAY_RETURN_IF_ERROR(CheckName(plan.name, "name"));

  ASSAY_RETURN_IF_ERROR(r.Require("template", "the job spec every candidate shares"));
  auto tr = si::ObjectReader::Make(*r.Find("template"), "template");
  if (!tr.ok()) return tr.status();
  ASSAY_RETURN_IF_ERROR(tr->Require("kind"));
  std::string kind;
  ASSAY_RETURN_IF_ERROR(tr->String("kind", 64, &kind));
  plan.code_key = kind == "kernelbench" ? "candidate" : "source";
  ASSAY_RETURN_IF_ERROR(tr->RejectIfPresent(plan.code_key, "must be left out of the template: each entry of "
                                                           "'candidates' gives its own"));
  if (plan.name.empty() && tr->Has("name")) ASSAY_RETURN_IF_ERROR(tr->String("name", 800, &plan.name));

  ASSAY_RETURN_IF_ERROR(r.Require("candidates", "an array of {name, source}"));
  const json& cands = *r.Find("candidates");
  if (!cands.is_array()) return si::WrongType(cands, "candidates", "an array of {name, source}");
  if (cands.empty()) return Status::Rejected("a batch needs at least one candidate", "candidates");
  if (cands.size() > limits.max_batch_candidates)
    return Status::Rejected("a batch has at most " + std::to_string(limits.max_batch_candidates) +
                                " candidates; this one has " + std::to_string(cands.size()),
                            "candidates");
  std::set<std::string> names;
  for (size_t i = 0; i < cands.size(); ++i) {
    std::string path = si::IndexPath("candidates", i);
    auto cr = si::ObjectReader::Make(cands[i], path);
    if (!cr.ok()) return cr.status();
    ASSAY_RETURN_IF_ERROR(cr->RejectUnknown({"name", "source"}));
    ASSAY_RETURN_IF_ERROR(cr->Require("source", "the candidate's code: {text | blob | base64, filename}"));
    BatchCandidate c;
    c.name = "candidate-" + std::to_string(i);
    ASSAY_RETURN_IF_ERROR(cr->String("name", 800, &c.name));
    ASSAY_RETURN_IF_ERROR(CheckName(c.name, cr->PathOf("name")));
    if (!names.insert(c.name).second)
      return Status::Rejected("candidate name '" + c.name + "' is used twice; names must be unique in a batch",
                              cr->PathOf("name"));
    c.spec = *r.Find("template");
    c.spec[plan.code_key] = *cr->Find("source");
    c.spec["name"] = c.name;
    plan.candidates.push_back(std::move(c));
  }
  return plan;
}

Status BatchCandidateError(const Status& status, const BatchPlan& plan, size_t index) {
  if (status.ok() || status.error_class() != ErrorClass::kRejected) return status;
  const std::string cand = si::IndexPath("candidates", index);
  const std::string& f = status.field();
  std::string who = index < plan.candidates.size() ? "candidate '" + plan.candidates[index].name + "'" : cand;
  if (Under(f, plan.code_key))
    return Status::Rejected(who + ": " + status.message(), cand + ".source" + f.substr(plan.code_key.size()));
  if (f.empty()) return Status::Rejected(who + ": " + status.message(), cand);
  if (f == "name") return Status::Rejected(who + ": " + status.message(), cand + ".name");
  return Status::Rejected(status.message(), "template." + f);
}

json BatchEntry(const std::string& name, const json& job) {
  std::string state = job.value("state", std::string());
  json result = Get(job, "result");
  json kb = Get(result, "kernelbench");
  json error = Get(job, "error");
  json correct = nullptr, runtime = nullptr, speedup = nullptr;
  if (kb.is_object()) {
    runtime = Get(kb, "runtime");
    speedup = Get(kb, "speedup");
    if (Get(kb, "correctness").is_boolean()) correct = state == "done" && Get(kb, "correctness").get<bool>();
  } else {
    json timing = Get(result, "timing");
    runtime = Get(timing, "median_ms");
    json check = Get(result, "correctness");
    if (check.is_object()) correct = state == "done" && Get(check, "passed") != json(false);
  }
  if (state != "done" && state != "queued" && state != "compiling" && state != "running") correct = false;
  if (!runtime.is_number() || (kb.is_object() && runtime.get<double>() < 0)) runtime = nullptr;  // KernelBench: -1 = none
  if (!speedup.is_number()) speedup = nullptr;

  std::string verdict = state;
  if (state == "done") verdict = correct == json(true) ? "correct" : "done";
  else if (state == "failed") verdict = error.is_object() ? error.value("class", std::string("failed")) : "failed";
  else if (state == "timed_out") verdict = "timeout";
  return {{"name", name},       {"job_id", job.value("id", std::string())},
          {"state", state},     {"verdict", verdict},
          {"correct", correct}, {"runtime_ms", runtime},
          {"speedup", speedup}, {"error", error}};
}

json BatchSummary(const json& entries) {
  json by_state = json::object();
  size_t finished = 0, correct = 0;
  const json* best = nullptr;
  for (const json& e : entries) {
    std::string state = e.value("state", std::string());
    by_state[state] = by_state.value(state, 0) + 1;
    if (state == "done" || state == "failed" || state == "cancelled" || state == "timed_out") ++finished;
    if (Get(e, "correct") != json(true)) continue;
    ++correct;
    if (!Get(e, "runtime_ms").is_number()) continue;
    if (!best || e["runtime_ms"].get<double>() < (*best)["runtime_ms"].get<double>()) best = &e;
  }
  json fastest = nullptr;
  if (best)
    fastest = {{"name", (*best)["name"]}, {"job_id", (*best)["job_id"]},
               {"runtime_ms", (*best)["runtime_ms"]}, {"speedup", Get(*best, "speedup")}};
  return {{"total", entries.size()}, {"finished", finished}, {"all_finished", finished == entries.size()},
          {"by_state", by_state},    {"correct", correct},   {"fastest_correct", fastest}};
}

}  // namespace assay

// Batch expansion (template + candidates), error paths, and the per-candidate
// outcome and summary of GET /v1/batches/{id}.
#include "spec/batch.h"

#include <gtest/gtest.h>

#include "spec/job_spec.h"

namespace assay {
namespace {

using nlohmann::json;

json Source(const std::string& text) { return {{"text", text}}; }

json KernelbenchBatch(size_t n) {
  json b = {{"name", "relu sweep"},
            {"template", {{"kind", "kernelbench"}, {"problem", Source("class Model: ...")}, {"num_trials", 10}}},
            {"candidates", json::array()}};
  for (size_t i = 0; i < n; ++i)
    b["candidates"].push_back({{"name", "v" + std::to_string(i)}, {"source", Source("class ModelNew: " + std::to_string(i))}});
  return b;
}

void ExpectRejected(const json& body, const std::string& field, const std::string& part = "",
                    const SpecLimits& limits = {}) {
  auto p = ExpandBatch(body, limits);
  ASSERT_FALSE(p.ok()) << body.dump();
  EXPECT_EQ(p.status().field(), field) << p.status().message();
  EXPECT_NE(p.status().message().find(part), std::string::npos) << p.status().message();
}

TEST(BatchTest, KernelbenchCandidatesFillCandidate) {
  auto p = ExpandBatch(KernelbenchBatch(3));
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->name, "relu sweep");
  EXPECT_EQ(p->code_key, "candidate");
  ASSERT_EQ(p->candidates.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    const BatchCandidate& c = p->candidates[i];
    EXPECT_EQ(c.name, "v" + std::to_string(i));
    EXPECT_EQ(c.spec["name"], c.name);
    EXPECT_EQ(c.spec["candidate"]["text"], "class ModelNew: " + std::to_string(i));
    EXPECT_EQ(c.spec["problem"]["text"], "class Model: ...");
    EXPECT_EQ(c.spec["num_trials"], 10);
    auto spec = ParseJobSpecJson(c.spec);
    ASSERT_TRUE(spec.ok()) << spec.status().ToString();
    EXPECT_EQ(spec->kind, JobKind::kKernelbench);
  }
}

TEST(BatchTest, OtherKindsFillSourceAndDefaultNames) {
  json b = {{"template", {{"kind", "compile"}, {"name", "sweep"}, {"compile", {{"arch", "sm_90"}}}}},
            {"candidates", {{{"source", Source("extern \"C\" __global__ void k() {}")}},
                            {{"name", "two"}, {"source", {{"blob", std::string(64, 'a')}}}}}}};
  auto p = ExpandBatch(b);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->code_key, "source");
  EXPECT_EQ(p->name, "sweep") << "the template's name labels the batch";
  EXPECT_EQ(p->candidates[0].name, "candidate-0");
  EXPECT_EQ(p->candidates[1].name, "two");
  EXPECT_EQ(p->candidates[1].spec["source"]["blob"], std::string(64, 'a'));
  EXPECT_EQ(p->candidates[1].spec["compile"]["arch"], "sm_90");
  EXPECT_TRUE(ParseJobSpecJson(p->candidates[0].spec).ok());
}

TEST(BatchTest, ShapeRejectionsNameTheField) {
  ExpectRejected(json::array(), "", "JSON object");
  json unknown = KernelbenchBatch(1);
  unknown["candidate"] = json::array();
  ExpectRejected(unknown, "candidate", "did you mean 'candidates'");
  json no_template = KernelbenchBatch(1);
  no_template.erase("template");
  ExpectRejected(no_template, "template", "missing required field");
  json no_kind = KernelbenchBatch(1);
  no_kind["template"].erase("kind");
  ExpectRejected(no_kind, "template.kind", "missing required field");
  json with_code = KernelbenchBatch(1);
  with_code["template"]["candidate"] = Source("x");
  ExpectRejected(with_code, "template.candidate", "left out of the template");
  json with_source = {{"template", {{"kind", "cuda"}, {"source", Source("x")}}},
                      {"candidates", {{{"source", Source("y")}}}}};
  ExpectRejected(with_source, "template.source", "left out of the template");
  json none = KernelbenchBatch(0);
  ExpectRejected(none, "candidates", "at least one candidate");
  json not_array = KernelbenchBatch(1);
  not_array["candidates"] = json::object();
  ExpectRejected(not_array, "candidates", "must be an array");
  SpecLimits small;
  small.max_batch_candidates = 4;
  ExpectRejected(KernelbenchBatch(5), "candidates", "at most 4 candidates; this one has 5", small);
  EXPECT_TRUE(ExpandBatch(KernelbenchBatch(4), small).ok());
  EXPECT_EQ(SpecLimits{}.max_batch_candidates, 1000u);
}

TEST(BatchTest, CandidateRejectionsNameTheCandidate) {
  json no_source = KernelbenchBatch(3);
  no_source["candidates"][2].erase("source");
  ExpectRejected(no_source, "candidates[2].source", "missing required field");
  json extra = KernelbenchBatch(2);
  extra["candidates"][1]["entry"] = "ModelNew";
  ExpectRejected(extra, "candidates[1].entry", "unknown field");
  json dup = KernelbenchBatch(3);
  dup["candidates"][2]["name"] = "v0";
  ExpectRejected(dup, "candidates[2].name", "used twice");
  json empty = KernelbenchBatch(1);
  empty["candidates"][0]["name"] = "";
  ExpectRejected(empty, "candidates[0].name", "is empty");
  json control = KernelbenchBatch(1);
  control["candidates"][0]["name"] = "a\nb";
  ExpectRejected(control, "candidates[0].name", "control character");
  json long_name = KernelbenchBatch(1);
  long_name["candidates"][0]["name"] = std::string(201, 'x');
  ExpectRejected(long_name, "candidates[0].name", "longer than 200");
  json not_object = KernelbenchBatch(2);
  not_object["candidates"][1] = "v1.py";
  ExpectRejected(not_object, "candidates[1]", "must be an object");
}

TEST(BatchTest, SpecErrorsMoveIntoTheBatchRequest) {
  json b = KernelbenchBatch(3);
  b["candidates"][1]["source"] = {{"text", "x"}, {"blob", std::string(64, 'a')}};
  auto p = ExpandBatch(b);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_TRUE(ParseJobSpecJson(p->candidates[0].spec).ok());
  // Candidate 1's code: candidates[1].source...
  auto c1 = ParseJobSpecJson(p->candidates[1].spec);
  ASSERT_FALSE(c1.ok());
  Status mapped = BatchCandidateError(c1.status(), *p, 1);
  EXPECT_EQ(mapped.field(), "candidates[1].source.blob") << c1.status().field();
  EXPECT_NE(mapped.message().find("candidate 'v1'"), std::string::npos) << mapped.message();
  // A template field: template...
  json t = KernelbenchBatch(2);
  t["template"]["timing"] = {{"mode", "warm"}};
  auto pt = ExpandBatch(t);
  ASSERT_TRUE(pt.ok());
  auto c0 = ParseJobSpecJson(pt->candidates[0].spec);
  ASSERT_FALSE(c0.ok());
  EXPECT_EQ(BatchCandidateError(c0.status(), *pt, 0).field(), "template.timing.mode");
  // Whole-document errors, and the plain source field itself.
  EXPECT_EQ(BatchCandidateError(Status::Rejected("too big", ""), *p, 2).field(), "candidates[2]");
  EXPECT_EQ(BatchCandidateError(Status::Rejected("bad", "candidate"), *p, 2).field(), "candidates[2].source");
  EXPECT_EQ(BatchCandidateError(Status::Rejected("no", "kind"), *p, 0).field(), "template.kind");
  // A field that only starts with the code key's letters is the template's.
  EXPECT_EQ(BatchCandidateError(Status::Rejected("x", "candidates"), *p, 0).field(), "template.candidates");
  // Non-rejections pass through.
  EXPECT_EQ(BatchCandidateError(Status::Infra("disk"), *p, 0).error_class(), ErrorClass::kInfraError);
}

json Job(const std::string& id, const std::string& state, json result = nullptr, json error = nullptr) {
  return {{"id", id}, {"state", state}, {"error", error}, {"result", result}};
}

json Kb(bool correct, double runtime, double speedup) {
  return {{"kernelbench", {{"compiled", true}, {"correctness", correct}, {"runtime", runtime}, {"speedup", speedup}}}};
}

TEST(BatchTest, EntriesGiveVerdictRuntimeAndSpeedup) {
  json e = BatchEntry("fast", Job("j_1", "done", Kb(true, 0.5, 2.0)));
  EXPECT_EQ(e["name"], "fast");
  EXPECT_EQ(e["job_id"], "j_1");
  EXPECT_EQ(e["verdict"], "correct");
  EXPECT_EQ(e["correct"], true);
  EXPECT_EQ(e["runtime_ms"], 0.5);
  EXPECT_EQ(e["speedup"], 2.0);

  json wrong = BatchEntry("wrong", Job("j_2", "failed", Kb(false, 0.1, 10.0),
                                       {{"class", "wrong_result"}, {"message", "mismatch"}}));
  EXPECT_EQ(wrong["verdict"], "wrong_result");
  EXPECT_EQ(wrong["correct"], false);
  EXPECT_EQ(wrong["error"]["class"], "wrong_result");

  json queued = BatchEntry("q", Job("j_3", "queued"));
  EXPECT_EQ(queued["verdict"], "queued");
  EXPECT_TRUE(queued["correct"].is_null());
  EXPECT_TRUE(queued["runtime_ms"].is_null());

  EXPECT_EQ(BatchEntry("t", Job("j_4", "timed_out"))["verdict"], "timeout");
  EXPECT_EQ(BatchEntry("c", Job("j_5", "cancelled"))["verdict"], "cancelled");
  json kernel = BatchEntry("k", Job("j_6", "done", {{"timing", {{"median_ms", 0.25}}}, {"correctness", {{"passed", true}}}}));
  EXPECT_EQ(kernel["runtime_ms"], 0.25);
  EXPECT_EQ(kernel["verdict"], "correct");
  json compiled = BatchEntry("cc", Job("j_7", "done", {{"compile", {{"arch", "sm_90"}}}, {"correctness", nullptr}}));
  EXPECT_EQ(compiled["verdict"], "done") << "nothing was checked";
  EXPECT_TRUE(compiled["correct"].is_null());
  json no_runtime = BatchEntry("n", Job("j_8", "done", Kb(true, -1, 0)));
  EXPECT_TRUE(no_runtime["runtime_ms"].is_null()) << "KernelBench's -1 means not measured";
}

TEST(BatchTest, SummaryCountsStatesAndFindsTheFastestCorrect) {
  json entries = json::array({
      BatchEntry("slow", Job("j_1", "done", Kb(true, 2.0, 0.5))),
      BatchEntry("fast", Job("j_2", "done", Kb(true, 0.5, 2.0))),
      BatchEntry("cheat", Job("j_3", "failed", Kb(false, 0.01, 100), {{"class", "wrong_result"}})),
      BatchEntry("later", Job("j_4", "running")),
  });
  json s = BatchSummary(entries);
  EXPECT_EQ(s["total"], 4);
  EXPECT_EQ(s["finished"], 3);
  EXPECT_EQ(s["all_finished"], false);
  EXPECT_EQ(s["by_state"]["done"], 2);
  EXPECT_EQ(s["by_state"]["failed"], 1);
  EXPECT_EQ(s["by_state"]["running"], 1);
  EXPECT_EQ(s["correct"], 2);
  ASSERT_TRUE(s["fastest_correct"].is_object()) << s.dump();
  EXPECT_EQ(s["fastest_correct"]["name"], "fast");
  EXPECT_EQ(s["fastest_correct"]["job_id"], "j_2");
  EXPECT_EQ(s["fastest_correct"]["runtime_ms"], 0.5);
  EXPECT_EQ(s["fastest_correct"]["speedup"], 2.0);

  json none = BatchSummary(json::array({BatchEntry("x", Job("j_9", "failed", nullptr, {{"class", "compile_error"}}))}));
  EXPECT_TRUE(none["fastest_correct"].is_null());
  EXPECT_EQ(none["all_finished"], true);
}

}  // namespace
}  // namespace assay

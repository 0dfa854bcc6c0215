// POST /v1/eval (and POST /), GET /v1/eval/{id} and the batch routes over real
// HTTP on loopback, against the in-memory JobService (jobs are moved by hand).
// The same routes against a real `assay serve` are in tests/batch_eval_test.cc.
#include <future>

#include "api/api_test_util.h"

namespace assay::api_test {
namespace {

constexpr char kProblem[] =
    "import torch\n\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return torch.relu(x)\n\n"
    "def get_inputs():\n    return [torch.randn(8)]\n\ndef get_init_inputs():\n    return []\n";
constexpr char kCandidate[] =
    "import torch\n\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return x.clamp_min(0)\n";

json EvalBody(const std::string& custom_type = "torch_cuda") {
  return {{"ref_kernel", {{"source_code", kProblem}, {"kernel_type", "TORCH"}, {"io", {{"args", json::array()}}}}},
          {"custom_kernel", {{"source_code", kCandidate}, {"kernel_type", custom_type}}},
          {"num_trials", 10},
          {"timeout", 30}};
}

std::string KbResult(bool correct, double runtime, double speedup) {
  return json{{"schema_version", 1},
              {"kind", "kernelbench"},
              {"kernelbench",
               {{"compiled", true}, {"correctness", correct}, {"runtime", runtime}, {"ref_runtime", runtime * speedup},
                {"speedup", speedup}, {"runtime_stats", {{"mean", runtime}}}, {"metadata", json::object()}}}}
      .dump();
}

class EvalBatchTest : public ApiServerTest {
 protected:
  json Post(const std::string& path, const json& body, int want, const char* key = kGoodKey) {
    auto c = Client(false);
    c.set_bearer_token_auth(key);
    auto res = c.Post(path.c_str(), body.dump(), "application/json");
    EXPECT_TRUE(res) << path;
    if (!res) return nullptr;
    EXPECT_EQ(res->status, want) << res->body;
    return json::parse(res->body, nullptr, false);
  }
  json Get(const std::string& path, int want, const char* key = kGoodKey) {
    auto c = Client(false);
    c.set_bearer_token_auth(key);
    auto res = c.Get(path.c_str());
    EXPECT_TRUE(res) << path;
    if (!res) return nullptr;
    EXPECT_EQ(res->status, want) << res->body;
    return json::parse(res->body, nullptr, false);
  }
  // Waits until the service holds `n` jobs; returns the newest one's id.
  std::string WaitForJobs(size_t n) {
    for (int i = 0; i < 500 && service_.JobCount() < n; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    auto list = service_.List(JobFilter{});
    EXPECT_TRUE(list.ok() && list->size() == n);
    return list.ok() && !list->empty() ? list->front().id : "";
  }
};

TEST_F(EvalBatchTest, EvalWithWaitZeroSubmitsAKernelbenchJobAtOnce) {
  Start();
  auto c = Client();
  auto res = c.Post("/v1/eval?wait=0", EvalBody().dump(), "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 201) << res->body;
  json r = json::parse(res->body);
  std::string id = r["job_id"];
  EXPECT_EQ(res->get_header_value("Location"), "/v1/jobs/" + id);
  EXPECT_EQ(r["status"], "pending");
  EXPECT_EQ(r["state"], "queued");
  EXPECT_TRUE(r["kernel_exec_result"].is_null());
  ASSERT_EQ(r["warnings"].size(), 1u);
  EXPECT_NE(r["warnings"][0].get<std::string>().find("ref_kernel.io"), std::string::npos);
  // The stored job is the mapped kernelbench spec, under the caller's key.
  auto job = service_.Get(id);
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(job->kind, JobKind::kKernelbench);
  EXPECT_EQ(job->key_id, "k_test");
  json spec = json::parse(job->spec_json);
  EXPECT_EQ(spec["problem"]["text"], kProblem);
  EXPECT_EQ(spec["candidate"]["text"], kCandidate);
  EXPECT_EQ(spec["num_trials"], 10);
  EXPECT_EQ(spec["timeout_s"], 30);
}

TEST_F(EvalBatchTest, SeedClientsCanPostTheLegacyFormToRoot) {
  Start();
  json r = Post("/?wait=0", {{"ref_code", kProblem}, {"custom_code", kCandidate}}, 201);
  ASSERT_TRUE(r.is_object());
  auto job = service_.Get(r["job_id"]);
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(json::parse(job->spec_json)["kind"], "kernelbench");
  EXPECT_EQ(json::parse(job->spec_json)["timeout_s"], 120);
}

TEST_F(EvalBatchTest, EvalRejectionsNameTheSeedField) {
  Start();
  json cuda = Post("/v1/eval?wait=0", EvalBody("cuda"), 400);
  EXPECT_EQ(cuda["error"]["class"], "rejected");
  EXPECT_EQ(cuda["error"]["field"], "custom_kernel.kernel_type");
  EXPECT_NE(cuda["error"]["message"].get<std::string>().find("POST /v1/jobs"), std::string::npos);
  json legacy_bad = Post("/", {{"ref_code", "import torch\n"}, {"custom_code", kCandidate}}, 400);
  EXPECT_EQ(legacy_bad["error"]["field"], "ref_code");
  json extra = EvalBody();
  extra["priority"] = 1;
  EXPECT_EQ(Post("/v1/eval", extra, 400)["error"]["field"], "priority");
  auto c = Client();
  auto malformed = c.Post("/v1/eval", "{\"ref_code\": ", "application/json");
  ASSERT_TRUE(malformed);
  EXPECT_EQ(malformed->status, 400);
  EXPECT_NE(malformed->body.find("malformed JSON at byte"), std::string::npos);
  EXPECT_EQ(c.Post("/v1/eval", EvalBody().dump(), "text/plain")->status, 415);
  EXPECT_EQ(Post("/v1/eval?wait=soon", EvalBody(), 400)["error"]["field"], "wait");
  EXPECT_EQ(Post("/v1/eval?wait=99999", EvalBody(), 400)["error"]["field"], "wait");
  EXPECT_EQ(Client(false).Post("/v1/eval", EvalBody().dump(), "application/json")->status, 401);
  EXPECT_EQ(Client(false).Post("/", EvalBody().dump(), "application/json")->status, 401);
  EXPECT_EQ(service_.JobCount(), 0u) << "nothing rejected was stored";
}

TEST_F(EvalBatchTest, EvalWaitsForTheJobAndAnswersInTheSeedsShape) {
  Start();
  auto answer = std::async(std::launch::async, [this] {
    auto c = Client();
    c.set_read_timeout(30, 0);
    auto res = c.Post("/v1/eval", EvalBody().dump(), "application/json");
    return res ? std::make_pair(res->status, res->body) : std::make_pair(0, std::string());
  });
  std::string id = WaitForJobs(1);
  ASSERT_FALSE(id.empty());
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(answer.wait_for(std::chrono::seconds(0)), std::future_status::timeout) << "answered before the job ended";
  ASSERT_TRUE(service_.Transition(id, JobState::kRunning, "").ok());
  ASSERT_TRUE(service_.Transition(id, JobState::kDone, "", KbResult(true, 0.5, 2.0)).ok());
  auto [status, body] = answer.get();
  ASSERT_EQ(status, 200) << body;
  json r = json::parse(body);
  EXPECT_EQ(r["job_id"], id);
  EXPECT_EQ(r["status"], "success");
  EXPECT_EQ(r["compiled"], true);
  EXPECT_EQ(r["correctness"], true);
  EXPECT_EQ(r["runtime"], 0.5);
  EXPECT_EQ(r["speedup"], 2.0);
  EXPECT_EQ(r["kernel_exec_result"]["runtime"], 0.5);
  EXPECT_EQ(r["result"]["kind"], "kernelbench");

  // The same answer later, by id; another key cannot see it.
  json again = Get("/v1/eval/" + id, 200);
  EXPECT_EQ(again["speedup"], 2.0);
  EXPECT_TRUE(again["warnings"].empty());
  EXPECT_EQ(Get("/v1/eval/" + id, 404, kOtherKey)["error"]["class"], "not_found");
  EXPECT_EQ(Get("/v1/eval/j_000000000000000000000000", 404)["error"]["class"], "not_found");
}

TEST_F(EvalBatchTest, EvalWaitEndsAfterWaitSecondsWith202) {
  Start();
  auto t0 = std::chrono::steady_clock::now();
  json r = Post("/v1/eval?wait=1", EvalBody(), 202);
  auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_GE(waited, std::chrono::milliseconds(900));
  EXPECT_LT(waited, std::chrono::seconds(5));
  EXPECT_EQ(r["status"], "pending");
  std::string id = r["job_id"];
  EXPECT_EQ(Get("/v1/eval/" + id, 202)["state"], "queued");
  ASSERT_TRUE(service_.Transition(id, JobState::kFailed, "load_inline failed", json{{"kernelbench", nullptr}}.dump(),
                                  "compile_error")
                  .ok());
  json done = Get("/v1/eval/" + id, 200);
  EXPECT_EQ(done["status"], "failed");
  EXPECT_EQ(done["compiled"], false);
  EXPECT_EQ(done["error"]["class"], "compile_error");
}

TEST_F(EvalBatchTest, WaitingEvalsShareTheStreamCap) {
  ApiOptions o;
  o.max_sse_streams = 0;
  o.threads = 8;
  Start(o);
  auto c = Client();
  auto res = c.Post("/v1/eval", EvalBody().dump(), "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 503);
  EXPECT_EQ(res->get_header_value("Retry-After"), "5");
  EXPECT_EQ(service_.JobCount(), 0u) << "a refused wait leaves no job behind";
  EXPECT_EQ(Post("/v1/eval?wait=0", EvalBody(), 201)["status"], "pending") << "not waiting needs no slot";
}

TEST_F(EvalBatchTest, StopEndsAWaitingEval) {
  Start();
  auto answer = std::async(std::launch::async, [this] {
    auto c = Client();
    c.set_read_timeout(30, 0);
    auto res = c.Post("/v1/eval", EvalBody().dump(), "application/json");
    return res ? res->status : 0;
  });
  ASSERT_FALSE(WaitForJobs(1).empty());
  auto t0 = std::chrono::steady_clock::now();
  server_->Stop();
  thread_.join();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  int status = answer.get();
  EXPECT_TRUE(status == 202 || status == 0) << status;
}

TEST_F(EvalBatchTest, GetEvalOfAnotherKindIsRejected) {
  Start();
  std::string id = SubmitOk();
  EXPECT_EQ(Get("/v1/eval/" + id, 400)["error"]["class"], "rejected");
}

json Batch(size_t n) {
  json b = {{"name", "relu sweep"},
            {"template", {{"kind", "kernelbench"}, {"problem", {{"text", kProblem}}}, {"num_trials", 5}}},
            {"candidates", json::array()}};
  for (size_t i = 0; i < n; ++i)
    b["candidates"].push_back({{"name", "v" + std::to_string(i)}, {"source", {{"text", kCandidate}}}});
  return b;
}

TEST_F(EvalBatchTest, BatchCreatesOneJobPerCandidate) {
  Start();
  auto c = Client();
  auto res = c.Post("/v1/batches", Batch(3).dump(), "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 201) << res->body;
  json r = json::parse(res->body);
  std::string bid = r["batch_id"];
  EXPECT_EQ(bid.rfind("b_", 0), 0u);
  EXPECT_EQ(res->get_header_value("Location"), "/v1/batches/" + bid);
  EXPECT_EQ(r["name"], "relu sweep");
  ASSERT_EQ(r["jobs"].size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(r["jobs"][i]["name"], "v" + std::to_string(i));
    auto job = service_.Get(r["jobs"][i]["job_id"]);
    ASSERT_TRUE(job.ok());
    EXPECT_EQ(job->key_id, "k_test");
    EXPECT_EQ(job->name, "v" + std::to_string(i));
    json spec = json::parse(job->spec_json);
    EXPECT_EQ(spec["candidate"]["text"], kCandidate);
    EXPECT_EQ(spec["problem"]["text"], kProblem);
  }
}

TEST_F(EvalBatchTest, BatchIsAllOrNothingAndErrorsNameTheCandidate) {
  Start();
  json bad_source = Batch(3);
  bad_source["candidates"][2]["source"] = {{"text", "x"}, {"base64", "eA=="}};
  json e = Post("/v1/batches", bad_source, 400);
  EXPECT_EQ(e["error"]["field"], "candidates[2].source.base64");
  EXPECT_NE(e["error"]["message"].get<std::string>().find("candidate 'v2'"), std::string::npos);
  EXPECT_EQ(service_.JobCount(), 0u) << "the valid candidates before it were not stored";

  json bad_template = Batch(2);
  bad_template["template"]["num_trials"] = 0;
  EXPECT_EQ(Post("/v1/batches", bad_template, 400)["error"]["field"], "template.num_trials");
  EXPECT_EQ(Post("/v1/batches", Batch(0), 400)["error"]["field"], "candidates");
  EXPECT_EQ(Post("/v1/batches", Batch(1001), 400)["error"]["field"], "candidates");
  json dup = Batch(2);
  dup["candidates"][1]["name"] = "v0";
  EXPECT_EQ(Post("/v1/batches", dup, 400)["error"]["field"], "candidates[1].name");
  auto c = Client();
  auto malformed = c.Post("/v1/batches", "{\"template\": [", "application/json");
  ASSERT_TRUE(malformed);
  EXPECT_EQ(malformed->status, 400);
  EXPECT_NE(malformed->body.find("malformed JSON at byte"), std::string::npos);
  EXPECT_EQ(c.Post("/v1/batches", Batch(1).dump(), "text/plain")->status, 415);
  EXPECT_EQ(Client(false).Post("/v1/batches", Batch(1).dump(), "application/json")->status, 401);
  EXPECT_EQ(service_.JobCount(), 0u);
}

TEST_F(EvalBatchTest, GetBatchReportsStatesAndTheFastestCorrectCandidate) {
  Start();
  json r = Post("/v1/batches", Batch(4), 201);
  ASSERT_TRUE(r.is_object());
  std::string bid = r["batch_id"];
  auto id = [&](int i) { return r["jobs"][i]["job_id"].get<std::string>(); };
  ASSERT_TRUE(service_.Transition(id(0), JobState::kDone, "", KbResult(true, 2.0, 0.5)).ok());
  ASSERT_TRUE(service_.Transition(id(1), JobState::kDone, "", KbResult(true, 0.5, 2.0)).ok());
  ASSERT_TRUE(service_.Transition(id(2), JobState::kFailed, "mismatch", KbResult(false, 0.01, 100), "wrong_result").ok());

  json b = Get("/v1/batches/" + bid, 200);
  EXPECT_EQ(b["batch_id"], bid);
  EXPECT_EQ(b["name"], "relu sweep");
  ASSERT_EQ(b["jobs"].size(), 4u);
  EXPECT_EQ(b["jobs"][0]["verdict"], "correct");
  EXPECT_EQ(b["jobs"][2]["verdict"], "wrong_result");
  EXPECT_EQ(b["jobs"][2]["error"]["class"], "wrong_result");
  EXPECT_EQ(b["jobs"][3]["state"], "queued");
  const json& s = b["summary"];
  EXPECT_EQ(s["total"], 4);
  EXPECT_EQ(s["finished"], 3);
  EXPECT_EQ(s["all_finished"], false);
  EXPECT_EQ(s["by_state"]["done"], 2);
  EXPECT_EQ(s["by_state"]["failed"], 1);
  EXPECT_EQ(s["by_state"]["queued"], 1);
  EXPECT_EQ(s["fastest_correct"]["name"], "v1") << "the wrong but faster v2 does not count";
  EXPECT_EQ(s["fastest_correct"]["speedup"], 2.0);

  EXPECT_EQ(Get("/v1/batches/" + bid, 404, kOtherKey)["error"]["class"], "not_found");
  EXPECT_EQ(Get("/v1/batches/b_000000000000000000000000", 404)["error"]["class"], "not_found");

  // Cancel ends what has not ended and leaves the rest alone.
  auto c = Client();
  auto cancel = c.Post(("/v1/batches/" + bid + "/cancel").c_str());
  ASSERT_TRUE(cancel);
  ASSERT_EQ(cancel->status, 200) << cancel->body;
  json after = json::parse(cancel->body);
  EXPECT_EQ(after["jobs"][3]["state"], "cancelled");
  EXPECT_EQ(after["jobs"][0]["state"], "done");
  EXPECT_EQ(after["summary"]["all_finished"], true);
  auto other = Client(false);
  other.set_bearer_token_auth(kOtherKey);
  EXPECT_EQ(other.Post(("/v1/batches/" + bid + "/cancel").c_str())->status, 404);
}

}  // namespace
}  // namespace assay::api_test

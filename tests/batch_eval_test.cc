// Batches and the seed-002 /v1/eval against a real `assay serve` on loopback,
// over HTTP and through the CLI. Batches of compile jobs run anywhere; the
// Python end-to-end tests need a server started with `--python-device cpu`
// and an interpreter with torch (Debian's /usr/bin/python3 on CI, or
// $ASSAY_TEST_PYTHON), and skip with the reason when either is missing;
// ASSAY_TEST_PYTHON_DEVICE=cuda runs them on the GPU instead.
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "common/util.h"
#include "tests/server_fixture.h"

namespace assay::testing {
namespace {

using nlohmann::json;

const char* kGoodKernel = "extern \"C\" __global__ void k(float* x) { x[threadIdx.x] *= 2.0f; }\n";
const char* kOtherKernel = "extern \"C\" __global__ void k(float* x) { x[threadIdx.x] += 1.0f; }\n";
const char* kBrokenKernel = "extern \"C\" __global__ void k(float* x) { this is not cuda; }\n";

json CompileBatch(std::vector<std::pair<std::string, std::string>> candidates) {
  json b = {{"name", "compile sweep"},
            {"template", {{"schema_version", 1}, {"kind", "compile"}, {"compile", {{"arch", "sm_90"}}}}},
            {"candidates", json::array()}};
  for (auto& [name, text] : candidates) b["candidates"].push_back({{"name", name}, {"source", {{"text", text}}}});
  return b;
}

std::string Slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

class BatchEvalTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ::signal(SIGPIPE, SIG_IGN); }
  void SetUp() override {
    auto d = TempDir::Create("assay-batch-it-");
    ASSERT_TRUE(d.ok());
    dir_ = std::make_unique<TempDir>(std::move(d).value());
  }
  // Starts a server; false (with the log in `why`) when it does not come up.
  bool StartServer(std::vector<std::string> args, std::string* why = nullptr) {
    server_ = std::make_unique<ServerProcess>(dir_->path() / "data", std::move(args));
    if (server_->Start()) return true;
    if (why) *why = Slurp(dir_->path() / "data/server.log");
    return false;
  }
  void TearDown() override {
    if (HasFailure() && dir_) {
      std::string text = Slurp(dir_->path() / "data/server.log");
      std::cerr << "---- server log (last 4000 bytes) ----\n"
                << (text.size() > 4000 ? text.substr(text.size() - 4000) : text) << "\n";
    }
    server_.reset();
  }
  std::string Write(const std::string& name, const std::string& text) {
    auto p = dir_->path() / name;
    EXPECT_TRUE(WriteFileAtomic(p, text).ok());
    return p.string();
  }
  // Polls GET /v1/batches/{id} until every job ended.
  json WaitBatch(const std::string& id, double timeout_s = 180, const std::string& key = "") {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    json last;
    while (std::chrono::steady_clock::now() < deadline) {
      auto r = server_->Get("/v1/batches/" + id, key);
      if (r.status == 200) {
        last = r.json();
        if (last["summary"].value("all_finished", false)) return last;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ADD_FAILURE() << "batch " << id << " did not finish: " << last.dump(2);
    return last;
  }
  std::unique_ptr<TempDir> dir_;
  std::unique_ptr<ServerProcess> server_;
};

TEST_F(BatchEvalTest, CompileBatchRunsEveryCandidateAndSummarizes) {
  ASSERT_TRUE(StartServer({"--no-auth"}));
  auto r = server_->Post("/v1/batches",
                         CompileBatch({{"double", kGoodKernel}, {"plus-one", kOtherKernel}, {"broken", kBrokenKernel}})
                             .dump());
  ASSERT_EQ(r.status, 201) << r.body;
  json sub = r.json();
  std::string id = sub["batch_id"];
  ASSERT_EQ(sub["jobs"].size(), 3u);
  json b = WaitBatch(id);
  ASSERT_EQ(b["jobs"].size(), 3u) << b.dump(2);
  EXPECT_EQ(b["name"], "compile sweep");
  EXPECT_EQ(b["jobs"][0]["name"], "double");
  EXPECT_EQ(b["jobs"][0]["verdict"], "done") << "a compile job checks nothing";
  EXPECT_EQ(b["jobs"][1]["verdict"], "done");
  EXPECT_EQ(b["jobs"][2]["verdict"], "compile_error");
  EXPECT_EQ(b["summary"]["by_state"]["done"], 2);
  EXPECT_EQ(b["summary"]["by_state"]["failed"], 1);
  EXPECT_TRUE(b["summary"]["fastest_correct"].is_null());
  // Every candidate is an ordinary job, named after it.
  json job = server_->Get("/v1/jobs/" + sub["jobs"][1]["job_id"].get<std::string>()).json();
  EXPECT_EQ(job["name"], "plus-one");
  EXPECT_EQ(job["kind"], "compile");
  EXPECT_EQ(server_->Get("/v1/jobs?limit=10").json()["jobs"].size(), 3u);
}

TEST_F(BatchEvalTest, ABadCandidateStoresNothing) {
  ASSERT_TRUE(StartServer({"--no-auth"}));
  json bad = CompileBatch({{"a", kGoodKernel}, {"b", kGoodKernel}});
  bad["candidates"][1]["source"] = {{"text", kGoodKernel}, {"base64", "eA=="}};
  auto r = server_->Post("/v1/batches", bad.dump());
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(r.json()["error"]["field"], "candidates[1].source.base64");
  json bad_template = CompileBatch({{"a", kGoodKernel}});
  bad_template["template"]["compile"]["arch"] = "sm_1";
  auto t = server_->Post("/v1/batches", bad_template.dump());
  EXPECT_EQ(t.status, 400) << t.body;
  EXPECT_EQ(t.json()["error"]["field"], "template.compile.arch");
  EXPECT_EQ(server_->Get("/v1/jobs").json()["jobs"].size(), 0u) << "all or nothing";
  EXPECT_EQ(server_->Get("/v1/batches/b_000000000000000000000000").status, 404);
}

TEST_F(BatchEvalTest, BatchesArePrivateToTheirKey) {
  std::string data = (dir_->path() / "data").string();
  std::filesystem::create_directories(data);
  auto secret = [&](const std::string& name) {
    auto [rc, out] = RunAssay({"--json", "keys", "create", name, "--data-dir", data});
    EXPECT_EQ(rc, 0) << out;
    json j = json::parse(out.substr(out.find('{')), nullptr, false);
    return j.is_object() ? j.value("secret", std::string()) : std::string();
  };
  std::string alice = secret("alice"), bob = secret("bob");
  ASSERT_FALSE(alice.empty());
  ASSERT_FALSE(bob.empty());
  ASSERT_TRUE(StartServer({}));
  auto r = server_->Post("/v1/batches", CompileBatch({{"a", kGoodKernel}}).dump(), alice);
  ASSERT_EQ(r.status, 201) << r.body;
  std::string id = r.json()["batch_id"];
  EXPECT_EQ(server_->Get("/v1/batches/" + id, alice).status, 200);
  EXPECT_EQ(server_->Get("/v1/batches/" + id, bob).status, 404);
  EXPECT_EQ(server_->Get("/v1/batches/" + id).status, 401);
  EXPECT_EQ(server_->Post("/v1/batches/" + id + "/cancel", "", bob).status, 404);
  EXPECT_EQ(server_->Post("/v1/batches", CompileBatch({{"a", kGoodKernel}}).dump()).status, 401);
  EXPECT_EQ(server_->Post("/v1/eval", "{}").status, 401);
  EXPECT_EQ(server_->Post("/", "{}").status, 401);
  WaitBatch(id, 180, alice);
}

TEST_F(BatchEvalTest, CliBatchWithATemplatePrintsATableAndExitsByTheWorstCandidate) {
  ASSERT_TRUE(StartServer({"--no-auth"}));
  std::string tmpl = Write("t.json", R"({"kind": "compile", "compile": {"arch": "sm_90"}})");
  std::string k1 = Write("k1.cu", kGoodKernel), k2 = Write("k2.cu", kBrokenKernel);
  auto [rc, out] = RunAssay({"--server", server_->url(), "batch", "--spec", tmpl, k1, k2, "--name", "cli sweep"});
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("cli sweep  2 candidates"), std::string::npos) << out;
  EXPECT_NE(out.find("k1.cu"), std::string::npos) << out;
  EXPECT_NE(out.find("compile_error"), std::string::npos) << out;
  EXPECT_NE(out.find("0 of 2 correct"), std::string::npos) << out;

  auto [rc2, json_out] = RunAssay({"--server", server_->url(), "batch", "--spec", tmpl, k1, "--json"});
  EXPECT_EQ(rc2, 0) << json_out;
  json doc = json::parse(json_out.substr(json_out.find("{\n")), nullptr, false);
  ASSERT_TRUE(doc.is_object()) << json_out;
  EXPECT_EQ(doc["summary"]["total"], 1);
  std::string id = doc["batch_id"];
  auto [rc3, again] = RunAssay({"--server", server_->url(), "batch", "--id", id});
  EXPECT_EQ(rc3, 0) << again;
  EXPECT_NE(again.find(id), std::string::npos) << again;
  auto [rc4, cancelled] = RunAssay({"--server", server_->url(), "cancel", id});
  EXPECT_EQ(rc4, 0) << cancelled;
  auto [rc5, usage] = RunAssay({"--server", server_->url(), "batch", k1});
  EXPECT_EQ(rc5, 2) << usage;
  EXPECT_NE(usage.find("not a KernelBench problem"), std::string::npos) << usage;
}

// --- Python kinds on the CPU ------------------------------------------------

constexpr char kProblem[] = R"(import torch

class Model(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)

def get_inputs():
    return [torch.randn(256)]

def get_init_inputs():
    return []
)";
constexpr char kGood[] = R"(import torch

class ModelNew(torch.nn.Module):
    def forward(self, x):
        return x.clamp_min(0)
)";
constexpr char kWrong[] = R"(import torch

class ModelNew(torch.nn.Module):
    def forward(self, x):
        return x.abs()
)";
constexpr char kBroken[] = "import torch\nclass ModelNew(torch.nn.Module)\n    pass\n";

json Kernel(const char* source, const char* type) { return {{"source_code", source}, {"kernel_type", type}}; }

class PythonEvalTest : public BatchEvalTest {
 protected:
  void SetUp() override {
    BatchEvalTest::SetUp();
    const char* env = std::getenv("ASSAY_TEST_PYTHON");
    std::string python = env && *env ? env : "/usr/bin/python3";
    // ASSAY_TEST_PYTHON_DEVICE=cuda runs the same tests on the GPU (the server's default device).
    const char* dev = std::getenv("ASSAY_TEST_PYTHON_DEVICE");
    std::string device = dev && *dev ? dev : "cpu";
    std::vector<std::string> args = {"--no-auth", "--python", python};
    if (device != "cuda") args.insert(args.end(), {"--python-device", device});
    std::string log;
    if (!StartServer(args, &log))
      GTEST_SKIP() << "the server does not start with --python " << python << " on " << device
                   << " (--python-device not supported by this build?): " << log.substr(0, 2000);
    // A server whose interpreter lacks torch rejects the kind; say so and skip.
    json probe = {{"ref_code", kProblem}, {"custom_code", kGood}};
    auto r = server_->Post("/v1/eval?wait=0", probe.dump());
    if (r.status == 400)
      GTEST_SKIP() << "kernelbench is not available with " << python << ": " << r.body;
    ASSERT_EQ(r.status, 201) << r.body;
  }
};

TEST_F(PythonEvalTest, EvalWaitsAndAnswersLikeSeed002) {
  json body = {{"ref_kernel", Kernel(kProblem, "TORCH")}, {"custom_kernel", Kernel(kGood, "torch_cuda")},
               {"num_trials", 5}, {"timeout", 120}};
  auto r = server_->Post("/v1/eval", body.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  json e = r.json();
  EXPECT_EQ(e["status"], "success") << e.dump(2);
  EXPECT_EQ(e["compiled"], true);
  EXPECT_EQ(e["correctness"], true);
  ASSERT_TRUE(e["runtime"].is_number()) << e.dump(2);
  EXPECT_GT(e["runtime"].get<double>(), 0);
  EXPECT_EQ(e["kernel_exec_result"]["runtime"], e["runtime"]);
  EXPECT_TRUE(e["speedup"].is_number());
  EXPECT_EQ(e["result"]["kind"], "kernelbench");

  // The seed's legacy form at "/": a wrong candidate is an answer, not an HTTP error.
  auto wrong = server_->Post("/", json{{"ref_code", kProblem}, {"custom_code", kWrong}, {"timeout", 120}}.dump());
  ASSERT_EQ(wrong.status, 200) << wrong.body;
  EXPECT_EQ(wrong.json()["status"], "failed");
  EXPECT_EQ(wrong.json()["correctness"], false);
  EXPECT_EQ(wrong.json()["error"]["class"], "wrong_result");
}

TEST_F(PythonEvalTest, EvalWithWaitZeroIsFollowedByGet) {
  json body = {{"ref_kernel", Kernel(kProblem, "torch")}, {"custom_kernel", Kernel(kBroken, "torch")}};
  auto r = server_->Post("/v1/eval?wait=0", body.dump());
  ASSERT_EQ(r.status, 201) << r.body;
  std::string id = r.json()["job_id"];
  json e;
  for (int i = 0; i < 1200; ++i) {
    auto g = server_->Get("/v1/eval/" + id);
    ASSERT_TRUE(g.status == 200 || g.status == 202) << g.body;
    e = g.json();
    if (g.status == 200) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(e["status"], "failed") << e.dump(2);
  EXPECT_EQ(e["compiled"], false);
  EXPECT_EQ(e["error"]["class"], "compile_error");
}

TEST_F(PythonEvalTest, BatchAndCliFindTheFastestCorrectCandidate) {
  std::string problem = Write("problem.py", kProblem);
  std::string good = Write("good.py", kGood), wrong = Write("wrong.py", kWrong), broken = Write("broken.py", kBroken);
  auto [rc, out] = RunAssay({"--server", server_->url(), "batch", problem, good, wrong, broken, "--num-trials", "5"});
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("1 of 3 correct; fastest correct: good.py"), std::string::npos) << out;
  EXPECT_NE(out.find("wrong_result"), std::string::npos) << out;
  EXPECT_NE(out.find("compile_error"), std::string::npos) << out;

  auto [rc2, eval_out] = RunAssay({"--server", server_->url(), "--json", "eval", "--ref", problem, "--custom", good});
  EXPECT_EQ(rc2, 0) << eval_out;
  json e = json::parse(eval_out.substr(eval_out.find("{\n")), nullptr, false);
  ASSERT_TRUE(e.is_object()) << eval_out;
  EXPECT_EQ(e["status"], "success");
  EXPECT_EQ(e["correctness"], true);

  auto [rc3, run_out] = RunAssay({"--server", server_->url(), "run", problem, "--candidate", wrong});
  EXPECT_EQ(rc3, 1) << run_out;
  auto [rc4, ok_out] = RunAssay({"--server", server_->url(), "run", problem, "--candidate", good, "--num-trials", "3"});
  EXPECT_EQ(rc4, 0) << ok_out;
}

}  // namespace
}  // namespace assay::testing

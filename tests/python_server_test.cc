// End-to-end tests of the Python kinds (docs/python-kinds.md) without a GPU: a
// real `assay serve --python-device cpu --python PY`, the real harness
// (python/assay_harness.py, copied next to the binary), real interpreters.
// PY is $ASSAY_TEST_PYTHON, else /usr/bin/python3; the tests skip when it
// cannot import torch.
//
// One server serves the whole suite (each start probes the interpreter, and
// every job starts a fresh interpreter): the tests also show that it keeps
// serving after timeouts, cancels and crashes.
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

std::string TestPython() {
  const char* p = std::getenv("ASSAY_TEST_PYTHON");
  return p && *p ? p : "/usr/bin/python3";
}

bool PythonHasTorch() {
  static const bool has = [] {
    std::string cmd = "'" + TestPython() + "' -c 'import torch' >/dev/null 2>&1";
    return std::system(cmd.c_str()) == 0;
  }();
  return has;
}

// Small timing budgets: the CPU clocks mean little, the sections' shape does.
json FastTiming() {
  return {{"min_samples", 5}, {"max_samples", 30}, {"time_budget_ms", 200}, {"warmup_ms", 10}};
}

const char* kAddRef = R"(import torch
class Model(torch.nn.Module):
    def forward(self, x, y, n):
        return torch.add(x, y)
)";

json TorchSpec(const std::string& source, double timeout_s = 120) {
  return {{"kind", "torch"},
          {"timeout_s", timeout_s},
          {"source", {{"text", source}}},
          {"reference", {{"kind", "torch"}, {"source", {{"text", kAddRef}}}}},
          {"args",
           {{{"name", "x"}, {"role", "in"}, {"dtype", "f32"}, {"shape", {"n"}}},
            {{"name", "y"}, {"role", "in"}, {"dtype", "f32"}, {"shape", {"n"}}},
            {{"name", "n"}, {"role", "scalar"}, {"dtype", "i32"}, {"value", 4096}},
            {{"name", "z"}, {"role", "out"}, {"dtype", "f32"}, {"shape", {"n"}}}}},
          {"timing", FastTiming()}};
}

// The candidate takes the same inputs as the reference: x, y and the scalar n.
std::string Candidate(const std::string& body) {
  return "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x, y, n):\n" + body;
}

const char* kKbProblem = R"(import torch
import torch.nn as nn
class Model(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale
    def forward(self, a, b):
        return torch.relu(a @ b) * self.scale
def get_inputs():
    return [torch.randn(64, 32), torch.randn(32, 16)]
def get_init_inputs():
    return [2.0]
)";

const char* kKbCandidate = R"(import torch
import torch.nn as nn
class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale
    def forward(self, a, b):
        return torch.clamp(torch.matmul(a, b), min=0) * self.scale
)";

// Standby harness interpreters (`assay_harness.py standby`) started under
// `data_dir`; with bubblewrap each also has a bwrap parent, not counted.
std::vector<pid_t> StandbysOf(const std::string& data_dir) {
  std::vector<pid_t> out;
  for (pid_t pid : ProcessesMentioning(data_dir)) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline");
    std::string cmd((std::istreambuf_iterator<char>(in)), {});
    const std::string argv0 = cmd.substr(0, cmd.find('\0'));
    if (argv0.size() >= 5 && argv0.compare(argv0.size() - 5, 5, "bwrap") == 0) continue;
    if (cmd.find(std::string("assay_harness.py") + '\0' + "standby") != std::string::npos) out.push_back(pid);
  }
  return out;
}

// The standbys under `data_dir`, waiting up to 5 s for one to appear.
std::vector<pid_t> WaitForStandby(const std::string& data_dir) {
  for (int i = 0; i < 100; ++i) {
    if (auto pids = StandbysOf(data_dir); !pids.empty()) return pids;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return {};
}

class PythonServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ::signal(SIGPIPE, SIG_IGN);
    if (!PythonHasTorch()) return;
    auto d = TempDir::Create("assay-py-it-");
    ASSERT_TRUE(d.ok());
    dir_ = new TempDir(std::move(d).value());
    server_ = new ServerProcess(dir_->path() / "data",
                                {"--no-auth", "--python", TestPython(), "--python-device", "cpu"});
    started_ = server_->Start();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
    delete dir_;
    dir_ = nullptr;
  }
  void SetUp() override {
    if (!PythonHasTorch()) GTEST_SKIP() << TestPython() << " cannot import torch (set ASSAY_TEST_PYTHON)";
    ASSERT_TRUE(started_) << "server did not start; log in " << (dir_->path() / "data/server.log");
  }
  void TearDown() override {
    if (HasFailure() && dir_) {
      std::ifstream log(dir_->path() / "data/server.log");
      std::string text((std::istreambuf_iterator<char>(log)), {});
      std::cerr << "---- server log (last 4000 bytes) ----\n"
                << (text.size() > 4000 ? text.substr(text.size() - 4000) : text) << "\n";
    }
  }
  static json Run(const json& spec, double wait_s = 180) {
    std::string id = server_->Submit(spec);
    EXPECT_FALSE(id.empty()) << server_->Post("/v1/jobs", spec.dump()).body;
    if (id.empty()) return json::object();
    return server_->WaitJob(id, wait_s);
  }

  static TempDir* dir_;
  static ServerProcess* server_;
  static bool started_;
};

TempDir* PythonServerTest::dir_ = nullptr;
ServerProcess* PythonServerTest::server_ = nullptr;
bool PythonServerTest::started_ = false;

TEST_F(PythonServerTest, TorchCandidatePassesWithTimingCorrectnessAndStdout) {
  json spec = TorchSpec(Candidate("        print('hello from the candidate')\n        return x + y\n"));
  spec["outputs"] = {"z"};
  json job = Run(spec);
  ASSERT_EQ(job["state"], "done") << job.dump(2);
  const json& r = job["result"];
  EXPECT_TRUE(r["correctness"]["passed"].get<bool>()) << r["correctness"].dump(2);
  EXPECT_EQ(r["correctness"]["outputs"]["z"]["mismatches"], 0);
  EXPECT_EQ(r["correctness"]["outputs"]["z"]["total"], 4096);
  // The candidate's section flattened, the reference's beside it.
  const json& t = r["timing"];
  EXPECT_GT(t["median_ms"].get<double>(), 0) << t.dump(2);
  EXPECT_GE(t["samples"].get<int>(), 5);
  EXPECT_EQ(t["source"], "host");  // the CPU clock
  EXPECT_GT(t["reference"]["median_ms"].get<double>(), 0);
  EXPECT_FALSE(t.contains("cupti"));  // no GPU, no second clock
  const json& py = r["python"];
  EXPECT_NE(py["stdout"].get<std::string>().find("hello from the candidate"), std::string::npos) << py.dump(2);
  EXPECT_EQ(py["exit_code"], 0);
  EXPECT_TRUE(py["versions"].contains("torch")) << py.dump(2);
  EXPECT_EQ(py["device"], "cpu");
  // The output came back as an .npy blob.
  ASSERT_TRUE(r["outputs"].contains("z")) << r["outputs"].dump(2);
  auto blob = server_->Get("/v1/blobs/" + r["outputs"]["z"]["blob"].get<std::string>());
  ASSERT_EQ(blob.status, 200);
  EXPECT_EQ(blob.body.substr(1, 5), "NUMPY");
  EXPECT_EQ(r["compile"], nullptr);  // a plain torch job has no prepare step
}

TEST_F(PythonServerTest, WrongCandidateIsWrongResult) {
  json job = Run(TorchSpec(Candidate("        return x - y\n")));
  EXPECT_EQ(job["state"], "failed") << job.dump(2);
  EXPECT_EQ(job["error"]["class"], "wrong_result");
  EXPECT_GT(job["result"]["correctness"]["outputs"]["z"]["mismatches"].get<int>(), 0)
      << job["result"]["correctness"].dump(2);
  EXPECT_NE(job["error"]["message"].get<std::string>().find("z"), std::string::npos) << job["error"].dump(2);
}

TEST_F(PythonServerTest, SyntaxErrorIsCompileError) {
  json job = Run(TorchSpec("import torch\nclass Model(torch.nn.Module:\n    pass\n"));
  EXPECT_EQ(job["state"], "failed") << job.dump(2);
  EXPECT_EQ(job["error"]["class"], "compile_error");
  EXPECT_NE(job["error"].dump().find("SyntaxError"), std::string::npos) << job["error"].dump(2);
  EXPECT_EQ(job["result"]["python"]["compiled"], false);
}

TEST_F(PythonServerTest, ExceptionIsRuntimeErrorWithTraceback) {
  json job = Run(TorchSpec(Candidate("        raise ValueError('candidate gave up')\n")));
  EXPECT_EQ(job["state"], "failed") << job.dump(2);
  EXPECT_EQ(job["error"]["class"], "runtime_error");
  EXPECT_NE(job["error"]["message"].get<std::string>().find("candidate gave up"), std::string::npos)
      << job["error"].dump(2);
  // The traceback's tail rides in the result's error detail.
  const json& detail = job["result"]["error"]["detail"];
  ASSERT_TRUE(detail.is_object()) << job["result"]["error"].dump(2);
  EXPECT_NE(detail["traceback"].get<std::string>().find("ValueError"), std::string::npos) << detail.dump(2);
}

TEST_F(PythonServerTest, InterpreterDeathIsRuntimeErrorNamingTheSignal) {
  json job = Run(TorchSpec(Candidate("        import os, signal\n        os.kill(os.getpid(), signal.SIGSEGV)\n")));
  EXPECT_EQ(job["state"], "failed") << job.dump(2);
  EXPECT_EQ(job["error"]["class"], "runtime_error");
  EXPECT_NE(job["error"]["message"].get<std::string>().find("SIGSEGV"), std::string::npos) << job["error"].dump(2);
  EXPECT_EQ(job["result"]["python"]["signal_name"], "SIGSEGV");
}

TEST_F(PythonServerTest, SleepPastTimeoutIsTimedOutAndTheNextJobRuns) {
  auto t0 = std::chrono::steady_clock::now();
  json job = Run(TorchSpec(Candidate("        print('going to sleep', flush=True)\n"
                                     "        import time\n        time.sleep(120)\n        return x + y\n"),
                           8));
  EXPECT_EQ(job["state"], "timed_out") << job.dump(2);
  EXPECT_EQ(job["error"]["class"], "timeout");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(60));
  // Output up to the kill is kept.
  EXPECT_NE(job["result"]["python"]["stdout"].get<std::string>().find("going to sleep"), std::string::npos)
      << job["result"]["python"].dump(2);
  json next = Run(TorchSpec(Candidate("        return x + y\n")));
  EXPECT_EQ(next["state"], "done") << next.dump(2);
}

TEST_F(PythonServerTest, CancelWhileRunning) {
  json spec = TorchSpec(Candidate("        import time\n        time.sleep(120)\n        return x + y\n"));
  std::string id = server_->Submit(spec);
  ASSERT_FALSE(id.empty());
  for (int i = 0; i < 1200; ++i) {
    if (server_->Get("/v1/jobs/" + id).json().value("state", "") == "running") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // the harness is up
  auto t0 = std::chrono::steady_clock::now();
  auto r = server_->Post("/v1/jobs/" + id + "/cancel", "");
  EXPECT_EQ(r.status, 200) << r.body;
  json job = server_->WaitJob(id, 30);
  EXPECT_EQ(job["state"], "cancelled") << job.dump(2);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(20));
  EXPECT_EQ(Run(TorchSpec(Candidate("        return x + y\n")))["state"], "done");
}

// The harness processes of the next jobs start while a job runs
// (docs/python-kinds.md, "Standby"): the second job takes one started during
// the first (the suite may share a server, so the first may have taken one
// too), and each process runs one job.
TEST_F(PythonServerTest, SecondJobTakesTheProcessStartedDuringTheFirst) {
  json first = Run(TorchSpec(Candidate("        print('first', flush=True)\n        return x + y\n")));
  ASSERT_EQ(first["state"], "done") << first.dump(2);
  json second = Run(TorchSpec(Candidate("        print('second', flush=True)\n        return x + y\n")));
  ASSERT_EQ(second["state"], "done") << second.dump(2);
  const json& p1 = first["result"]["python"];
  const json& p2 = second["result"]["python"];
  EXPECT_TRUE(p1["prestarted"].is_boolean()) << p1.dump(2);
  EXPECT_EQ(p2["prestarted"], true) << p2.dump(2);
  EXPECT_NE(p1["process"]["pid"], p2["process"]["pid"]);
  EXPECT_EQ(p2["process"]["standby"], true) << p2.dump(2);
  EXPECT_GT(p2["process"]["ready_ms"].get<double>(), 0) << p2.dump(2);
  // Each process printed only its own job's output.
  EXPECT_NE(p2["stdout"].get<std::string>().find("second"), std::string::npos) << p2.dump(2);
  EXPECT_EQ(p2["stdout"].get<std::string>().find("first"), std::string::npos) << p2.dump(2);
  // Three more wait now (the default --python-standby 3), started in the server's data dir.
  const std::string data = (dir_->path() / "data").string();
  EXPECT_FALSE(WaitForStandby(data).empty());
  for (int i = 0; i < 100 && StandbysOf(data).size() < 3; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(StandbysOf(data).size(), 3u);
}

// A standby that died while it waited is never handed a job: the job starts
// a process of its own and passes.
TEST_F(PythonServerTest, StandbyKilledWhileWaitingIsReplaced) {
  ASSERT_EQ(Run(TorchSpec(Candidate("        return x + y\n")))["state"], "done");
  const std::string data = (dir_->path() / "data").string();
  std::vector<pid_t> standbys = WaitForStandby(data);
  ASSERT_FALSE(standbys.empty());
  for (pid_t pid : standbys) ::kill(pid, SIGKILL);
  json job = Run(TorchSpec(Candidate("        return x + y\n")));
  ASSERT_EQ(job["state"], "done") << job.dump(2);
  EXPECT_EQ(job["result"]["python"]["prestarted"], false) << job["result"]["python"].dump(2);
  EXPECT_TRUE(job["result"]["correctness"]["passed"].get<bool>());
}

TEST_F(PythonServerTest, KernelbenchJobReportsKernelbenchFields) {
  json spec = {{"kind", "kernelbench"},
               {"problem", {{"text", kKbProblem}}},
               {"candidate", {{"text", kKbCandidate}}},
               {"num_trials", 10},
               {"timing", FastTiming()}};
  json job = Run(spec);
  ASSERT_EQ(job["state"], "done") << job.dump(2);
  const json& r = job["result"];
  const json& kb = r["kernelbench"];
  EXPECT_TRUE(kb["compiled"].get<bool>()) << kb.dump(2);
  EXPECT_TRUE(kb["correctness"].get<bool>()) << kb.dump(2);
  EXPECT_GT(kb["runtime"].get<double>(), 0);
  EXPECT_GT(kb["ref_runtime"].get<double>(), 0);
  EXPECT_TRUE(kb["speedup"].is_number());
  EXPECT_TRUE(kb["runtime_stats"].contains("mean"));
  // kernelbench always gets the prepare step on the compile pool.
  ASSERT_TRUE(r["compile"].is_object()) << r.dump(2);
  EXPECT_EQ(r["compile"]["cache_key"].get<std::string>().size(), 64u);
  EXPECT_TRUE(r["timestamps"].contains("compiling"));
  // The same candidate again: the prepare is a cache hit.
  json again = Run(spec);
  ASSERT_EQ(again["state"], "done") << again.dump(2);
  EXPECT_TRUE(again["result"]["compile"]["cache_hit"].get<bool>()) << again["result"]["compile"].dump(2);
  EXPECT_EQ(again["result"]["compile"]["cache_key"], r["compile"]["cache_key"]);
}

TEST_F(PythonServerTest, KernelbenchCandidateThatDoesNotImportFailsInThePrepare) {
  json spec = {{"kind", "kernelbench"},
               {"problem", {{"text", kKbProblem}}},
               {"candidate", {{"text", std::string(kKbCandidate) + "\nraise ImportError('no such extension')\n"}}},
               {"timing", FastTiming()}};
  json job = Run(spec);
  EXPECT_EQ(job["state"], "failed") << job.dump(2);
  EXPECT_EQ(job["error"]["class"], "compile_error");
  // Ended on the compile pool: it never took the worker.
  EXPECT_FALSE(job["result"]["timestamps"].contains("running")) << job["result"]["timestamps"].dump();
  EXPECT_NE(job["result"]["compile"]["log"].get<std::string>().find("no such extension"), std::string::npos)
      << job["result"]["compile"].dump(2);
}

TEST_F(PythonServerTest, ModuleReferenceForAPythonCandidateIsRejectedAtSubmit) {
  json spec = TorchSpec(Candidate("        return x + y\n"));
  spec["reference"] = {{"kind", "cuda"},
                       {"source", {{"text", "extern \"C\" __global__ void add() {}"}}},
                       {"entry", "add"},
                       {"launch", {{"grid", {1, 1, 1}}, {"block", {1, 1, 1}}}}};
  auto r = server_->Post("/v1/jobs", spec.dump());
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(r.json()["error"]["field"], "reference.kind") << r.body;
}

TEST_F(PythonServerTest, TritonIsRejectedWhenTritonDoesNotImport) {
  std::string cmd = "'" + TestPython() + "' -c 'import triton' >/dev/null 2>&1";
  if (std::system(cmd.c_str()) == 0) GTEST_SKIP() << "triton imports here";
  json spec = {{"kind", "triton"}, {"source", {{"text", "def launch(x):\n    pass\n"}}},
               {"args", {{{"name", "x"}, {"role", "inout"}, {"dtype", "f32"}, {"shape", {4}}}}}};
  auto r = server_->Post("/v1/jobs", spec.dump());
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("triton does not import in"), std::string::npos) << r.body;
}

// A server whose interpreter does not exist offers no Python kinds, and says why.
// `--python-standby 0`: every job starts its own process when it starts, and
// none waits in between.
TEST(PythonServerNoStandbyTest, EveryJobStartsItsOwnProcess) {
  if (!PythonHasTorch()) GTEST_SKIP() << TestPython() << " cannot import torch (set ASSAY_TEST_PYTHON)";
  auto dir = TempDir::Create("assay-py-it-");
  ASSERT_TRUE(dir.ok());
  ServerProcess server(dir->path() / "data", {"--no-auth", "--python", TestPython(), "--python-device", "cpu",
                                              "--python-standby", "0"});
  ASSERT_TRUE(server.Start());
  for (int i = 0; i < 2; ++i) {
    std::string id = server.Submit(TorchSpec(Candidate("        return x + y\n")));
    ASSERT_FALSE(id.empty());
    json job = server.WaitJob(id, 180);
    ASSERT_EQ(job["state"], "done") << job.dump(2);
    EXPECT_EQ(job["result"]["python"]["prestarted"], false) << job["result"]["python"].dump(2);
  }
  EXPECT_TRUE(StandbysOf((dir->path() / "data").string()).empty());
}

TEST(PythonServerNoInterpreterTest, PythonKindsAreRejectedPlainly) {
  auto d = TempDir::Create("assay-py-none-");
  ASSERT_TRUE(d.ok());
  ServerProcess server(d->path() / "data",
                       {"--no-auth", "--python", "/nonexistent/python3", "--python-device", "cpu"});
  ASSERT_TRUE(server.Start());
  json spec = TorchSpec(Candidate("        return x + y\n"));
  auto r = server.Post("/v1/jobs", spec.dump());
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(r.json()["error"]["field"], "kind") << r.body;
  EXPECT_NE(r.body.find("/nonexistent/python3"), std::string::npos) << r.body;
}

}  // namespace
}  // namespace assay::testing

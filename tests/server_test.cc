// End-to-end tests: a real `assay serve` on loopback, driven over HTTP and
// through the CLI, with real nvcc/NVRTC compiles and real user programs.
#include <signal.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "api/http.h"

#include "common/util.h"
#include "gpu/devices.h"
#include "tests/server_fixture.h"

namespace assay::testing {
namespace {

using nlohmann::json;

json ProgramSpec(const std::string& source, double timeout_s = 60, json program = json::object()) {
  return {{"schema_version", 1}, {"kind", "cuda_program"}, {"source", {{"text", source}}},
          {"timeout_s", timeout_s}, {"program", program}};
}

json CompileSpec(const std::string& source) {
  return {{"schema_version", 1}, {"kind", "compile"}, {"source", {{"text", source}}},
          {"compile", {{"arch", "sm_90"}}}};
}

const char* kAddKernel = R"(extern "C" __global__ void add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
})";

const char* kHello = "#include <cstdio>\nint main(){ std::printf(\"hello from assay\\n\"); return 0; }\n";
const char* kSleep = "#include <unistd.h>\nint main(){ sleep(60); return 0; }\n";

class ServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ::signal(SIGPIPE, SIG_IGN); }  // a refused upload must not kill us
  void SetUp() override {
    auto d = TempDir::Create("assay-it-");
    ASSERT_TRUE(d.ok());
    dir_ = std::make_unique<TempDir>(std::move(d).value());
    server_ = std::make_unique<ServerProcess>(dir_->path() / "data", std::vector<std::string>{"--no-auth"});
    ASSERT_TRUE(server_->Start()) << "server did not start; log in " << (dir_->path() / "data/server.log");
  }
  void TearDown() override {
    if (HasFailure() && dir_) {
      std::ifstream log(dir_->path() / "data/server.log");
      std::string text((std::istreambuf_iterator<char>(log)), {});
      std::cerr << "---- server log (last 4000 bytes) ----\n"
                << (text.size() > 4000 ? text.substr(text.size() - 4000) : text) << "\n";
    }
    server_.reset();
  }
  std::unique_ptr<TempDir> dir_;
  std::unique_ptr<ServerProcess> server_;
};

TEST_F(ServerTest, CompileJobReportsResourcesAndCubin) {
  auto id = server_->Submit(CompileSpec(kAddKernel));
  ASSERT_FALSE(id.empty());
  json job = server_->WaitJob(id);
  ASSERT_EQ(job["state"], "done") << job.dump(2);
  const json& c = job["result"]["compile"];
  EXPECT_TRUE(c["kernels"].contains("add")) << c.dump(2);
  EXPECT_GT(c["kernels"]["add"]["registers"].get<int>(), 0);
  ASSERT_TRUE(c.contains("cubin_blob"));
  auto blob = server_->Get("/v1/blobs/" + c["cubin_blob"].get<std::string>());
  ASSERT_EQ(blob.status, 200);
  EXPECT_EQ(blob.body.substr(0, 4), "\x7f" "ELF");
}

TEST_F(ServerTest, BrokenSourceIsCompileErrorWithLog) {
  auto id = server_->Submit(CompileSpec("extern \"C\" __global__ void k() { this is not cuda; }"));
  ASSERT_FALSE(id.empty());
  json job = server_->WaitJob(id);
  EXPECT_EQ(job["state"], "failed");
  EXPECT_EQ(job["error"]["class"], "compile_error");
  EXPECT_NE(job["result"]["compile"]["log"].get<std::string>().find("error"), std::string::npos);
}

TEST_F(ServerTest, ProgramPrints) {
  auto id = server_->Submit(ProgramSpec(kHello));
  json job = server_->WaitJob(id, 120);
  ASSERT_EQ(job["state"], "done") << job.dump(2);
  EXPECT_EQ(job["result"]["program"]["stdout"], "hello from assay\n");
  EXPECT_EQ(job["result"]["program"]["exit_code"], 0);
  // The result records when each state was entered.
  for (const char* state : {"queued", "compiling", "running", "done"})
    EXPECT_TRUE(job["result"]["timestamps"].contains(state)) << state << " " << job["result"].dump();
}

TEST_F(ServerTest, SegfaultIsRuntimeErrorWithSignal) {
  auto id = server_->Submit(ProgramSpec("int main(){ volatile int* p = nullptr; *p = 1; return 0; }\n"));
  json job = server_->WaitJob(id, 120);
  EXPECT_EQ(job["state"], "failed") << job.dump(2);
  EXPECT_EQ(job["error"]["class"], "runtime_error");
  EXPECT_EQ(job["result"]["program"]["signal_name"], "SIGSEGV");
  // The worker survives a user program's crash and serves the next job.
  auto next = server_->WaitJob(server_->Submit(ProgramSpec(kHello)), 120);
  EXPECT_EQ(next["state"], "done");
}

TEST_F(ServerTest, HangIsKilledAtTimeout) {
  auto t0 = std::chrono::steady_clock::now();
  auto id = server_->Submit(ProgramSpec("int main(){ for(;;){} }\n", 2));
  json job = server_->WaitJob(id, 120);
  EXPECT_EQ(job["state"], "timed_out") << job.dump(2);
  EXPECT_EQ(job["error"]["class"], "timeout");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(60));
  EXPECT_EQ(server_->WaitJob(server_->Submit(ProgramSpec(kHello)), 120)["state"], "done");
}

TEST_F(ServerTest, StdoutFloodIsCapped) {
  auto src = "#include <cstdio>\nint main(){ for(long i=0;i<2000000;i++) std::fputs(\"0123456789abcdef0123456789abcdef\\n\", stdout); }\n";
  auto id = server_->Submit(ProgramSpec(src, 60, {{"stdout_limit_bytes", 65536}}));
  json job = server_->WaitJob(id, 120);
  ASSERT_EQ(job["state"], "done") << job.dump(2).substr(0, 2000);
  const json& p = job["result"]["program"];
  EXPECT_TRUE(p["stdout_truncated"].get<bool>());
  EXPECT_LE(p["stdout"].get<std::string>().size(), 65536u);
  EXPECT_EQ(p["stdout_bytes"].get<int64_t>(), 2000000LL * 33);
}

TEST_F(ServerTest, CancelRunningProgram) {
  auto id = server_->Submit(ProgramSpec(kSleep, 120));
  // Wait until it runs.
  for (int i = 0; i < 600; ++i) {
    if (server_->Get("/v1/jobs/" + id).json().value("state", "") == "running") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  auto r = server_->Post("/v1/jobs/" + id + "/cancel", "");
  EXPECT_EQ(r.status, 200) << r.body;
  json job = server_->WaitJob(id, 30);
  EXPECT_EQ(job["state"], "cancelled");
  EXPECT_EQ(job["error"]["class"], "cancelled");
  // Cancelling again is refused; the worker serves the next job.
  EXPECT_EQ(server_->Post("/v1/jobs/" + id + "/cancel", "").status, 400);
  EXPECT_EQ(server_->WaitJob(server_->Submit(ProgramSpec(kHello)), 120)["state"], "done");
}

TEST_F(ServerTest, CancelQueuedJob) {
  // Occupy the single worker, then cancel a job waiting behind it.
  auto blocker = server_->Submit(ProgramSpec(kSleep, 120));
  auto waiting = server_->Submit(ProgramSpec(kHello));
  auto r = server_->Post("/v1/jobs/" + waiting + "/cancel", "");
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(server_->WaitJob(waiting, 30)["state"], "cancelled");
  server_->Post("/v1/jobs/" + blocker + "/cancel", "");
  EXPECT_EQ(server_->WaitJob(blocker, 30)["state"], "cancelled");
}

TEST_F(ServerTest, ProgramTouchingCudaWithoutGpuIsClearRuntimeError) {
  if (!ListGpus().gpus.empty()) GTEST_SKIP() << "this machine has a GPU";
  auto src = "#include <cstdio>\n#include <cuda_runtime.h>\nint main(){ int n=0; cudaError_t e = cudaGetDeviceCount(&n);"
             " if (e != cudaSuccess) { std::fprintf(stderr, \"CUDA: %s\\n\", cudaGetErrorString(e)); return 1; } return 0; }\n";
  json job = server_->WaitJob(server_->Submit(ProgramSpec(src)), 120);
  EXPECT_EQ(job["state"], "failed") << job.dump(2);
  EXPECT_EQ(job["error"]["class"], "runtime_error");
  EXPECT_NE(job["error"]["message"].get<std::string>().find("no GPU"), std::string::npos) << job.dump(2);
}

TEST_F(ServerTest, KernelKindIsRejectedPlainlyWithoutGpu) {
  if (!ListGpus().gpus.empty()) GTEST_SKIP() << "this machine has a GPU";
  json spec = {{"schema_version", 1}, {"kind", "cuda"}, {"source", {{"text", kAddKernel}}}, {"entry", "add"}};
  auto r = server_->Post("/v1/jobs", spec.dump());
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(r.json()["error"]["class"], "rejected");
}

TEST_F(ServerTest, ManyConcurrentSubmits) {
  constexpr int kThreads = 8, kPerThread = 8;
  std::vector<std::thread> threads;
  std::mutex mu;
  std::set<std::string> ids;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < kPerThread; ++i) {
        auto id = server_->Submit(CompileSpec(kAddKernel));
        std::lock_guard<std::mutex> lock(mu);
        ids.insert(id);
      }
    });
  for (auto& t : threads) t.join();
  ASSERT_EQ(ids.size(), static_cast<size_t>(kThreads * kPerThread));
  EXPECT_FALSE(ids.count(""));
  for (const auto& id : ids) EXPECT_EQ(server_->WaitJob(id, 120)["state"], "done") << id;
  auto stats = server_->Get("/v1/stats").json();
  // Identical sources compile once: concurrent compiles of one key wait for the first.
  EXPECT_EQ(stats["compile_cache"]["misses"].get<int>(), 1) << stats.dump();
  EXPECT_EQ(stats["compile_cache"]["hits"].get<int>(), kThreads * kPerThread - 1) << stats.dump();
}

TEST_F(ServerTest, EventStreamDeliversStatesInOrder) {
  auto id = server_->Submit(CompileSpec(kAddKernel));
  httplib::Client c("127.0.0.1", server_->port());
  c.set_read_timeout(60);
  std::string stream;
  auto r = c.Get(("/v1/jobs/" + id + "/events").c_str(), [&](const char* data, size_t n) {
    stream.append(data, n);
    return true;
  });
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  auto q = stream.find("\"queued\"");
  auto c1 = stream.find("\"compiling\"");
  auto d = stream.find("\"done\"");
  ASSERT_NE(q, std::string::npos) << stream;
  ASSERT_NE(c1, std::string::npos) << stream;
  ASSERT_NE(d, std::string::npos) << stream;
  EXPECT_LT(q, c1);
  EXPECT_LT(c1, d);
}

TEST_F(ServerTest, BadRequestsAreRejectedAndServerStaysUp) {
  auto r = server_->Post("/v1/jobs", "{not json");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.json()["error"]["class"], "rejected");
  r = server_->Post("/v1/jobs", R"({"schema_version":1,"kind":"compile","source":{"text":"x"},"timeout_s":-1})");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.json()["error"]["field"], "timeout_s") << r.body;
  // Above the 64 MiB request limit: refused from its Content-Length, before the
  // body is read, so the client sees a 413 or (still sending) a closed connection.
  std::string huge(70 << 20, 'x');
  r = server_->Post("/v1/jobs", huge);
  EXPECT_TRUE(r.status == 413 || r.status == 0) << r.status;
  EXPECT_EQ(server_->Get("/health").status, 200);
  EXPECT_EQ(server_->Get("/v1/jobs/j_doesnotexist").status, 404);
}

TEST_F(ServerTest, MetricsAndGpusAnswer) {
  server_->WaitJob(server_->Submit(CompileSpec(kAddKernel)));
  auto m = server_->Get("/metrics");
  EXPECT_EQ(m.status, 200);
  EXPECT_NE(m.body.find("assay_jobs_submitted_total 1"), std::string::npos) << m.body;
  auto g = server_->Get("/v1/gpus");
  EXPECT_EQ(g.status, 200);
  EXPECT_TRUE(g.json().contains("gpus"));
}

TEST_F(ServerTest, CliRunPrintsProgramOutputAndExitCodes) {
  auto src = dir_->path() / "hello.cu";
  std::ofstream(src) << kHello;
  auto [code, out] = RunAssay({"run", src.string(), "--server", server_->url()});
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("hello from assay"), std::string::npos) << out;
  auto crash = dir_->path() / "crash.cu";
  std::ofstream(crash) << "int main(){ volatile int* p = nullptr; *p = 1; }\n";
  auto [code2, out2] = RunAssay({"run", crash.string(), "--server", server_->url(), "--json"});
  EXPECT_EQ(code2, 1) << out2;
  auto j = json::parse(out2.substr(out2.find('{')), nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << out2;
  auto [code3, out3] = RunAssay({"list", "--server", server_->url()});
  EXPECT_EQ(code3, 0) << out3;
}

TEST(ServerAuthTest, KeysAreRequiredAndChecked) {
  auto dir = TempDir::Create("assay-it-");
  ASSERT_TRUE(dir.ok());
  auto data = dir->path() / "data";
  auto [code, out] = RunAssay({"keys", "create", "ci", "--data-dir", data.string()});
  ASSERT_EQ(code, 0) << out;
  auto pos = out.find("assay_");
  ASSERT_NE(pos, std::string::npos) << out;
  std::string secret = out.substr(pos, 6 + 48);
  ServerProcess server(data);
  ASSERT_TRUE(server.Start());
  EXPECT_EQ(server.Get("/health").status, 200);
  EXPECT_EQ(server.Get("/v1/jobs").status, 401);
  EXPECT_EQ(server.Get("/v1/jobs", "assay_" + std::string(48, '0')).status, 401);
  EXPECT_EQ(server.Get("/v1/jobs", secret).status, 200);
  EXPECT_FALSE(server.Submit(CompileSpec(kAddKernel), secret).empty());
  // CLI takes the key from ASSAY_API_KEY.
  auto [c2, o2] = RunAssay({"list", "--server", server.url()}, {"ASSAY_API_KEY=" + secret});
  EXPECT_EQ(c2, 0) << o2;
  auto [c3, o3] = RunAssay({"list", "--server", server.url()}, {"ASSAY_API_KEY=wrong"});
  EXPECT_EQ(c3, 2) << o3;
}

TEST(ServerAuthTest, NoAuthOnlyOnLoopback) {
  auto dir = TempDir::Create("assay-it-");
  ASSERT_TRUE(dir.ok());
  auto [code, out] = RunAssay({"serve", "--host", "0.0.0.0", "--port", "0", "--no-auth", "--data-dir",
                               (dir->path() / "d").string()});
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find("loopback"), std::string::npos) << out;
}

TEST(ServerRestartTest, Kill9MidJobLosesNothing) {
  auto dir = TempDir::Create("assay-it-");
  ASSERT_TRUE(dir.ok());
  auto data = dir->path() / "data";
  std::vector<std::string> accepted;
  std::string slow_id;
  {
    ServerProcess server(data, {"--no-auth"});
    ASSERT_TRUE(server.Start());
    // A job that runs ~3 s; kill the server while it runs.
    slow_id = server.Submit(ProgramSpec("#include <unistd.h>\nint main(){ sleep(3); return 0; }\n", 60));
    ASSERT_FALSE(slow_id.empty());
    accepted.push_back(slow_id);
    for (int i = 0; i < 5; ++i) accepted.push_back(server.Submit(CompileSpec(kAddKernel)));
    for (int i = 0; i < 600; ++i) {
      if (server.Get("/v1/jobs/" + slow_id).json().value("state", "") == "running") break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ASSERT_EQ(server.Get("/v1/jobs/" + slow_id).json().value("state", ""), "running");
    server.Kill9();
  }
  // Workers die with the server: nothing of the old server keeps running.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_TRUE(ProcessesMentioning(data.string()).empty());
  ServerProcess server(data, {"--no-auth"});
  ASSERT_TRUE(server.Start());
  for (const auto& id : accepted) {
    ASSERT_FALSE(id.empty());
    json job = server.WaitJob(id, 120);
    EXPECT_EQ(job["state"], "done") << id << " " << job.dump(2).substr(0, 1500);
  }
  json slow = server.Get("/v1/jobs/" + slow_id).json();
  EXPECT_EQ(slow["attempts"], 1) << slow.dump(2).substr(0, 1500);
  auto events = server.Get("/v1/jobs/" + slow_id + "/events");
  EXPECT_NE(events.body.find("restart"), std::string::npos) << events.body;
}

}  // namespace
}  // namespace assay::testing

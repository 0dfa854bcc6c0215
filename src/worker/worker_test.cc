#include "worker/worker_client.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include <gtest/gtest.h>

#include "common/util.h"
#include "proc/subprocess.h"

namespace assay {
namespace {

int CountOpenFds() {
  int n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

// True while pid exists (a zombie counts: kill() succeeds on it).
bool PidExists(pid_t pid) { return kill(pid, 0) == 0 || errno != ESRCH; }
bool GroupExists(pid_t pgid) { return kill(-pgid, 0) == 0 || errno != ESRCH; }

class WorkerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = TempDir::Create("assay_worker_test_");
    ASSERT_TRUE(d.ok());
    dir_ = std::make_unique<TempDir>(std::move(d.value()));
    opts_.self_exe = ASSAY_TEST_WORKER;
    opts_.work_dir = dir_->path() / "work";
    opts_.heartbeat_interval_ms = 100;
    opts_.heartbeat_timeout_ms = 1500;
    opts_.kill_grace_ms = 500;
    opts_.sandbox = true;
  }

  // A script artifact: the runner executes whatever the compile stage produced.
  std::filesystem::path Script(const std::string& name, const std::string& body) {
    auto path = dir_->path() / name;
    EXPECT_TRUE(WriteFileAtomic(path, "#!/bin/sh\n" + body + "\n").ok());
    chmod(path.c_str(), 0755);
    return path;
  }

  WorkItem Program(const std::filesystem::path& artifact, nlohmann::json program = nlohmann::json::object(),
                   int64_t timeout_ms = 10'000) {
    WorkItem item;
    item.job_id = RandomId("j_");
    item.spec = {{"kind", "cuda_program"}, {"program", std::move(program)}};
    item.artifact = artifact;
    item.timeout_ms = timeout_ms;
    return item;
  }

  WorkItem Kind(const std::string& kind, int64_t timeout_ms = 10'000) {
    WorkItem item;
    item.job_id = RandomId("j_");
    item.spec = {{"kind", kind}};
    item.timeout_ms = timeout_ms;
    return item;
  }

  // The worker pid as the test_echo kind reports it.
  pid_t EchoPid(WorkerClient& client) {
    auto out = client.Run(Kind("test_echo"));
    EXPECT_TRUE(out.status.ok()) << out.status.ToString();
    return out.result.value("pid", 0);
  }

  std::unique_ptr<TempDir> dir_;
  WorkerOptions opts_;
};

TEST_F(WorkerTest, HelloCarriesPidDeviceAndKinds) {
  WorkerClient client(opts_);
  auto hello = client.EnsureStarted();
  ASSERT_TRUE(hello.ok()) << hello.status().ToString();
  EXPECT_EQ((*hello)["v"], 1);
  EXPECT_EQ((*hello)["type"], "hello");
  EXPECT_GT((*hello)["pid"].get<int>(), 0);
  EXPECT_EQ((*hello)["device"], -1);
  EXPECT_TRUE((*hello)["gpu"].is_null());
  auto kinds = (*hello)["capabilities"]["kinds"];
  EXPECT_NE(std::find(kinds.begin(), kinds.end(), "cuda_program"), kinds.end());
  EXPECT_TRUE(client.alive());
  EXPECT_EQ(client.restarts(), 0);
}

TEST_F(WorkerTest, MissingWorkerBinaryIsInfra) {
  opts_.self_exe = dir_->path() / "no-such-assay";
  opts_.start_timeout_ms = 5000;
  WorkerClient client(opts_);
  auto hello = client.EnsureStarted();
  ASSERT_FALSE(hello.ok());
  EXPECT_EQ(hello.status().error_class(), ErrorClass::kInfraError);
  EXPECT_FALSE(client.alive());
  auto out = client.Run(Kind("test_echo"));
  EXPECT_EQ(out.status.error_class(), ErrorClass::kInfraError);
}

TEST_F(WorkerTest, ProgramGetsArgvStdinEnvAndOwnDirectory) {
  WorkerClient client(opts_);
  auto artifact = Script("prog", "echo \"args=$*\"; cat; echo \"foo=$FOO\"; pwd; echo made > f.txt; ls");
  auto out = client.Run(Program(artifact, {{"argv", {"a", "b c"}}, {"stdin", "in!\n"}, {"env", {{"FOO", "bar"}}}}));
  ASSERT_TRUE(out.status.ok()) << out.status.ToString();
  const auto& p = out.result["program"];
  std::string s = p["stdout"];
  EXPECT_EQ(s.rfind("args=a b c\nin!\nfoo=bar\n" + opts_.work_dir.string() + "/job_", 0), 0u) << s;
  EXPECT_NE(s.find("f.txt"), std::string::npos);
  EXPECT_EQ(p["exit_code"], 0);
  EXPECT_TRUE(p["signal"].is_null());
  EXPECT_EQ(p["stdout_bytes"].get<uint64_t>(), s.size());
  EXPECT_FALSE(p["stdout_truncated"].get<bool>());
  EXPECT_GE(p["duration_ms"].get<int64_t>(), 0);
  // The per-job directory is gone afterwards.
  EXPECT_TRUE(std::filesystem::is_empty(opts_.work_dir));
}

TEST_F(WorkerTest, NonZeroExitIsRuntimeErrorWithNoGpuHint) {
  WorkerClient client(opts_);
  auto out = client.Run(Program(Script("exit3", "echo oops >&2; exit 3")));
  EXPECT_EQ(out.status.error_class(), ErrorClass::kRuntimeError);
  EXPECT_EQ(out.status.message().rfind("program exited with code 3", 0), 0u) << out.status.message();
  EXPECT_NE(out.status.message().find("this worker has no GPU"), std::string::npos);
  EXPECT_EQ(out.result["program"]["exit_code"], 3);
  EXPECT_EQ(out.result["program"]["stderr"], "oops\n");
}

TEST_F(WorkerTest, CompiledProgramThatSegfaultsIsRuntimeErrorWithSignal) {
  // A real C program built with the host compiler, like nvcc's output would be.
  auto src = dir_->path() / "crash.c";
  ASSERT_TRUE(WriteFileAtomic(src, "#include <stdio.h>\nint main(void){puts(\"before\");fflush(stdout);"
                                   "volatile int* p=0; *p=1; return 0;}\n").ok());
  auto exe = dir_->path() / "crash";
  ProcessOptions cc;
  cc.argv = {"cc", "-O0", "-o", exe.string(), src.string()};
  auto built = RunProcess(cc);
  if (!built.ok() || built->exit_code != 0) GTEST_SKIP() << "no host C compiler";

  WorkerClient client(opts_);
  auto out = client.Run(Program(exe));
  EXPECT_EQ(out.status.error_class(), ErrorClass::kRuntimeError);
  EXPECT_EQ(out.status.message().rfind("program killed by SIGSEGV", 0), 0u) << out.status.message();
  EXPECT_EQ(out.result["program"]["signal"], SIGSEGV);
  EXPECT_EQ(out.result["program"]["signal_name"], "SIGSEGV");
  EXPECT_EQ(out.result["program"]["stdout"], "before\n");
  EXPECT_FALSE(out.worker_restarted);
}

TEST_F(WorkerTest, HangingProgramTimesOutAndWorkerServesNextJob) {
  WorkerClient client(opts_);
  pid_t worker = EchoPid(client);
  auto out = client.Run(Program(Script("hang", "echo started; sleep 100"), {}, 400));
  EXPECT_EQ(out.status.error_class(), ErrorClass::kTimeout);
  EXPECT_EQ(out.result["program"]["stdout"], "started\n");  // partial output kept
  EXPECT_FALSE(out.worker_restarted);
  auto next = client.Run(Program(Script("ok", "echo fine")));
  ASSERT_TRUE(next.status.ok()) << next.status.ToString();
  EXPECT_EQ(next.result["program"]["stdout"], "fine\n");
  EXPECT_EQ(EchoPid(client), worker);  // the same worker
  EXPECT_EQ(client.restarts(), 0);
}

TEST_F(WorkerTest, OutputFloodIsCapped) {
  WorkerClient client(opts_);
  auto out = client.Run(Program(Script("flood", "yes | head -c 20000000"), {{"stdout_limit_bytes", 1000}}));
  ASSERT_TRUE(out.status.ok()) << out.status.ToString();
  const auto& p = out.result["program"];
  EXPECT_EQ(p["stdout"].get<std::string>().size(), 1000u);
  EXPECT_EQ(p["stdout_bytes"], 20000000);
  EXPECT_TRUE(p["stdout_truncated"].get<bool>());
}

TEST_F(WorkerTest, InvalidUtf8OutputIsSanitized) {
  WorkerClient client(opts_);
  auto out = client.Run(Program(Script("bytes", "printf 'a\\377b'")));
  ASSERT_TRUE(out.status.ok()) << out.status.ToString();
  EXPECT_EQ(out.result["program"]["stdout"], "a\xEF\xBF\xBD" "b");
}

TEST_F(WorkerTest, CancelDuringRunAndNextJobWorks) {
  WorkerClient client(opts_);
  WorkItem item = Program(Script("long", "sleep 100"), {}, 60'000);
  std::thread canceller([&] {
    usleep(400'000);
    client.Cancel(item.job_id);
  });
  int64_t t0 = MonotonicMs();
  auto out = client.Run(item);
  canceller.join();
  EXPECT_EQ(out.status.error_class(), ErrorClass::kCancelled);
  EXPECT_LT(MonotonicMs() - t0, 5000);
  EXPECT_FALSE(out.worker_restarted);  // the worker stopped the program itself
  auto next = client.Run(Program(Script("ok", "echo fine")));
  EXPECT_TRUE(next.status.ok()) << next.status.ToString();
  EXPECT_EQ(client.restarts(), 0);
}

TEST_F(WorkerTest, CancelOfAHungWorkerKillsIt) {
  WorkerClient client(opts_);
  WorkItem item = Kind("test_hang", 60'000);
  std::thread canceller([&] {
    usleep(300'000);
    client.Cancel(item.job_id);
  });
  auto out = client.Run(item);
  canceller.join();
  EXPECT_EQ(out.status.error_class(), ErrorClass::kCancelled);
  EXPECT_TRUE(out.worker_restarted);
  EXPECT_TRUE(client.Run(Kind("test_echo")).status.ok());
  EXPECT_EQ(client.restarts(), 1);
}

TEST_F(WorkerTest, WorkerCrashIsRuntimeErrorAndFreshWorkerServesNext) {
  WorkerClient client(opts_);
  pid_t first = EchoPid(client);
  auto out = client.Run(Kind("test_crash"));
  EXPECT_EQ(out.status.error_class(), ErrorClass::kRuntimeError);
  EXPECT_EQ(out.status.message(), "worker crashed with SIGSEGV while running the job");
  EXPECT_TRUE(out.worker_restarted);
  EXPECT_FALSE(PidExists(first));  // reaped, not a zombie
  EXPECT_FALSE(GroupExists(first));
  pid_t second = EchoPid(client);
  EXPECT_NE(second, first);
  EXPECT_EQ(client.restarts(), 1);
}

TEST_F(WorkerTest, HungWorkerIsKilledAtTimeoutPlusGrace) {
  WorkerClient client(opts_);
  pid_t first = EchoPid(client);
  int64_t t0 = MonotonicMs();
  auto out = client.Run(Kind("test_hang", 300));
  int64_t elapsed = MonotonicMs() - t0;
  EXPECT_EQ(out.status.error_class(), ErrorClass::kTimeout);
  EXPECT_EQ(out.status.message(), "timed out after 0.3 s");
  EXPECT_GE(elapsed, 300 + opts_.kill_grace_ms - 20);
  EXPECT_LT(elapsed, 5000);
  EXPECT_FALSE(GroupExists(first));
  EXPECT_TRUE(client.Run(Kind("test_echo")).status.ok());
}

TEST_F(WorkerTest, LostHeartbeatIsInfraErrorAndGroupIsGone) {
  WorkerClient client(opts_);
  pid_t first = EchoPid(client);
  auto out = client.Run(Kind("test_stop_heartbeat", 60'000));
  EXPECT_EQ(out.status.error_class(), ErrorClass::kInfraError);
  EXPECT_NE(out.status.message().find("worker stopped responding"), std::string::npos);
  EXPECT_FALSE(PidExists(first));
  EXPECT_FALSE(GroupExists(first));
  EXPECT_TRUE(client.Run(Kind("test_echo")).status.ok());
}

TEST_F(WorkerTest, UnknownKindIsRejected) {
  WorkerClient client(opts_);
  auto out = client.Run(Kind("no_such_kind"));
  EXPECT_EQ(out.status.error_class(), ErrorClass::kRejected);
  EXPECT_TRUE(client.alive());
}

TEST_F(WorkerTest, MissingArtifactIsInfra) {
  WorkerClient client(opts_);
  auto out = client.Run(Program(dir_->path() / "never-built"));
  EXPECT_EQ(out.status.error_class(), ErrorClass::kInfraError);
}

TEST_F(WorkerTest, NoFdOrProcessLeftBehind) {
  const int fds_before = CountOpenFds();
  pid_t first = 0, second = 0;
  {
    WorkerClient client(opts_);
    first = EchoPid(client);
    (void)client.Run(Kind("test_crash"));
    second = EchoPid(client);
    (void)client.Run(Program(Script("ok", "echo fine")));
  }
  EXPECT_EQ(CountOpenFds(), fds_before);
  EXPECT_FALSE(PidExists(first));
  EXPECT_FALSE(PidExists(second));  // the destructor reaped it
  EXPECT_FALSE(GroupExists(second));
}

TEST_F(WorkerTest, SandboxedProgramHasNoNetworkButUnsandboxedDoes) {
  // /proc/net/dev lists only "lo" inside a new network namespace.
  auto artifact = Script("net", "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | sort | tr '\\n' ,");
  WorkerClient sandboxed(opts_);
  auto in = sandboxed.Run(Program(artifact));
  ASSERT_TRUE(in.status.ok()) << in.status.ToString();
  auto hello = sandboxed.EnsureStarted();
  if ((*hello)["capabilities"]["sandbox"] == "none") GTEST_SKIP() << "no network isolation on this host";
  EXPECT_EQ(in.result["program"]["stdout"], "lo,");
}

}  // namespace
}  // namespace assay

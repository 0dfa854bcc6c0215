#include "proc/subprocess.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

extern char** environ;

#include <gtest/gtest.h>

#include "common/util.h"
#include "proc/sandbox.h"
#include "proc/unique_fd.h"

namespace assay {
namespace {

ProcessOptions Sh(const std::string& script) {
  ProcessOptions o;
  o.argv = {"/bin/sh", "-c", script};
  return o;
}

ProcessResult MustRun(const ProcessOptions& o) {
  auto r = RunProcess(o);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? r.value() : ProcessResult{};
}

// A killed grandchild is re-parented to init, which may take its time to reap
// it: a zombie counts as dead.
// (Read with a stream: /proc files report size 0, which ReadFile trusts.)
bool PidAlive(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return false;
  auto paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] != 'Z';
}

static_assert(std::is_nothrow_move_constructible_v<UniqueFd>);
static_assert(!std::is_copy_constructible_v<UniqueFd>);

TEST(SubprocessTest, ReportsExitCodeAndOutput) {
  auto r = MustRun(Sh("echo out; echo err >&2; exit 3"));
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.signal, 0);
  EXPECT_EQ(r.stdout_data, "out\n");
  EXPECT_EQ(r.stderr_data, "err\n");
  EXPECT_EQ(r.stdout_bytes, 4u);
  EXPECT_FALSE(r.timed_out);
  EXPECT_FALSE(r.stdout_truncated);
}

TEST(SubprocessTest, LooksUpArgv0OnPath) {
  ProcessOptions o;
  o.argv = {"echo", "hello"};
  auto r = MustRun(o);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.stdout_data, "hello\n");
}

TEST(SubprocessTest, ReportsTerminatingSignal) {
  auto r = MustRun(Sh("kill -SEGV $$"));
  EXPECT_EQ(r.signal, SIGSEGV);
  EXPECT_EQ(SignalName(r.signal), "SIGSEGV");
}

TEST(SubprocessTest, SignalNames) {
  EXPECT_EQ(SignalName(SIGKILL), "SIGKILL");
  EXPECT_EQ(SignalName(SIGABRT), "SIGABRT");
  EXPECT_EQ(SignalName(SIGFPE), "SIGFPE");
}

TEST(SubprocessTest, TimeoutKillsChildAndGrandchild) {
  std::filesystem::path pidfile = std::filesystem::temp_directory_path() /
                                  ("assay_gc_" + std::to_string(getpid()));
  auto o = Sh("sleep 100 & echo $! > " + pidfile.string() + "; sleep 100");
  o.timeout_ms = 300;
  int64_t t0 = MonotonicMs();
  auto r = MustRun(o);
  EXPECT_LT(MonotonicMs() - t0, 5000);
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.signal, SIGKILL);
  auto text = ReadFile(pidfile);
  ASSERT_TRUE(text.ok());
  pid_t grandchild = std::stoi(*text);
  std::filesystem::remove(pidfile);
  // The grandchild was re-parented to init; give init a moment to reap it.
  for (int i = 0; i < 100 && PidAlive(grandchild); ++i) usleep(20'000);
  EXPECT_FALSE(PidAlive(grandchild)) << "grandchild " << grandchild << " survived";
}

TEST(SubprocessTest, GrandchildLeftBehindIsKilledWhenLeaderExits) {
  std::filesystem::path pidfile = std::filesystem::temp_directory_path() /
                                  ("assay_left_" + std::to_string(getpid()));
  // The background sleep keeps stdout open; the call must still return promptly.
  auto o = Sh("sleep 100 & echo $! > " + pidfile.string() + "; exit 0");
  int64_t t0 = MonotonicMs();
  auto r = MustRun(o);
  EXPECT_LT(MonotonicMs() - t0, 3000);
  EXPECT_EQ(r.exit_code, 0);
  auto text = ReadFile(pidfile);
  ASSERT_TRUE(text.ok());
  pid_t grandchild = std::stoi(*text);
  std::filesystem::remove(pidfile);
  for (int i = 0; i < 100 && PidAlive(grandchild); ++i) usleep(20'000);
  EXPECT_FALSE(PidAlive(grandchild));
}

TEST(SubprocessTest, StdoutFloodIsCappedAndCounted) {
  auto o = Sh("yes | head -c 50000000");
  o.stdout_limit = 1000;
  int64_t t0 = MonotonicMs();
  auto r = MustRun(o);
  EXPECT_LT(MonotonicMs() - t0, 20000);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.stdout_data.size(), 1000u);
  EXPECT_EQ(r.stdout_bytes, 50000000u);
  EXPECT_TRUE(r.stdout_truncated);
  EXPECT_EQ(r.stdout_data.substr(0, 4), "y\ny\n");
}

TEST(SubprocessTest, DeliversStdinData) {
  auto o = Sh("wc -c; cat");
  o.stdin_data = std::string(200000, 'x');  // larger than a pipe buffer
  auto r = MustRun(o);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.stdout_data, "200000\n");
}

TEST(SubprocessTest, StdinIsDevNullByDefault) {
  auto r = MustRun(Sh("cat; echo done"));
  EXPECT_EQ(r.stdout_data, "done\n");
}

TEST(SubprocessTest, ChildThatIgnoresStdinDoesNotBreakTheCaller) {
  auto o = Sh("exec 0<&-; echo ok");
  o.stdin_data = std::string(1 << 20, 'x');
  auto r = MustRun(o);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.stdout_data, "ok\n");
}

TEST(SubprocessTest, CancelFlagKillsTheGroup) {
  std::atomic<bool> cancel{false};
  auto o = Sh("sleep 100");
  o.cancel = &cancel;
  std::thread t([&] {
    usleep(200'000);
    cancel = true;
  });
  int64_t t0 = MonotonicMs();
  auto r = MustRun(o);
  t.join();
  EXPECT_TRUE(r.cancelled);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.signal, SIGKILL);
  EXPECT_LT(MonotonicMs() - t0, 2000);
}

TEST(SubprocessTest, MissingBinaryIsInfra) {
  ProcessOptions o;
  o.argv = {"/nonexistent/assay-no-such-binary"};
  auto r = RunProcess(o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().error_class(), ErrorClass::kInfraError);
  EXPECT_NE(r.status().message().find("cannot execute /nonexistent/assay-no-such-binary"),
            std::string::npos);
  o.argv = {"assay-no-such-binary-on-path"};
  r = RunProcess(o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().error_class(), ErrorClass::kInfraError);
}

TEST(SubprocessTest, NonExecutableFileIsInfraWithReason) {
  auto dir = TempDir::Create("assay_proc_");
  ASSERT_TRUE(dir.ok());
  auto file = dir->path() / "not_exec";
  ASSERT_TRUE(WriteFileAtomic(file, "#!/bin/sh\n").ok());
  ProcessOptions o;
  o.argv = {file.string()};
  auto r = RunProcess(o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().error_class(), ErrorClass::kInfraError);
  EXPECT_NE(r.status().message().find("Permission denied"), std::string::npos) << r.status().message();
}

TEST(SubprocessTest, EnvAndCwdAreApplied) {
  auto dir = TempDir::Create("assay_proc_");
  ASSERT_TRUE(dir.ok());
  auto o = Sh("echo \"$FOO\"; pwd");
  o.env = std::map<std::string, std::string>{{"FOO", "bar"}, {"PATH", "/usr/bin:/bin"}};
  o.cwd = dir->path();
  auto r = MustRun(o);
  EXPECT_EQ(r.stdout_data, "bar\n" + std::filesystem::canonical(dir->path()).string() + "\n");
}

TEST(SubprocessTest, OnStartSeesTheProcessGroupLeader) {
  int seen = 0;
  auto o = Sh("ps -o pgid= -p $$ 2>/dev/null || cut -d' ' -f5 /proc/$$/stat");
  o.on_start = [&](int pid) { seen = pid; };
  auto r = MustRun(o);
  EXPECT_GT(seen, 0);
  EXPECT_EQ(std::stoi(r.stdout_data), seen);  // the child leads its own group
}

// A started child works before it has its task, then takes it on stdin; the
// timeout counts from SuperviseProcess, not from the start.
TEST(StartedProcessTest, TakesItsWorkOnStdinWhenSupervised) {
  auto dir = TempDir::Create("assay_proc_");
  ASSERT_TRUE(dir.ok());
  auto o = Sh("echo warming; touch ready; read job; echo \"got $job\"; echo late >&2");
  o.cwd = dir->path();
  o.stdin_pipe = true;
  auto child = StartProcess(o);
  ASSERT_TRUE(child.ok()) << child.status().ToString();
  const int pid = (*child)->pid();
  EXPECT_GT(pid, 0);
  for (int i = 0; i < 200 && !std::filesystem::exists(dir->path() / "ready"); ++i) usleep(10'000);
  ASSERT_TRUE(std::filesystem::exists(dir->path() / "ready"));
  usleep(300'000);  // longer than the timeout below: it must not count yet
  EXPECT_FALSE((*child)->Exited());  // waiting for its job

  ProcessOptions run;
  run.stdin_data = "job-42\n";
  run.timeout_ms = 250;
  int seen = 0;
  run.on_start = [&](int p) { seen = p; };
  auto r = SuperviseProcess(std::move(child).value(), run);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(seen, pid);
  EXPECT_FALSE(r->timed_out);
  EXPECT_EQ(r->exit_code, 0);
  EXPECT_EQ(r->stdout_data, "warming\ngot job-42\n");  // output from before supervision is kept
  EXPECT_EQ(r->stderr_data, "late\n");
}

TEST(StartedProcessTest, TimeoutAndOutputCapsApplyFromSupervision) {
  auto o = Sh("read job; yes");
  o.stdin_pipe = true;
  auto child = StartProcess(o);
  ASSERT_TRUE(child.ok());
  ProcessOptions run;
  run.stdin_data = "x\n";
  run.timeout_ms = 300;
  run.stdout_limit = 100;
  int64_t t0 = MonotonicMs();
  auto r = SuperviseProcess(std::move(child).value(), run);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->timed_out);
  EXPECT_EQ(r->signal, SIGKILL);
  EXPECT_EQ(r->stdout_data.size(), 100u);
  EXPECT_TRUE(r->stdout_truncated);
  EXPECT_LT(MonotonicMs() - t0, 3000);
}

TEST(StartedProcessTest, DestroyingAnUnsupervisedChildKillsItsGroup) {
  auto dir = TempDir::Create("assay_proc_");
  ASSERT_TRUE(dir.ok());
  auto o = Sh("sleep 100 & echo $! > grandchild; read never");
  o.cwd = dir->path();
  o.stdin_pipe = true;
  auto child = StartProcess(o);
  ASSERT_TRUE(child.ok());
  const int pid = (*child)->pid();
  const auto file = dir->path() / "grandchild";
  auto text = ReadFile(file);
  for (int i = 0; i < 200 && (!text.ok() || text->find('\n') == std::string::npos); ++i) {
    usleep(10'000);
    text = ReadFile(file);
  }
  ASSERT_TRUE(text.ok());
  const int grandchild = std::stoi(*text);
  EXPECT_TRUE(PidAlive(grandchild));
  child->reset();
  EXPECT_FALSE(PidAlive(pid));
  for (int i = 0; i < 200 && PidAlive(grandchild); ++i) usleep(10'000);
  EXPECT_FALSE(PidAlive(grandchild));
}

TEST(StartedProcessTest, ExitedSeesAChildThatDiedWhileWaiting) {
  auto o = Sh("echo bye >&2; exit 5");
  o.stdin_pipe = true;
  auto child = StartProcess(o);
  ASSERT_TRUE(child.ok());
  for (int i = 0; i < 200 && !(*child)->Exited(); ++i) usleep(10'000);
  EXPECT_TRUE((*child)->Exited());
  ProcessOptions run;
  run.stdin_data = "job\n";  // written into a closed pipe: EPIPE, never SIGPIPE
  auto r = SuperviseProcess(std::move(child).value(), run);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_code, 5);
  EXPECT_EQ(r->stderr_data, "bye\n");
}

TEST(StartedProcessTest, StdinDataNeedsAStdinPipe) {
  auto child = StartProcess(Sh("exit 0"));
  ASSERT_TRUE(child.ok());
  ProcessOptions run;
  run.stdin_data = "job\n";
  auto r = SuperviseProcess(std::move(child).value(), run);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().error_class(), ErrorClass::kInfraError);
}

TEST(SubprocessTest, NiceLowersTheChildsPriorityOnly) {
  auto o = Sh("cut -d' ' -f19 /proc/self/stat");  // field 19: nice (the command has no spaces)
  o.nice = kBackgroundNice;
  auto r = MustRun(o);
  EXPECT_EQ(r.stdout_data, std::to_string(kBackgroundNice) + "\n");
  EXPECT_EQ(getpriority(PRIO_PROCESS, 0), 0);  // ours is untouched
  o.nice = 0;
  EXPECT_EQ(MustRun(o).stdout_data, "0\n");
}

TEST(SubprocessTest, CoreDumpsAreDisabled) {
  auto r = MustRun(Sh("ulimit -c"));
  EXPECT_EQ(r.stdout_data, "0\n");
}

// --- sandbox ----------------------------------------------------------------

class SandboxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = TempDir::Create("assay_sbx_");
    ASSERT_TRUE(d.ok());
    dir_ = std::make_unique<TempDir>(std::move(d.value()));
  }
  ProcessOptions Sandboxed(const std::string& script) {
    auto o = Sh(script);
    o.sandbox.enabled = true;
    o.sandbox.writable_dir = dir_->path();
    o.cwd = dir_->path();
    return o;
  }
  std::unique_ptr<TempDir> dir_;
};

TEST_F(SandboxTest, NoNetworkCannotReachParentLoopbackPort) {
  if (DetectSandboxMode() == SandboxMode::kNone) GTEST_SKIP() << "no network isolation on this host";
  // A listening socket of ours on 127.0.0.1: reachable without the sandbox,
  // unreachable from a new network namespace (its loopback is a different one).
  UniqueFd listener(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  ASSERT_TRUE(listener.valid());
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(listener.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(listen(listener.get(), 4), 0);
  socklen_t len = sizeof addr;
  ASSERT_EQ(getsockname(listener.get(), reinterpret_cast<sockaddr*>(&addr), &len), 0);
  std::string port = std::to_string(ntohs(addr.sin_port));
  // bash's /dev/tcp when present, else python3; both report success by exit 0.
  std::string probe =
      "if command -v python3 >/dev/null; then python3 -c 'import socket,sys; "
      "s=socket.create_connection((\"127.0.0.1\"," + port + "),2)'; "
      "else bash -c 'exec 3<>/dev/tcp/127.0.0.1/" + port + "'; fi";

  auto open = MustRun(Sh(probe));
  ASSERT_EQ(open.exit_code, 0) << "probe cannot connect even without a sandbox: " << open.stderr_data;
  auto closed = MustRun(Sandboxed(probe));
  EXPECT_NE(closed.exit_code, 0) << "connected from inside the sandbox";
}

TEST_F(SandboxTest, OnlyLoopbackInterfaceIsVisible) {
  if (DetectSandboxMode() == SandboxMode::kNone) GTEST_SKIP() << "no network isolation on this host";
  auto r = MustRun(Sandboxed("tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '"));
  EXPECT_EQ(r.stdout_data, "lo\n");
}

TEST_F(SandboxTest, WritableDirIsWritable) {
  auto r = MustRun(Sandboxed("echo hi > out.txt && cat out.txt"));
  EXPECT_EQ(r.exit_code, 0) << r.stderr_data;
  EXPECT_EQ(r.stdout_data, "hi\n");
  EXPECT_TRUE(std::filesystem::exists(dir_->path() / "out.txt"));
}

TEST_F(SandboxTest, FilesOutsideWritableDirAreReadOnlyUnderBwrap) {
  if (DetectSandboxMode() != SandboxMode::kBwrap) GTEST_SKIP() << "read-only system needs bwrap";
  auto outside = TempDir::Create("assay_outside_", "/var/tmp");
  ASSERT_TRUE(outside.ok());
  auto target = outside->path() / "x";
  auto r = MustRun(Sandboxed("echo no > " + target.string()));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_FALSE(std::filesystem::exists(target));
  // The sandbox's /tmp is private: nothing written there shows up on the host.
  std::string marker = "/tmp/assay_private_" + std::to_string(getpid());
  r = MustRun(Sandboxed("echo x > " + marker + " && cat " + marker));
  EXPECT_EQ(r.exit_code, 0) << r.stderr_data;
  EXPECT_FALSE(std::filesystem::exists(marker));
}

TEST_F(SandboxTest, SignalIsReportedThroughBwrap) {
  auto r = MustRun(Sandboxed("kill -SEGV $$"));
  EXPECT_EQ(r.signal, SIGSEGV);
}

TEST_F(SandboxTest, TimeoutKillsSandboxedGrandchild) {
  auto o = Sandboxed("sleep 100 & echo $! > pid; sleep 100");
  o.timeout_ms = 500;
  auto r = MustRun(o);
  EXPECT_TRUE(r.timed_out);
  // Under bwrap the pid is the same (no pid namespace), so it is checkable here.
  auto text = ReadFile(dir_->path() / "pid");
  ASSERT_TRUE(text.ok());
  pid_t gc = std::stoi(*text);
  for (int i = 0; i < 100 && PidAlive(gc); ++i) usleep(20'000);
  EXPECT_FALSE(PidAlive(gc));
}

// Runs this test binary again with the sandbox capped to `mode`, so the
// fallbacks are exercised on a host where bwrap exists.
ProcessResult RerunSandboxTestsWith(const std::string& mode) {
  ProcessOptions o;
  o.argv = {std::filesystem::read_symlink("/proc/self/exe").string(),
            "--gtest_filter=SandboxTest.*-SandboxTest.*Fallback*"};
  std::map<std::string, std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string kv = *e;
    auto eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  env["ASSAY_SANDBOX"] = mode;
  o.env = env;
  o.timeout_ms = 60'000;
  return MustRun(o);
}

TEST(SandboxFallbackTest, UnshareFallbackIsolatesNetwork) {
  auto r = RerunSandboxTestsWith("unshare");
  if (r.stdout_data.find("mode=unshare") == std::string::npos &&
      r.stderr_data.find("mode=unshare") == std::string::npos) {
    GTEST_SKIP() << "unshare(CLONE_NEWUSER|CLONE_NEWNET) is not permitted here";
  }
  EXPECT_EQ(r.exit_code, 0) << r.stdout_data << r.stderr_data;
  EXPECT_NE(r.stdout_data.find("NoNetworkCannotReachParentLoopbackPort"), std::string::npos);
  EXPECT_EQ(r.stdout_data.find("[  FAILED  ]"), std::string::npos) << r.stdout_data;
}

TEST(SandboxFallbackTest, NoIsolationFallbackStillRunsAndWarns) {
  auto r = RerunSandboxTestsWith("none");
  EXPECT_EQ(r.exit_code, 0) << r.stdout_data << r.stderr_data;
  std::string all = r.stdout_data + r.stderr_data;
  EXPECT_NE(all.find("level=warn event=sandbox.mode mode=none"), std::string::npos) << all;
}

}  // namespace
}  // namespace assay

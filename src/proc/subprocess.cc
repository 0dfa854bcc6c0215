#include "proc/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <utility>

#include "common/util.h"
#include "proc/sandbox.h"
#include "proc/unique_fd.h"

extern char** environ;

namespace assay {
namespace {

// How long to keep reading after the child's group was killed or the child
// exited. Only a process that left our group (setsid) can hold the pipes
// longer; we stop waiting for it rather than hang.
constexpr int64_t kDrainGraceMs = 500;
// Upper bound between checks of the cancel flag and the child's state [ms].
constexpr int kPollSliceMs = 50;

// What the child writes to the error pipe when it cannot exec.
struct ChildFailure {
  int stage;  // kStage*
  int err;    // errno
};
constexpr int kStageDup = 1;
constexpr int kStageChdir = 2;
constexpr int kStageExec = 3;

// Everything the child needs, prepared before fork: between fork and exec only
// async-signal-safe calls are allowed (other threads may hold malloc's lock).
struct ChildSetup {
  int stdin_fd, stdout_fd, stderr_fd, error_fd;
  const char* cwd;          // nullptr = inherit
  const char* exe;
  char* const* argv;
  char* const* envp;
  pid_t parent;
  rlim_t max_file_bytes, max_open_files, max_processes;
  bool limit_processes;
  int nice;
  const ChildSandbox* sandbox;
};

void LowerLimit(int resource, rlim_t value) {
  struct rlimit cur;
  if (getrlimit(resource, &cur) != 0) return;
  struct rlimit want = cur;
  want.rlim_cur = std::min<rlim_t>(value, cur.rlim_max);
  if (want.rlim_max == RLIM_INFINITY || want.rlim_max > value) want.rlim_max = std::min(want.rlim_max, value);
  if (want.rlim_cur > want.rlim_max) want.rlim_cur = want.rlim_max;
  setrlimit(resource, &want);
}

[[noreturn]] void Fail(int error_fd, int stage, int err) {
  ChildFailure f{stage, err};
  ssize_t ignored = write(error_fd, &f, sizeof f);
  (void)ignored;
  _exit(127);
}

[[noreturn]] void ChildMain(const ChildSetup& c) {
  // Its own session and process group: a kill(-pid) reaches everything it
  // starts, a Ctrl-C at the server's terminal does not reach it, and it has no
  // controlling terminal to inject input into.
  setsid();
  // Dies with the process that started it, even if that one is SIGKILLed.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != c.parent) raise(SIGKILL);

  // Undo the server's signal handling: ignored signals and the mask survive exec.
  struct sigaction dfl;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) sigaction(sig, &dfl, nullptr);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);

  // Move the sources above 2 first so that no dup2 below clobbers another source.
  int in = fcntl(c.stdin_fd, F_DUPFD_CLOEXEC, 3);
  int out = fcntl(c.stdout_fd, F_DUPFD_CLOEXEC, 3);
  int err = fcntl(c.stderr_fd, F_DUPFD_CLOEXEC, 3);
  if (in < 0 || out < 0 || err < 0) Fail(c.error_fd, kStageDup, errno);
  if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0) Fail(c.error_fd, kStageDup, errno);

  LowerLimit(RLIMIT_CORE, 0);
  LowerLimit(RLIMIT_FSIZE, c.max_file_bytes);
  LowerLimit(RLIMIT_NOFILE, c.max_open_files);
  if (c.limit_processes) LowerLimit(RLIMIT_NPROC, c.max_processes);
  if (c.nice > 0) {
    errno = 0;
    int current = getpriority(PRIO_PROCESS, 0);
    if (errno == 0 && current < c.nice) setpriority(PRIO_PROCESS, 0, c.nice);
  }

  EnterChildSandbox(*c.sandbox);  // best effort: the probe said it works

  if (c.cwd != nullptr && chdir(c.cwd) != 0) Fail(c.error_fd, kStageChdir, errno);
  execve(c.exe, c.argv, c.envp);
  Fail(c.error_fd, kStageExec, errno);
}

Status MakePipe(Pipe* p) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return Status::Infra(std::string("pipe2: ") + strerror(errno));
  p->read.Reset(fds[0]);
  p->write.Reset(fds[1]);
  return Status::Ok();
}

// Keeps the first `limit` bytes of a stream and counts the rest.
struct Sink {
  UniqueFd fd;
  std::string* data;
  uint64_t* total;
  bool* truncated;
  size_t limit;

  void ReadOnce() {
    char buf[65536];
    ssize_t n = read(fd.get(), buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) return;
      fd.Reset();
      return;
    }
    if (n == 0) {
      fd.Reset();
      return;
    }
    *total += static_cast<uint64_t>(n);
    size_t room = limit > data->size() ? limit - data->size() : 0;
    size_t keep = std::min(room, static_cast<size_t>(n));
    data->append(buf, keep);
    if (keep < static_cast<size_t>(n)) *truncated = true;
  }
};

void ReapBlocking(pid_t pid, int* status) {
  while (waitpid(pid, status, 0) < 0) {
    if (errno != EINTR) {
      *status = 0;
      return;
    }
  }
}

std::string PathOf(const std::optional<std::map<std::string, std::string>>& env) {
  if (env) {
    auto it = env->find("PATH");
    return it == env->end() ? std::string("/usr/bin:/bin") : it->second;
  }
  const char* p = getenv("PATH");
  return p ? p : "/usr/bin:/bin";
}

}  // namespace

std::string SignalName(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  if (abbrev != nullptr) return std::string("SIG") + abbrev;
  return "signal " + std::to_string(sig);
}

StartedProcess::~StartedProcess() {
  if (pid_ <= 0) return;
  kill(-pid_, SIGKILL);  // the leader is running or a zombie: its group id is still ours
  int status = 0;
  ReapBlocking(pid_, &status);
}

bool StartedProcess::Exited() const {
  siginfo_t info;
  memset(&info, 0, sizeof info);
  return waitid(P_PID, pid_, &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid_;
}

Result<std::unique_ptr<StartedProcess>> StartProcess(const ProcessOptions& o) {
  if (o.argv.empty() || o.argv[0].empty()) return Status::Infra("StartProcess: empty argv");
  static std::once_flag sigpipe_once;
  std::call_once(sigpipe_once, [] { signal(SIGPIPE, SIG_IGN); });

  std::string exe = FindExecutable(o.argv[0], PathOf(o.env));
  if (exe.empty() || access(exe.c_str(), X_OK) != 0) {
    return Status::Infra("cannot execute " + o.argv[0] + ": " +
                         (exe.empty() ? std::string("not found on PATH") : std::string(strerror(errno))));
  }

  // argv and envp as the child will see them.
  std::vector<std::string> args = o.argv;
  ChildSandbox child_sandbox;
  bool via_bwrap = false;
  if (o.sandbox.enabled) {
    args[0] = exe;
    args = ApplySandbox(o.sandbox, std::move(args), &child_sandbox);
    via_bwrap = args[0] != exe;
    exe = args[0];
  }
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_strings;
  std::vector<char*> envp;
  if (o.env) {
    for (const auto& [k, v] : *o.env) env_strings.push_back(k + "=" + v);
    for (auto& e : env_strings) envp.push_back(e.data());
    envp.push_back(nullptr);
  }
  std::string cwd = o.cwd.string();

  Pipe in, out, err, errpipe;
  UniqueFd devnull;
  if (o.stdin_pipe || !o.stdin_data.empty()) {
    ASSAY_RETURN_IF_ERROR(MakePipe(&in));
  } else {
    devnull.Reset(open("/dev/null", O_RDONLY | O_CLOEXEC));
    if (!devnull.valid()) return Status::Infra(std::string("open /dev/null: ") + strerror(errno));
  }
  ASSAY_RETURN_IF_ERROR(MakePipe(&out));
  ASSAY_RETURN_IF_ERROR(MakePipe(&err));
  ASSAY_RETURN_IF_ERROR(MakePipe(&errpipe));

  ChildSetup setup{};
  setup.stdin_fd = in.read.valid() ? in.read.get() : devnull.get();
  setup.stdout_fd = out.write.get();
  setup.stderr_fd = err.write.get();
  setup.error_fd = errpipe.write.get();
  setup.cwd = cwd.empty() ? nullptr : cwd.c_str();
  setup.exe = exe.c_str();
  setup.argv = argv.data();
  setup.envp = o.env ? envp.data() : environ;
  setup.parent = getpid();
  setup.max_file_bytes = static_cast<rlim_t>(o.sandbox.max_file_bytes);
  setup.max_open_files = static_cast<rlim_t>(o.sandbox.max_open_files);
  setup.max_processes = static_cast<rlim_t>(o.sandbox.max_processes);
  setup.limit_processes = o.sandbox.enabled;
  setup.nice = o.nice;
  setup.sandbox = &child_sandbox;

  pid_t pid = fork();
  if (pid < 0) return Status::Infra(std::string("fork: ") + strerror(errno));
  if (pid == 0) ChildMain(setup);

  in.read.Reset();
  devnull.Reset();
  out.write.Reset();
  err.write.Reset();
  errpipe.write.Reset();

  // Blocks until exec succeeded (EOF: the pipe was close-on-exec) or failed.
  // Once it returns the child has called setsid(), so kill(-pid) is safe.
  ChildFailure failure{};
  ssize_t got;
  do {
    got = read(errpipe.read.get(), &failure, sizeof failure);
  } while (got < 0 && errno == EINTR);
  if (got == static_cast<ssize_t>(sizeof failure)) {
    int status = 0;
    ReapBlocking(pid, &status);
    std::string why = strerror(failure.err);
    if (failure.stage == kStageChdir) return Status::Infra("cannot enter " + cwd + ": " + why);
    return Status::Infra("cannot execute " + o.argv[0] + ": " + why);
  }

  std::unique_ptr<StartedProcess> child(new StartedProcess());
  child->pid_ = pid;
  child->via_bwrap_ = via_bwrap;
  child->stdin_w_ = std::move(in.write);
  child->stdout_r_ = std::move(out.read);
  child->stderr_r_ = std::move(err.read);
  // Readable when the child exits: wakes poll() at once instead of after a slice.
  child->pidfd_.Reset(static_cast<int>(syscall(SYS_pidfd_open, pid, 0)));
  return child;
}

Result<ProcessResult> RunProcess(const ProcessOptions& o) {
  auto child = StartProcess(o);
  if (!child.ok()) return child.status();
  return SuperviseProcess(std::move(child).value(), o);
}

Result<ProcessResult> SuperviseProcess(std::unique_ptr<StartedProcess> child, const ProcessOptions& o) {
  if (!child) return Status::Infra("SuperviseProcess: no process");
  if (!o.stdin_data.empty() && !child->stdin_w_.valid()) {
    return Status::Infra("SuperviseProcess: stdin_data for a child started without a stdin pipe");
  }
  const pid_t pid = std::exchange(child->pid_, -1);  // reaped here, not by the destructor
  const bool via_bwrap = child->via_bwrap_;
  if (o.on_start) o.on_start(pid);

  ProcessResult r;
  Sink sinks[2] = {
      {std::move(child->stdout_r_), &r.stdout_data, &r.stdout_bytes, &r.stdout_truncated, o.stdout_limit},
      {std::move(child->stderr_r_), &r.stderr_data, &r.stderr_bytes, &r.stderr_truncated, o.stderr_limit},
  };
  UniqueFd stdin_w = std::move(child->stdin_w_);
  size_t stdin_off = 0;
  if (stdin_w.valid() && o.stdin_data.empty()) stdin_w.Reset();  // nothing to say: EOF now
  if (stdin_w.valid()) fcntl(stdin_w.get(), F_SETFL, fcntl(stdin_w.get(), F_GETFL) | O_NONBLOCK);
  UniqueFd pidfd = std::move(child->pidfd_);

  const int64_t start = MonotonicMs();
  const int64_t deadline = o.timeout_ms > 0 ? start + o.timeout_ms : 0;
  bool group_killed = false;
  bool leader_exited = false;
  int64_t give_up_at = 0;  // set once the leader exited: stop waiting for EOF then
  auto kill_group = [&] {
    kill(-pid, SIGKILL);
    group_killed = true;
  };

  while (true) {
    const int64_t now = MonotonicMs();
    if (!leader_exited) {
      siginfo_t info;
      memset(&info, 0, sizeof info);
      // WNOWAIT leaves the zombie in place: its pid (== our pgid) cannot be reused
      // while we kill what it left behind in its group.
      if (waitid(P_PID, pid, &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid) {
        leader_exited = true;
        kill(-pid, SIGKILL);  // grandchildren must not outlive the job
        give_up_at = now + kDrainGraceMs;
      }
    }
    if (!group_killed && !leader_exited) {
      if (o.cancel != nullptr && o.cancel->load()) {
        r.cancelled = true;
        kill_group();
      } else if (deadline > 0 && now >= deadline) {
        r.timed_out = true;
        kill_group();
      }
    }
    const bool pipes_open = sinks[0].fd.valid() || sinks[1].fd.valid();
    if (leader_exited && (!pipes_open || now >= give_up_at)) break;

    struct pollfd fds[4];
    Sink* owners[4] = {};
    int n = 0;
    for (Sink& s : sinks) {
      if (!s.fd.valid()) continue;
      owners[n] = &s;
      fds[n++] = {s.fd.get(), POLLIN, 0};
    }
    int stdin_index = -1;
    if (stdin_w.valid()) {
      stdin_index = n;
      fds[n++] = {stdin_w.get(), POLLOUT, 0};
    }
    if (pidfd.valid() && !leader_exited) fds[n++] = {pidfd.get(), POLLIN, 0};
    int64_t wait_ms = kPollSliceMs;
    if (deadline > 0 && !group_killed) wait_ms = std::min(wait_ms, std::max<int64_t>(0, deadline - now));
    if (leader_exited) wait_ms = std::min(wait_ms, std::max<int64_t>(0, give_up_at - now));
    if (poll(fds, n, static_cast<int>(wait_ms)) < 0) {
      if (errno == EINTR) continue;
      kill_group();  // cannot watch it any more; do not leave it running
      break;
    }
    for (int i = 0; i < n; ++i) {
      if (owners[i] != nullptr && (fds[i].revents & (POLLIN | POLLHUP | POLLERR))) owners[i]->ReadOnce();
    }
    if (stdin_index >= 0 && fds[stdin_index].revents != 0) {
      ssize_t w = write(stdin_w.get(), o.stdin_data.data() + stdin_off, o.stdin_data.size() - stdin_off);
      if (w > 0) stdin_off += static_cast<size_t>(w);
      if ((w < 0 && errno != EAGAIN && errno != EINTR) || stdin_off == o.stdin_data.size()) {
        stdin_w.Reset();  // EOF for the child (or it closed its end: EPIPE)
      }
    }
  }

  kill(-pid, SIGKILL);  // whatever is left in the group (the leader is a zombie or gone)
  int status = 0;
  ReapBlocking(pid, &status);
  r.duration_ms = MonotonicMs() - start;
  if (WIFSIGNALED(status)) {
    r.signal = WTERMSIG(status);
  } else if (WIFEXITED(status)) {
    r.exit_code = WEXITSTATUS(status);
    // bwrap reports a payload killed by signal N as exit 128+N.
    if (via_bwrap && r.exit_code > 128 && r.exit_code < 128 + NSIG) {
      r.signal = r.exit_code - 128;
      r.exit_code = -1;
    }
  }
  return r;
}

}  // namespace assay

// Child processes, handled the way ninja handles them: each child leads its own
// process group (so a kill reaches everything it started), stdin from
// /dev/null unless given, close-on-exec pipes, EINTR retries, output drained
// while it runs (capped, the rest counted and discarded so the child never
// blocks on a full pipe), the whole group killed at the deadline, and reaped.
// RunProcess does it in one call; StartProcess + SuperviseProcess split it, so
// that a child can start before the work it will be given exists.
//
// Thread-safety: RunProcess, StartProcess and SuperviseProcess may be called
// concurrently from many threads; one StartedProcess is used by one thread at a time.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "proc/unique_fd.h"

namespace assay {

struct SandboxOptions {
  bool enabled = false;
  bool no_network = true;                    // new network namespace (loopback only)
  bool read_only_system = true;              // bubblewrap: / read-only, only work_dir writable
  std::filesystem::path writable_dir;        // the child's own temp dir
  // Also writable under bubblewrap (must exist): caches shared by jobs, e.g.
  // the Python kinds' TORCH_EXTENSIONS_DIR and TRITON_CACHE_DIR.
  std::vector<std::filesystem::path> extra_writable_dirs;
  int64_t max_file_bytes = 1LL << 30;        // RLIMIT_FSIZE
  int64_t max_processes = 256;               // RLIMIT_NPROC (per user; best effort)
  int64_t max_open_files = 1024;             // RLIMIT_NOFILE
};

// The nice value of builds (compiles, the Python prepare step): they yield the
// CPU to the processes that feed the GPUs (docs/architecture.md).
inline constexpr int kBackgroundNice = 10;

struct ProcessOptions {
  std::vector<std::string> argv;             // argv[0] is looked up in PATH if not absolute
  std::filesystem::path cwd;                 // empty = inherit
  std::optional<std::map<std::string, std::string>> env;  // nullopt = inherit the parent's
  std::string stdin_data;                    // written to the child's stdin, then closed
  bool stdin_pipe = false;                   // StartProcess: stdin is a pipe even with no stdin_data yet
  int64_t timeout_ms = 0;                    // 0 = none; past it the process group gets SIGKILL
  size_t stdout_limit = 1 << 20;             // bytes kept; the rest is counted and dropped
  size_t stderr_limit = 1 << 20;
  const std::atomic<bool>* cancel = nullptr; // when it becomes true the group is killed
  int nice = 0;                              // the child's nice value when higher than ours (0..19)
  SandboxOptions sandbox;
  // Called on the calling thread when supervision starts (RunProcess: once the
  // child has exec'd), with its pid (which is also its process group id). Lets
  // a caller publish the pgid so that the group can be killed from outside
  // (e.g. the worker tells the server).
  std::function<void(int pid)> on_start;
};

struct ProcessResult {
  int exit_code = -1;          // valid when !signaled
  int signal = 0;              // terminating signal, 0 if exited normally
  bool timed_out = false;      // killed because of timeout_ms
  bool cancelled = false;      // killed because *cancel became true
  std::string stdout_data;
  std::string stderr_data;
  uint64_t stdout_bytes = 0;   // total written by the child (may exceed what was kept)
  uint64_t stderr_bytes = 0;
  bool stdout_truncated = false;
  bool stderr_truncated = false;
  int64_t duration_ms = 0;
};

// Runs a child to completion. Returns Infra if it could not be started
// (fork/exec failure, missing binary: exit code 127 is reported as Infra with the reason).
// When the child exits, whatever it left running in its process group is killed.
// Side effect: SIGPIPE is set to SIG_IGN in the calling process (once), so that a
// child closing its stdin early cannot kill the server; writes then see EPIPE.
Result<ProcessResult> RunProcess(const ProcessOptions& options);

// A child that StartProcess started and nobody supervises yet: e.g. an
// interpreter importing its libraries before its job exists (the Python
// kinds' standby harness, docs/python-kinds.md). Its stdout and stderr are
// not read until SuperviseProcess, so a child that writes more than a pipe
// holds (64 KiB) before then blocks until it is supervised. Destroying it
// unsupervised kills its process group and reaps it. Like every child here it
// gets SIGKILL when the thread that started it ends (PR_SET_PDEATHSIG follows
// the thread, not the process): start one only from a thread that outlives it.
class StartedProcess {
 public:
  ~StartedProcess();
  StartedProcess(const StartedProcess&) = delete;
  StartedProcess& operator=(const StartedProcess&) = delete;

  int pid() const { return pid_; }  // also its process group id
  // The leader has exited (it stays a zombie, its group id reserved, until
  // supervised or destroyed).
  bool Exited() const;

 private:
  friend Result<std::unique_ptr<StartedProcess>> StartProcess(const ProcessOptions& options);
  friend Result<ProcessResult> SuperviseProcess(std::unique_ptr<StartedProcess> child,
                                                const ProcessOptions& options);
  StartedProcess() = default;

  int pid_ = -1;
  bool via_bwrap_ = false;
  UniqueFd stdin_w_, stdout_r_, stderr_r_, pidfd_;
};

// Starts a child as RunProcess does (argv, cwd, env, sandbox, stdin_pipe of
// `options`) and returns once it has exec'd. Infra as RunProcess.
Result<std::unique_ptr<StartedProcess>> StartProcess(const ProcessOptions& options);

// Watches a started child to its end as RunProcess does, under the timeout
// (counted from this call), cancel flag, output limits, stdin_data and
// on_start of `options`; its argv, cwd, env and sandbox are not used.
// stdin_data needs a stdin pipe (stdin_pipe at start): else Infra.
Result<ProcessResult> SuperviseProcess(std::unique_ptr<StartedProcess> child, const ProcessOptions& options);

// "SIGSEGV" for 11, etc.
std::string SignalName(int sig);

}  // namespace assay

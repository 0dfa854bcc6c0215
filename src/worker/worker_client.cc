#include "worker/worker_client.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <vector>

#include "common/log.h"
#include "common/util.h"
#include "proc/subprocess.h"
#include "proc/unique_fd.h"
#include "worker/protocol.h"

extern char** environ;

namespace assay {
namespace {

constexpr int64_t kPollSliceMs = 50;       // [ms] between checks of deadlines and the cancel flag
constexpr int64_t kReapWaitMs = 10'000;    // [ms] for a SIGKILLed worker to disappear
constexpr int64_t kShutdownWaitMs = 1'000; // [ms] for a worker to exit after `shutdown`
constexpr int64_t kWriteTimeoutMs = 5'000; // [ms] a worker not reading its pipe is hung

// waitpid with WNOHANG until `wait_ms` passes. True when reaped (status filled).
bool ReapWithin(pid_t pid, int64_t wait_ms, int* status) {
  const int64_t until = MonotonicMs() + wait_ms;
  while (true) {
    pid_t r = waitpid(pid, status, WNOHANG);
    if (r == pid) return true;
    if (r < 0 && errno != EINTR) return true;  // not ours any more (ECHILD)
    if (MonotonicMs() >= until) return false;
    usleep(5'000);
  }
}

std::string Seconds(int64_t ms) { return fmt::format("{:g}", ms / 1000.0); }

}  // namespace

struct WorkerClient::Impl {
  pid_t pid = -1;            // the worker; also its process group id
  UniqueFd to_worker;        // its fd 3 (O_NONBLOCK on our side)
  UniqueFd from_worker;      // its fd 4
  nlohmann::json hello;
  int64_t spawned = 0;       // workers started so far
  int program_pgid = 0;      // group of the user program the worker runs now (from `progress`)
  std::vector<pid_t> unreaped;  // workers that did not die in time after SIGKILL

  std::mutex mu;             // guards the two fields below (Cancel() comes from other threads)
  std::string running_job;
  bool cancel_requested = false;

  // Kills the worker's group (and the user program's group, which is its own),
  // reaps the worker, and forgets it. Returns the wait status (0 if not reaped).
  int KillAndReap() {
    int status = 0;
    if (pid <= 0) return status;
    kill(-pid, SIGKILL);
    if (program_pgid > 0) kill(-program_pgid, SIGKILL);
    if (!ReapWithin(pid, kReapWaitMs, &status)) {
      log::Event("worker.unreaped").Kv("pid", pid).Warn();
      unreaped.push_back(pid);
    }
    pid = -1;
    program_pgid = 0;
    to_worker.Reset();
    from_worker.Reset();
    return status;
  }
};

WorkerClient::WorkerClient(WorkerOptions options)
    : options_(std::move(options)), impl_(std::make_unique<Impl>()) {}

WorkerClient::~WorkerClient() {
  Impl& w = *impl_;
  if (w.pid > 0) {
    // Ask nicely first; a worker busy in a kernel or hung is killed below.
    (void)WriteFrame(w.to_worker.get(), Frame{NewMessage("shutdown"), {}}, 100);
    w.to_worker.Reset();  // EOF on its fd 3 also tells it to go
    int status = 0;
    if (!ReapWithin(w.pid, kShutdownWaitMs, &status)) {
      kill(-w.pid, SIGKILL);
      ReapWithin(w.pid, kReapWaitMs, &status);
    }
    kill(-w.pid, SIGKILL);  // anything it left in its group
    if (w.program_pgid > 0) kill(-w.program_pgid, SIGKILL);
  }
  for (pid_t p : w.unreaped) {
    int status = 0;
    ReapWithin(p, 100, &status);
  }
}

bool WorkerClient::alive() const { return impl_->pid > 0; }
int64_t WorkerClient::restarts() const { return impl_->spawned > 0 ? impl_->spawned - 1 : 0; }

Result<nlohmann::json> WorkerClient::EnsureStarted() {
  Impl& w = *impl_;
  if (w.pid > 0) return w.hello;
  for (auto it = w.unreaped.begin(); it != w.unreaped.end();) {
    int status = 0;
    it = ReapWithin(*it, 0, &status) ? w.unreaped.erase(it) : it + 1;
  }

  // Pipes: server -> worker (its fd 3), worker -> server (its fd 4); all O_CLOEXEC.
  int down[2], up[2];
  if (pipe2(down, O_CLOEXEC) != 0) return Status::Infra(std::string("pipe2: ") + strerror(errno));
  UniqueFd down_r(down[0]), down_w(down[1]);
  if (pipe2(up, O_CLOEXEC) != 0) return Status::Infra(std::string("pipe2: ") + strerror(errno));
  UniqueFd up_r(up[0]), up_w(up[1]);
  UniqueFd devnull(open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!devnull.valid()) return Status::Infra(std::string("open /dev/null: ") + strerror(errno));

  // Everything the child needs is built before fork (no allocation after it).
  std::vector<std::string> args = {options_.self_exe.string(), "worker", "--device",
                                   std::to_string(options_.device), "--work-dir", options_.work_dir.string()};
  if (!options_.sandbox) args.push_back("--no-sandbox");
  if (!options_.python.interpreter.empty()) {
    args.insert(args.end(), {"--python", options_.python.interpreter.string(), "--python-device",
                             options_.python.device, "--python-cache", options_.python.cache_dir.string()});
    args.insert(args.end(), {"--python-standby", std::to_string(options_.python.standby)});
  }
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    if (strncmp(*e, "ASSAY_WORKER_HEARTBEAT_MS=", 26) != 0) env_strings.emplace_back(*e);
  }
  env_strings.push_back("ASSAY_WORKER_HEARTBEAT_MS=" + std::to_string(options_.heartbeat_interval_ms));
  std::vector<char*> envp;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);

  pid_t pid = fork();
  if (pid < 0) return Status::Infra(std::string("fork: ") + strerror(errno));
  if (pid == 0) {
    // Own session and process group: the whole worker (and whatever it starts
    // in its group) dies with one kill(-pid); the terminal's Ctrl-C does not reach it.
    setsid();
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    signal(SIGPIPE, SIG_DFL);
    // A crashing kernel must not write a core file the size of its GPU mappings.
    struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    // Lift the protocol fds above 4 before placing them, so that no dup2 clobbers the other.
    int in = fcntl(down_r.get(), F_DUPFD_CLOEXEC, 5);
    int out = fcntl(up_w.get(), F_DUPFD_CLOEXEC, 5);
    if (in < 0 || out < 0 || dup2(devnull.get(), 0) < 0 || dup2(in, 3) < 0 || dup2(out, 4) < 0) _exit(127);
    // Any fd a library opened without O_CLOEXEC stays out of the worker.
    syscall(SYS_close_range, 5u, ~0u, 4u /* CLOSE_RANGE_CLOEXEC */);
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }

  w.pid = pid;
  w.program_pgid = 0;
  w.spawned++;
  w.to_worker = std::move(down_w);
  w.from_worker = std::move(up_r);
  fcntl(w.to_worker.get(), F_SETFL, fcntl(w.to_worker.get(), F_GETFL) | O_NONBLOCK);
  // down_r / up_w close here, so EOF reaches each side when the other end dies.
  down_r.Reset();
  up_w.Reset();

  FrameError why;
  auto hello = ReadFrame(w.from_worker.get(), options_.start_timeout_ms, &why);
  Status failure;
  if (!hello.ok()) {
    failure = Status::Infra("worker did not start: " + hello.status().message());
  } else if (auto type = MessageType(hello->json); !type.ok() || *type != "hello") {
    failure = Status::Infra("worker did not say hello: " + hello->json.dump());
  }
  if (!failure.ok()) {
    int status = w.KillAndReap();
    std::string detail;
    if (WIFEXITED(status)) detail = " (exited with code " + std::to_string(WEXITSTATUS(status)) + ")";
    if (WIFSIGNALED(status) && WTERMSIG(status) != SIGKILL) detail = " (" + SignalName(WTERMSIG(status)) + ")";
    log::Event("worker.start_failed").Kv("error", failure.message() + detail).Error();
    return Status::Infra(failure.message() + detail);
  }
  w.hello = std::move(hello->json);
  log::Event("worker.started").Kv("pid", pid).Kv("device", options_.device).Kv("restarts", restarts()).Info();
  return w.hello;
}

void WorkerClient::Cancel(const std::string& job_id) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (impl_->running_job == job_id) impl_->cancel_requested = true;
}

WorkOutcome WorkerClient::Run(const WorkItem& item) {
  Impl& w = *impl_;
  WorkOutcome out;
  out.result = nlohmann::json::object();
  auto started = EnsureStarted();
  if (!started.ok()) {
    out.status = started.status();
    return out;
  }
  {
    std::lock_guard<std::mutex> lock(w.mu);
    w.running_job = item.job_id;
    w.cancel_requested = false;
  }
  auto cancel_requested = [&] {
    std::lock_guard<std::mutex> lock(w.mu);
    return w.cancel_requested;
  };
  auto finish = [&](Status status, bool killed) {
    {
      std::lock_guard<std::mutex> lock(w.mu);
      w.running_job.clear();
    }
    out.status = std::move(status);
    out.worker_restarted = killed;
    log::Event("worker.job").Kv("job", item.job_id).Kv("class", ErrorClassName(out.status.error_class()))
        .Kv("killed", killed).Info();
    return out;
  };

  nlohmann::json run = NewMessage("run");
  run["job_id"] = item.job_id;
  run["spec"] = item.spec;
  run["artifact"] = item.artifact.string();
  run["reference_artifact"] = item.reference_artifact.string();
  nlohmann::json files = nlohmann::json::object();
  for (const auto& [hash, path] : item.blob_files) files[hash] = path.string();
  run["blob_files"] = files;
  run["timeout_ms"] = item.timeout_ms;
  if (Status s = WriteFrame(w.to_worker.get(), Frame{std::move(run), {}}, kWriteTimeoutMs); !s.ok()) {
    w.KillAndReap();
    return finish(Status::Infra("cannot send the job to the worker: " + s.message()), true);
  }

  const int64_t start = MonotonicMs();
  const int64_t deadline = start + item.timeout_ms + options_.kill_grace_ms;
  int64_t last_seen = start;
  int64_t cancel_deadline = -1;  // once `cancel` was sent: kill the worker after this
  while (true) {
    const int64_t now = MonotonicMs();
    if (cancel_deadline < 0 && cancel_requested()) {
      // The worker stops the job itself when it can (a program is killed at
      // once); a kernel that does not return is dealt with by the kill below.
      nlohmann::json cancel = NewMessage("cancel");
      cancel["job_id"] = item.job_id;
      (void)WriteFrame(w.to_worker.get(), Frame{std::move(cancel), {}}, 100);
      cancel_deadline = now + options_.kill_grace_ms;
    }
    if (cancel_deadline >= 0 && now >= cancel_deadline) {
      w.KillAndReap();
      return finish(Status::Cancelled("cancelled"), true);
    }
    if (now >= deadline) {
      w.KillAndReap();
      return finish(Status::Timeout("timed out after " + Seconds(item.timeout_ms) + " s"), true);
    }
    if (now - last_seen >= options_.heartbeat_timeout_ms) {
      w.KillAndReap();
      return finish(Status::Infra("worker stopped responding (no heartbeat for " +
                                  Seconds(options_.heartbeat_timeout_ms) + " s)"), true);
    }

    FrameError why;
    auto frame = ReadFrame(w.from_worker.get(), kPollSliceMs, &why);
    if (!frame.ok()) {
      if (why == FrameError::kTimeout) continue;
      // EOF: the worker died. Anything else: its stream cannot be trusted.
      int status = w.KillAndReap();
      if (cancel_deadline >= 0) return finish(Status::Cancelled("cancelled"), true);
      if (why == FrameError::kEof && WIFSIGNALED(status)) {
        // A user's kernel crashing the worker is the user's bug, not ours.
        return finish(Status::RuntimeError("worker crashed with " + SignalName(WTERMSIG(status)) +
                                           " while running the job"), true);
      }
      if (why == FrameError::kEof && WIFEXITED(status)) {
        return finish(Status::Infra("worker exited with code " + std::to_string(WEXITSTATUS(status)) +
                                    " while running the job"), true);
      }
      return finish(Status::Infra("lost the worker: " + frame.status().message()), true);
    }
    last_seen = MonotonicMs();
    auto type = MessageType(frame->json);
    if (!type.ok()) {
      w.KillAndReap();
      return finish(type.status(), true);
    }
    const nlohmann::json& m = frame->json;
    if (*type == "progress" && m.value("job_id", "") == item.job_id) {
      if (m.value("phase", "") == "running") {
        w.program_pgid = m.value("pgid", 0);
      } else if (m.value("phase", "") == "finished") {
        w.program_pgid = 0;
      }
    } else if (*type == "result" && m.value("job_id", "") == item.job_id) {
      w.program_pgid = 0;
      if (m.contains("result") && m["result"].is_object()) out.result = m["result"];
      // The payload is the named blobs back to back, as listed in "blobs".
      size_t offset = 0;
      for (const auto& b : m.value("blobs", nlohmann::json::array())) {
        size_t size = b.value("size", size_t{0});
        if (offset + size > frame->payload.size()) break;
        out.blobs[b.value("name", "")] = frame->payload.substr(offset, size);
        offset += size;
      }
      Status status = StatusFromJson(m.value("status", nlohmann::json()));
      if (cancel_deadline >= 0 && status.error_class() != ErrorClass::kCancelled) {
        status = Status::Cancelled("cancelled");
      }
      // A worker whose CUDA context is lost says so and exits; reap it now so
      // the next job starts a fresh one instead of writing into a dying pipe.
      bool exiting = m.value("exiting", false);
      if (exiting) w.KillAndReap();
      return finish(std::move(status), exiting);
    }
    // heartbeats (and stale messages of an earlier job) only prove the worker is alive.
  }
}

}  // namespace assay

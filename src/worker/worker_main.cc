// `assay worker`: one process per GPU, serving jobs from the server over the
// protocol of worker/protocol.h on fds 3 (in) and 4 (out). stdout and stderr
// are the server's log.
//
// Threads: the main thread runs one job at a time; a reader thread takes
// frames off fd 3 (so a `cancel` is seen while a job runs); a heartbeat thread
// writes a heartbeat every interval. Writes to fd 4 are serialized by a mutex.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "common/log.h"
#include "proc/sandbox.h"
#include "worker/job_runner.h"
#include "spec/capabilities.h"
#include "worker/protocol.h"
#include "worker/python_runner.h"
#include "worker/worker_client.h"

#ifdef ASSAY_WORKER_HAS_GPU
#include "gpu/devices.h"
#endif

namespace assay {
namespace {

constexpr int kInFd = 3;
constexpr int kOutFd = 4;
constexpr int64_t kDefaultHeartbeatMs = 500;

nlohmann::json GpuInfoFor(int device, std::string* error) {
#ifdef ASSAY_WORKER_HAS_GPU
  if (device < 0) return nullptr;
  GpuInventory inv = ListGpus();
  for (const GpuInfo& g : inv.gpus) {
    if (g.index == device) return ToJson(g);
  }
  *error = inv.status.ok() ? "no GPU with ordinal " + std::to_string(device) : inv.status.message();
  return nullptr;
#else
  // TODO(worker): built without src/gpu; the hello carries no device info.
  if (device >= 0) *error = "built without GPU enumeration";
  return nullptr;
#endif
}

class Worker {
 public:
  Worker(int device, std::filesystem::path work_dir, bool sandbox, PythonWorkerOptions python)
      : device_(device), work_dir_(std::move(work_dir)), sandbox_(sandbox), python_(std::move(python)) {
    const char* hb = getenv("ASSAY_WORKER_HEARTBEAT_MS");
    heartbeat_ms_ = hb ? std::max<int64_t>(10, std::atoll(hb)) : kDefaultHeartbeatMs;
  }

  int Main() {
    std::error_code ec;
    std::filesystem::create_directories(work_dir_, ec);
    if (!Send(Hello()).ok()) return 1;
    log::Event("worker.start").Kv("pid", getpid()).Kv("device", device_).Info();

    std::thread reader([this] { ReadLoop(); });
    reader.detach();  // blocked in read(); ends with the process
    std::thread heartbeat([this] { HeartbeatLoop(); });

    int rc = 0;
    while (true) {
      std::optional<nlohmann::json> msg = NextRun();
      if (!msg) break;
      if (!RunOne(*msg)) {
        rc = 1;  // the server is gone
        break;
      }
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    heartbeat.join();
    log::Event("worker.exit").Kv("pid", getpid()).Info();
    return rc;
  }

 private:
  nlohmann::json Hello() {
    nlohmann::json m = NewMessage("hello");
    std::string gpu_error;
    m["pid"] = getpid();
    m["device"] = device_;
    m["gpu"] = GpuInfoFor(device_, &gpu_error);
    if (!gpu_error.empty()) m["gpu_error"] = gpu_error;
    // The Python kinds are offered only when the interpreter's probe says
    // torch (for triton: triton) imports; the probe runs once, here.
    std::vector<std::string> python_kinds;
    if (!python_.interpreter.empty()) {
      const PythonProbe& probe = ProbePython(python_, device_, work_dir_);
      python_kinds = PythonKinds(probe);
      m["python"] = PythonHelloJson(python_, probe);
    }
    std::vector<std::string> kinds;
    for (const std::string& k : RegisteredJobKinds()) {
      auto kind = JobKindFromName(k);
      bool python = kind && IsPythonKind(*kind);
      if (!python || std::find(python_kinds.begin(), python_kinds.end(), k) != python_kinds.end()) kinds.push_back(k);
    }
    m["capabilities"] = {{"kinds", kinds},
                         {"sandbox", sandbox_ ? SandboxModeName(DetectSandboxMode()) : "off"}};
    return m;
  }

  Status Send(nlohmann::json json) {
    std::lock_guard<std::mutex> lock(write_mu_);
    return WriteFrame(kOutFd, Frame{std::move(json), {}});
  }

  // Reader thread: queues `run`s, acts on `cancel` at once, ends on `shutdown` or EOF.
  void ReadLoop() {
    while (true) {
      auto frame = ReadFrame(kInFd, -1);
      std::unique_lock<std::mutex> lock(mu_);
      if (!frame.ok()) {
        // The server closed the pipe or died: stop the job, then exit.
        log::Event("worker.input_closed").Kv("reason", frame.status().message()).Info();
        cancel_ = true;
        closed_ = true;
        cv_.notify_all();
        return;
      }
      auto type = MessageType(frame->json);
      if (!type.ok()) {
        log::Event("worker.bad_message").Kv("error", type.status().message()).Warn();
        continue;
      }
      if (*type == "run") {
        queue_.push_back(std::move(frame->json));
      } else if (*type == "cancel") {
        std::string id = frame->json.value("job_id", "");
        if (id == busy_job_) {
          cancel_ = true;
        } else {
          cancel_queued_.insert(id);  // a run still queued (or one that already ended)
        }
      } else if (*type == "shutdown") {
        cancel_ = true;
        closed_ = true;
      } else {
        log::Event("worker.bad_message").Kv("type", *type).Warn();
      }
      cv_.notify_all();
      if (closed_) return;
    }
  }

  std::optional<nlohmann::json> NextRun() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return closed_ || !queue_.empty(); });
    if (closed_) return std::nullopt;
    nlohmann::json m = std::move(queue_.front());
    queue_.pop_front();
    busy_job_ = m.value("job_id", "");
    cancel_ = cancel_queued_.erase(busy_job_) > 0;
    return m;
  }

  void HeartbeatLoop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stopping_) {
      nlohmann::json m = NewMessage("heartbeat");
      m["busy_job"] = busy_job_.empty() ? nlohmann::json(nullptr) : nlohmann::json(busy_job_);
      lock.unlock();
      Status s = Send(std::move(m));
      lock.lock();
      if (!s.ok()) return;  // the server is gone; the main loop notices EOF on fd 3
      cv_.wait_for(lock, std::chrono::milliseconds(heartbeat_ms_), [&] { return stopping_; });
    }
  }

  // Runs one `run` message and sends its result. False when the result cannot be sent.
  bool RunOne(const nlohmann::json& msg) {
    const std::string job_id = msg.value("job_id", "");
    const nlohmann::json spec = msg.value("spec", nlohmann::json::object());
    const std::string kind = spec.value("kind", "");
    log::Event("worker.job.start").Kv("job", job_id).Kv("kind", kind).Info();

    RunContext ctx;
    ctx.job_id = job_id;
    ctx.spec = &spec;
    ctx.artifact = msg.value("artifact", "");
    ctx.reference_artifact = msg.value("reference_artifact", "");
    // Bound to a local: items() of the temporary that value() returns would dangle in the loop.
    const nlohmann::json blob_files = msg.value("blob_files", nlohmann::json::object());
    for (const auto& [hash, path] : blob_files.items())
      if (path.is_string()) ctx.blob_files[hash] = path.get<std::string>();
    ctx.timeout_ms = msg.value("timeout_ms", int64_t{60'000});
    ctx.device = device_;
    ctx.work_dir = work_dir_;
    ctx.sandbox = sandbox_;
    ctx.python = &python_;
    ctx.cancel = &cancel_;
    ctx.progress = [this, job_id](const std::string& phase, nlohmann::json fields) {
      nlohmann::json m = NewMessage("progress");
      if (fields.is_object()) m.update(fields);
      m["job_id"] = job_id;
      m["phase"] = phase;
      (void)Send(std::move(m));
    };

    // A waiting Python standby holds a CUDA context and memory: other kinds get the GPU to themselves.
    if (auto k = JobKindFromName(kind); !k || !IsPythonKind(*k)) ReleasePythonStandby();

    WorkOutcome outcome;
    if (const JobRunner* runner = FindJobRunner(kind)) {
      try {
        outcome = (*runner)(ctx);
      } catch (const std::exception& e) {
        outcome.status = Status::Infra(std::string("worker error while running the job: ") + e.what());
      }
    } else {
      outcome.status = Status::Rejected("this worker cannot run jobs of kind '" + kind + "'", "kind");
    }

    nlohmann::json m = NewMessage("result");
    m["job_id"] = job_id;
    m["status"] = StatusToJson(outcome.status);
    m["result"] = outcome.result.is_null() ? nlohmann::json::object() : outcome.result;
    std::string payload;
    nlohmann::json blobs = nlohmann::json::array();
    for (auto& [name, bytes] : outcome.blobs) {
      if (payload.size() + bytes.size() > kMaxFramePayloadBytes) break;  // listed blobs only
      blobs.push_back({{"name", name}, {"size", bytes.size()}});
      payload += bytes;
    }
    m["blobs"] = blobs;
    m["exiting"] = outcome.exit_worker;
    {
      std::lock_guard<std::mutex> lock(mu_);
      busy_job_.clear();
    }
    log::Event("worker.job.end").Kv("job", job_id).Kv("class", ErrorClassName(outcome.status.error_class()))
        .Kv("exit_worker", outcome.exit_worker).Info();
    Status sent;
    {
      std::lock_guard<std::mutex> lock(write_mu_);
      sent = WriteFrame(kOutFd, Frame{std::move(m), std::move(payload)});
    }
    if (outcome.exit_worker) {
      // The CUDA context is unusable: report, then make way for a fresh worker.
      log::Event("worker.exit_after_job").Kv("job", job_id).Kv("reason", outcome.status.message()).Warn();
      std::fflush(nullptr);
      _exit(0);
    }
    return sent.ok();
  }

  const int device_;
  const std::filesystem::path work_dir_;
  const bool sandbox_;
  const PythonWorkerOptions python_;
  int64_t heartbeat_ms_;

  std::mutex write_mu_;  // serializes frames on kOutFd

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<nlohmann::json> queue_;  // GUARDED_BY(mu_)
  std::string busy_job_;              // GUARDED_BY(mu_)
  std::set<std::string> cancel_queued_;  // GUARDED_BY(mu_): cancels for jobs not yet started
  bool closed_ = false;               // GUARDED_BY(mu_): shutdown or EOF seen
  bool stopping_ = false;             // GUARDED_BY(mu_): heartbeat thread should end
  std::atomic<bool> cancel_{false};   // the running job's cancel flag
};

}  // namespace

int WorkerMain(int device, const std::filesystem::path& work_dir, bool sandbox, const PythonWorkerOptions& python) {
  // A write to a server that went away must fail with EPIPE, not kill us silently.
  signal(SIGPIPE, SIG_IGN);
  RegisterBuiltinJobRunners();
  Worker worker(device, work_dir, sandbox, python);
  return worker.Main();
}

}  // namespace assay

// The scheduler: takes queued jobs in fair order (FairQueue), compiles them on
// a pool of CPU threads (each compile in an isolated child process), and hands
// ready jobs to one slot thread per worker (one worker per GPU). Every state
// change goes through the Store's compare-and-set Transition, so a cancel racing
// with a finishing job has exactly one winner and a job's stored state is always
// true.
//
// Timeouts: a job's `timeout_s` bounds its run phase on the worker; compiles
// have their own limit (CompilerOptions::timeout_ms). Queue time is not counted.
//
// Thread-safety: all public methods may be called from any thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "compile/compiler.h"
#include "sched/fair_queue.h"
#include "sched/python_prepare.h"
#include "spec/job_spec.h"
#include "store/store.h"
#include "worker/worker_client.h"

namespace assay {

struct SchedulerOptions {
  std::filesystem::path self_exe;   // the assay binary (compile children)
  int compile_threads = 2;
  int max_attempts = 2;             // runs of a job; infra errors are retried up to this
  std::string default_arch = "sm_90";  // when the spec names none and there is no GPU
  size_t max_ready = 16;            // compiled jobs waiting for a worker (backpressure on compiles)
  std::filesystem::path files_dir;  // modules and uploaded data materialized for workers
  // The Python kinds' prepare step (sched/python_prepare.h); an empty
  // interpreter means none (the jobs go to the workers as they are).
  PythonPrepareOptions python;
  int64_t python_probe_wait_ms = 120'000;  // [ms] a prepare waits this long for the workers' probe
};

struct WorkerSlotStatus {
  int device = -1;
  bool alive = false;
  std::string busy_job;             // "" when idle
  int64_t restarts = 0;
  int64_t jobs_run = 0;
};

struct SchedulerStats {
  size_t queued = 0;                // waiting in the fair queue
  size_t ready = 0;                 // compiled, waiting for a worker
  size_t compiling = 0;
  std::vector<WorkerSlotStatus> workers;
  int64_t compile_cache_hits = 0;
  int64_t compile_cache_misses = 0;
  int64_t retries = 0;
  std::map<std::string, int64_t> finished;   // "done", "failed:compile_error", ...
  std::vector<double> run_seconds;           // recent run-phase durations (for the histogram)
};

class Scheduler {
 public:
  // Called after every stored transition with the updated record.
  using Listener = std::function<void(const JobRecord&)>;

  Scheduler(Store& store, Compiler& compiler, std::vector<WorkerOptions> workers,
            SchedulerOptions options, Listener on_change);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Starts compile threads and worker slots.
  void Start();
  // Stops taking work, kills running workers, joins threads. Jobs left
  // compiling/running are recovered on the next start.
  void Stop();

  // REQUIRES: the job is stored in state queued.
  void Enqueue(const JobRecord& job);
  // After the store has moved the job to cancelled: forget it, kill it if running.
  void OnCancelled(const std::string& job_id);
  std::optional<int> QueuePosition(const std::string& job_id);
  SchedulerStats Stats();
  // The hellos of the workers that started (worker/protocol: capabilities,
  // python, gpu). Waits up to wait_ms until every slot's first start attempt
  // has ended, so a submit right after the server started sees them all.
  std::vector<nlohmann::json> WorkerHellos(int64_t wait_ms);

 private:
  struct ReadyItem {
    std::string job_id;
    nlohmann::json spec;
    nlohmann::json result;           // result document so far (compile section)
    std::filesystem::path artifact;
    std::filesystem::path reference_artifact;
    std::map<std::string, std::filesystem::path> blob_files;
    int64_t timeout_ms = 0;
  };
  struct Slot {
    std::unique_ptr<WorkerClient> client;
    std::thread thread;
    std::string busy_job;            // GUARDED_BY(mu_)
    int64_t jobs_run = 0;            // GUARDED_BY(mu_)
    bool started_once = false;       // GUARDED_BY(mu_): the first start attempt ended
    nlohmann::json hello;            // GUARDED_BY(mu_): the worker's last hello (null: none)
  };

  void CompileLoop();
  void SlotLoop(Slot* slot);
  void Prepare(const std::string& job_id);
  // Compiles (kind cuda / compile / cuda_program) or materializes (cubin, ptx,
  // fatbin) one kernel's module; `section` receives the compile report.
  Result<std::filesystem::path> BuildModule(const KernelSpec& kernel, JobKind job_kind, nlohmann::json* section);
  // Writes a blob's bytes to files_dir (once) and returns the path.
  Result<std::filesystem::path> MaterializeBlob(const std::string& hash);
  void RunOnWorker(Slot* slot, ReadyItem item);
  // Python kinds: materializes their files and runs the prepare step when the job needs one.
  void PreparePython(const std::string& job_id, const JobRecord& rec, const JobSpec& spec, nlohmann::json result);
  // Remembers the slot's worker hello (after a start or a job). Called on the slot's thread.
  void RecordHello(Slot* slot, const Result<nlohmann::json>& hello);
  // Ends the job (or requeues it when an infra error may be retried).
  void Finish(const std::string& job_id, const Status& status, nlohmann::json result, int attempts);
  std::optional<JobRecord> Move(const std::string& job_id, JobState to, TransitionUpdate update);
  void CountFinished(JobState state, const Status& status);

  Store& store_;
  Compiler& compiler_;
  SchedulerOptions options_;
  Listener on_change_;

  std::mutex mu_;
  std::condition_variable work_cv_;     // queue_ or ready_ changed, or stopping_
  bool stopping_ = false;               // GUARDED_BY(mu_)
  FairQueue queue_;                     // GUARDED_BY(mu_)
  std::map<std::string, std::string> keys_;  // job id -> key, GUARDED_BY(mu_)
  std::deque<ReadyItem> ready_;         // GUARDED_BY(mu_)
  size_t compiling_ = 0;                // GUARDED_BY(mu_)
  std::condition_variable hello_cv_;    // a slot's started_once/hello changed
  // Jobs in their prepare step: setting the flag stops the harness (cancel).
  std::map<std::string, std::shared_ptr<std::atomic<bool>>> preparing_;  // GUARDED_BY(mu_)
  std::unique_ptr<PythonPreparer> preparer_;  // null without an interpreter
  std::vector<std::unique_ptr<Slot>> slots_;
  std::vector<std::thread> compile_threads_;
  std::atomic<int64_t> cache_hits_{0}, cache_misses_{0}, retries_{0};
  std::map<std::string, int64_t> finished_;  // GUARDED_BY(mu_)
  std::deque<double> run_seconds_;           // GUARDED_BY(mu_)
};

}  // namespace assay

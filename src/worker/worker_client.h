// Server side of a worker: one long-lived `assay worker` subprocess per GPU (or
// one GPU-less worker on a machine without a GPU), spoken to over a framed
// protocol (worker/protocol.h), with heartbeats.
//
// A job's timeout, a cancel, a worker crash or hang: the worker's whole process
// group is killed, the job gets its class (timeout, cancelled, runtime_error
// with the signal), and the next Run() starts a fresh worker.
//
// Thread-safety: one thread drives a WorkerClient at a time (the scheduler's
// slot thread); Cancel() may be called from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace assay {

// How a worker runs the Python kinds (torch, torch_cuda, triton, kernelbench;
// docs/python-kinds.md). An empty interpreter means the worker has none.
struct PythonWorkerOptions {
  std::filesystem::path interpreter;  // e.g. /opt/torch/.venv/bin/python3; looked up in PATH if bare
  std::string device = "cuda";        // "cuda"; "cpu" only for tests (`assay serve --python-device cpu`)
  std::filesystem::path cache_dir;    // torch_ext/<key>/ and triton/ live here (shared by jobs)
  std::filesystem::path harness;      // empty: assay_harness.py next to the running binary (tests override)
  // Harness processes kept started ahead of the jobs that will take them
  // (docs/python-kinds.md, "Standby"); 0 = each job starts its own.
  int standby = 3;
};

struct WorkerOptions {
  std::filesystem::path self_exe;     // the assay binary; started as `assay worker ...`
  int device = -1;                    // CUDA ordinal; -1 = no GPU
  std::filesystem::path work_dir;     // per-job temp dirs are made under it
  int64_t heartbeat_interval_ms = 500;
  int64_t heartbeat_timeout_ms = 10'000;  // no heartbeat for this long = hung worker
  int64_t kill_grace_ms = 2'000;          // beyond a job's timeout before the group is killed
  bool sandbox = true;                    // no network, own temp dir, rlimits for user programs
  int64_t start_timeout_ms = 30'000;      // [ms] for the hello (creating a CUDA context takes seconds)
  // Passed to the worker as --python / --python-device / --python-cache. With
  // an interpreter the worker probes it before its hello (up to 60 s: raise
  // start_timeout_ms to match).
  PythonWorkerOptions python;
};

// One unit of GPU-side work, prepared by the scheduler (artifacts already built).
struct WorkItem {
  std::string job_id;
  nlohmann::json spec;                 // normalized job spec
  std::filesystem::path artifact;      // cubin / executable from the compile stage, may be empty
  std::filesystem::path reference_artifact;  // the reference kernel's module, when it has one
  // Uploaded data the spec refers to, materialized as files: blob hash -> path.
  std::map<std::string, std::filesystem::path> blob_files;
  int64_t timeout_ms = 60'000;         // wall clock for the run phase
};

struct WorkOutcome {
  Status status;              // OK or the job's failure class
  nlohmann::json result;      // fields to merge into the job's result ("program", "timing", ...)
  // Named binary outputs (e.g. "outputs/y.npy" -> bytes); the scheduler stores
  // them as blobs. Travel as the result frame's payload.
  std::map<std::string, std::string> blobs;
  // Set by a runner whose job left the worker unusable (a sticky CUDA error):
  // the worker reports the job, then exits; the next job gets a fresh worker.
  bool exit_worker = false;
  bool worker_restarted = false;  // the worker was killed during this Run; the next one starts a fresh worker
};

class WorkerClient {
 public:
  explicit WorkerClient(WorkerOptions options);
  ~WorkerClient();  // kills the worker's process group and reaps it
  WorkerClient(const WorkerClient&) = delete;
  WorkerClient& operator=(const WorkerClient&) = delete;

  // Starts the worker if it is not running; returns its hello (device info).
  Result<nlohmann::json> EnsureStarted();
  // Runs one job to completion. Blocks. Never throws.
  WorkOutcome Run(const WorkItem& item);
  // Asks the Run() in progress for job_id to stop; it returns kCancelled.
  void Cancel(const std::string& job_id);
  bool alive() const;
  int64_t restarts() const;   // workers replaced so far
  const WorkerOptions& options() const { return options_; }

 private:
  struct Impl;
  WorkerOptions options_;
  std::unique_ptr<Impl> impl_;
};

// Entry point of `assay worker` (`assay worker --device N --work-dir DIR [--no-sandbox]
// [--python PATH --python-device cuda|cpu --python-cache DIR]`): speaks the protocol on
// fds 3 (in) and 4 (out). Without python.interpreter the Python kinds are not offered.
int WorkerMain(int device, const std::filesystem::path& work_dir, bool sandbox,
               const PythonWorkerOptions& python = {});

}  // namespace assay

// Job kinds the worker can run, keyed by the spec's "kind". WorkerMain looks the
// kind up here, so a new kind is added by registering a runner, without
// touching the worker loop. Built-in kinds (cuda_program, the kernel kinds,
// the Python kinds) are registered by
// RegisterBuiltinJobRunners(); tests may register extra kinds before WorkerMain.
//
// Thread-safety: register before WorkerMain starts; lookups are then read-only.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "worker/worker_client.h"

namespace assay {

// What a runner gets for one job. Valid for the duration of the call.
struct RunContext {
  std::string job_id;
  const nlohmann::json* spec = nullptr;     // the normalized job spec (never null)
  std::filesystem::path artifact;           // from the compile stage; may be empty
  std::filesystem::path reference_artifact; // the reference kernel's module; may be empty
  std::map<std::string, std::filesystem::path> blob_files;  // blob hash -> file with its bytes
  int64_t timeout_ms = 0;                   // [ms] wall clock for the run phase
  int device = -1;                          // CUDA ordinal of this worker; -1 = no GPU
  std::filesystem::path work_dir;           // make per-job temp dirs under it
  bool sandbox = true;                      // isolate user programs (proc/sandbox.h)
  const PythonWorkerOptions* python = nullptr;  // the Python kinds' interpreter and caches (never null in WorkerMain)
  const std::atomic<bool>* cancel = nullptr;  // becomes true when the server cancels the job
  // Sends a `progress` message ({job_id, phase, ...fields}); thread-safe.
  std::function<void(const std::string& phase, nlohmann::json fields)> progress;
};

// Runs one job. Must not throw (exceptions are caught by the worker loop and
// turned into infra_error, but a runner knows better what went wrong).
using JobRunner = std::function<WorkOutcome(const RunContext&)>;

void RegisterJobRunner(const std::string& kind, JobRunner runner);
// nullptr when no runner is registered for `kind`.
const JobRunner* FindJobRunner(const std::string& kind);
std::vector<std::string> RegisteredJobKinds();

// Registers the kinds this build of the worker implements (idempotent).
void RegisterBuiltinJobRunners();

}  // namespace assay

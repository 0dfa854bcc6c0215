// The Python kinds (torch, torch_cuda, triton, kernelbench): one harness
// process per job (python/assay_harness.py, a fresh interpreter), under the
// same sandbox, timeout, cancel and output caps as a cuda_program, with the
// CUPTI injection library for the second clock. docs/python-kinds.md has the
// design and the worker/harness contract.
//
//   `<python> -I -B DIR/assay_harness.py standby` started in a fresh job dir
//   (before the job exists, while the previous job runs) -> the job's files
//   written into DIR (python_request.h) -> {"mode":"run","request":...,
//   "result":...} on its stdin -> result.json + cupti.json -> WorkOutcome
//   (python_result.h)
//
// RunHarness is shared with the scheduler's prepare step (sched/python_prepare.h).
//
// Thread-safety: ProbePython caches its first answer (thread-safe); the other
// functions are reentrant.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "proc/subprocess.h"
#include "worker/job_runner.h"

namespace assay {

inline constexpr int64_t kPythonProbeTimeoutMs = 60'000;
inline constexpr const char* kHarnessFileName = "assay_harness.py";
// A successful probe is remembered in <work_dir>/python_probe.json for the
// workers that replace this one (`assay serve` removes it at start).
inline constexpr const char* kPythonProbeCacheFile = "python_probe.json";

// What `<python> -I -B <harness> --probe` said about the interpreter.
struct PythonProbe {
  bool ok = false;                     // torch imports (and, for device "cuda", sees CUDA)
  bool triton = false;                 // triton imports too
  nlohmann::json info;                 // the probe's JSON ({"torch": "2.11.0", "cuda": true, ...})
  std::string error;                   // why !ok
  std::filesystem::path interpreter;   // absolute (looked up in PATH)
  std::filesystem::path harness;
};

// <dir of the running binary>/assay_harness.py (installed there by CMake).
std::filesystem::path DefaultHarnessPath();

// Runs the probe (kPythonProbeTimeoutMs) with the GPU of `device` visible
// (none for device "cpu"). Never fails: problems land in `error`.
PythonProbe RunPythonProbe(const PythonWorkerOptions& options, int device,
                           const std::filesystem::path& harness, const std::filesystem::path& scratch_dir);
// The same, once per process: later calls return the first answer. A
// successful answer is kept in scratch_dir/kPythonProbeCacheFile and reused
// by the next worker process with the same options.
const PythonProbe& ProbePython(const PythonWorkerOptions& options, int device,
                               const std::filesystem::path& scratch_dir);

// Kinds a worker with this probe offers: torch, torch_cuda, kernelbench when
// ok; triton when triton imports too.
std::vector<std::string> PythonKinds(const PythonProbe& probe);
// The hello's "python" object: {interpreter, device, ok, probe, error, kinds}.
nlohmann::json PythonHelloJson(const PythonWorkerOptions& options, const PythonProbe& probe);

// One harness process in a job directory that WritePythonJob filled.
struct HarnessInvocation {
  std::filesystem::path interpreter;       // absolute
  std::filesystem::path harness;           // copied into dir (the sandbox may hide its home)
  std::filesystem::path dir;               // the job directory: cwd, HOME, TMPDIR, writable
  std::string mode = "run";                // "run" | "prepare"
  std::map<std::string, std::string> env;  // set last, over the inherited environment
  std::vector<std::filesystem::path> writable_dirs;  // caches, writable besides dir (must exist)
  int64_t timeout_ms = 60'000;
  const std::atomic<bool>* cancel = nullptr;
  bool sandbox = true;
  size_t output_limit = 1 << 20;           // [bytes] kept of stdout and of stderr, each
  int nice = 0;                            // ProcessOptions::nice
  std::function<void(int pid)> on_start;
};

struct HarnessOutput {
  ProcessResult process;
  nlohmann::json result;      // result.json (ParseHarnessResult), null when none usable
  std::string result_error;   // why result is null
};

// Infra when the process cannot be started.
Result<HarnessOutput> RunHarness(const HarnessInvocation& invocation);

// The runner registered for the four Python kinds. Each job runs in a harness
// process of its own; with PythonWorkerOptions::standby the next job's process
// is started while this one runs (docs/python-kinds.md, "Standby").
WorkOutcome RunPythonJob(const RunContext& ctx);

// Ends the waiting standby harness, if any: the worker calls it before a job
// of another kind, which should have the GPU (and its memory) to itself.
void ReleasePythonStandby();

}  // namespace assay

// The prepare step of the Python kinds (docs/python-kinds.md, "Caching and
// throughput"): on the scheduler's CPU compile pool, before a job takes a GPU
// slot, the harness runs in `prepare` mode with no GPU visible and imports the
// candidate (and reference), so the `load_inline` / `cpp_extension` builds at
// their top level land in TORCH_EXTENSIONS_DIR=<cache>/torch_ext/<key>. The
// worker's run then finds the build there (same key: same source, same
// interpreter versions, same arch). A build that fails ends the job with
// `compile_error` without costing a GPU slot.
//
// Builds are remembered by a marker file in the key's directory; concurrent
// prepares of one key build once (single flight), the others wait and take
// the result.
//
// Thread-safety: Prepare() may be called from many threads.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "spec/job_spec.h"
#include "worker/python_request.h"

namespace assay {

struct PythonPrepareOptions {
  std::filesystem::path interpreter;   // as given to `assay serve --python`; looked up in PATH if bare
  std::filesystem::path harness;       // assay_harness.py
  std::filesystem::path cache_dir;     // the workers' Python cache: torch_ext/<key>/, triton/
  std::filesystem::path work_dir;      // scratch job directories
  std::string device = "cuda";         // the request's device (as the workers')
  std::string arch_list;               // TORCH_CUDA_ARCH_LIST of the server's GPU ("9.0"); "" without one
  bool sandbox = true;
  int64_t timeout_ms = 300'000;        // [ms] a torch extension build compiles torch's headers: minutes
};

struct PythonPrepareOutput {
  Status status;          // OK, compile_error (log in `compile.log`), timeout, cancelled, infra_error
  nlohmann::json compile; // the result's `compile` section: cache_hit, duration_ms, log, cache_key, extensions, arch
};

class PythonPreparer {
 public:
  explicit PythonPreparer(PythonPrepareOptions options) : options_(std::move(options)) {}

  // Prepares `spec` unless its key was prepared before. `probe` is the
  // interpreter's probe (from a worker's hello) whose versions go into the key.
  PythonPrepareOutput Prepare(const std::string& job_id, const JobSpec& spec, const BlobFiles& blob_files,
                              const nlohmann::json& probe, const std::atomic<bool>* cancel);

  // <cache>/torch_ext/<key> for a candidate source (what the workers compute too).
  std::filesystem::path ExtensionDir(std::string_view candidate_source, const nlohmann::json& probe) const;

 private:
  std::shared_ptr<std::mutex> InFlightLock(const std::string& key);

  const PythonPrepareOptions options_;
  std::mutex inflight_mu_;
  std::map<std::string, std::weak_ptr<std::mutex>> inflight_;  // GUARDED_BY(inflight_mu_)
};

}  // namespace assay

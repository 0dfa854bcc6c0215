// Moving a job's data between the host and the device, timed: the uploaded
// inputs (blob inits) in, the requested outputs (spec.outputs) out
// (docs/correctness.md, "Transfers"; the result's `transfers` section).
//
// Both directions go through page-locked staging memory so the copies are true
// DMA transfers, and are timed with CUDA events recorded on the engine's stream
// around the cuMemcpy*Async calls: `ms` is the copy engine's time, not the host
// memcpy into or out of the staging memory (that is `staging_ms`, wall clock).
//
// Thread-safety: not thread-safe. REQUIRES: the engine's context is current.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "engine/correctness_check.h"
#include "engine/job_plan.h"
#include "gpu/cuda_handles.h"

namespace assay {

// One direction of a job's transfers.
struct TransferStats {
  uint64_t bytes = 0;       // element bytes moved (not .npy headers)
  double ms = 0;            // device time of the copies, start event to stop event [ms]
  double staging_ms = 0;    // host memcpy into (h2d) or out of (d2h) the staging memory, wall [ms]
  int tensors = 0;          // tensors moved
  bool pinned = true;       // false: page-locked memory could not be had; copied from pageable memory
};

// {bytes, ms, bytes_per_s (null when nothing moved), staging_ms, tensors, pinned}.
nlohmann::json ToJson(const TransferStats& s);

// Page-locked host memory reused from job to job: allocating it costs
// milliseconds per 64 MiB, so a warm worker keeps one block of up to
// kKeepBytes; larger needs get a block for one job only (Trim frees it).
class StagingArea {
 public:
  static constexpr size_t kKeepBytes = size_t{256} << 20;
  // A block of at least `bytes`, or nullptr when page-locked memory cannot be
  // had (callers then copy from pageable memory). Valid until the next Get/Trim.
  void* Get(size_t bytes);
  // Frees the block if it is larger than kKeepBytes (after a job).
  void Trim();

 private:
  PinnedBuffer block_;
};

// Element bytes of all uploaded inputs / of all outputs the job returns.
uint64_t UploadBytes(const JobPlan& plan);
uint64_t OutputBytes(const JobPlan& plan);

// Copies every uploaded input into the candidate's buffer through `staging`
// (at least UploadBytes(plan) bytes, or nullptr for pageable copies), timed.
// `sources` (resized to plan.tensors.size()) receives, per tensor, the host
// address later checks copy the input from: the staged copy, or the blob.
// Errors: infra_error (runtime_error and *context_lost after a sticky error).
Result<TransferStats> UploadInputs(const JobPlan& plan, const JobBuffers& buffers, void* staging, CUstream stream,
                                   std::vector<const void*>* sources, bool* context_lost);

// Reads the candidate's spec.outputs buffers back through `staging` (at least
// OutputBytes(plan) bytes, or nullptr), timed, and makes them .npy files.
Result<TransferStats> DownloadOutputs(const JobPlan& plan, const JobBuffers& buffers, void* staging, CUstream stream,
                                      std::map<std::string, std::string>* npy, bool* context_lost);

}  // namespace assay

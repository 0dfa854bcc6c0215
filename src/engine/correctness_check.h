// One correctness check of a candidate (docs/correctness.md): fresh inputs
// from a seed, outputs poisoned, inputs checksummed, the candidate run first,
// inputs re-checksummed, the reference run on its own buffers (or expected
// data), every output compared on the device, the first mismatches read back.
// Thread-safety: not thread-safe. REQUIRES: the engine's context is current.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "engine/helper_kernels.h"
#include "engine/job_plan.h"
#include "engine/kernel_launch.h"
#include "gpu/cuda_handles.h"

namespace assay {

inline constexpr int kMaxReportedMismatches = 10;

// Device memory of one job, released when it goes away.
struct JobBuffers {
  std::vector<DeviceBuffer> cand, ref, expected;  // parallel to plan.tensors; empty where unused
  std::vector<CUdeviceptr> cand_by_arg, ref_by_arg;  // parallel to spec.args (0 for scalars)
};
// Allocates (and uploads expected outputs). Out of memory is `rejected`.
Result<JobBuffers> AllocateJobBuffers(const JobPlan& plan);

struct CheckEnv {
  const JobPlan* plan = nullptr;
  HelperKernels* helpers = nullptr;
  CUstream stream = nullptr;
  const KernelLaunch* candidate = nullptr;
  const KernelLaunch* reference = nullptr;  // null unless the reference is a kernel
  JobBuffers* buffers = nullptr;
  // Parallel to plan.tensors: the host copy each uploaded input is re-copied
  // from before every check (the pinned staged copy, engine/transfers.h);
  // null, or a null entry: the blob's bytes.
  const std::vector<const void*>* upload_sources = nullptr;
  bool* context_lost = nullptr;
};

struct CheckOutcome {
  Status status;                     // OK, wrong_result, runtime_error, launch_error, infra
  nlohmann::json report;             // {label, seed?, passed, outputs: {name: {...}}}
  std::set<std::string> warnings;    // degenerate reference, ...
};

// `label` is "trial 0" / "after timing"; seed is shown in the report unless secret.
CheckOutcome RunCheck(const CheckEnv& env, uint64_t seed, bool show_seed, const std::string& label);

}  // namespace assay

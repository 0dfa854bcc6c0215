// One user kernel (the candidate or a reference kernel) ready to launch: its
// parameter block built from the argument contract, checked against the
// kernel's own parameter list, and its launch sizes.
//
// Failure classes (docs/correctness.md, "Failure classes"):
//  - parameter list does not match the contract, shared memory above the
//    device limit, or cuLaunchKernel refusing the configuration: launch_error
//    carrying the driver's error name;
//  - an error after the kernel started (found at the synchronize): runtime_error
//    with the CUDA error name; *context_lost is set for sticky errors.
// Thread-safety: not thread-safe. REQUIRES: the engine's context is current.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "spec/job_spec.h"

namespace assay {

// Errors that leave the context unusable: every later call fails the same way.
bool IsStickyCudaError(CUresult r);

// runtime_error "<who>: CUDA_ERROR_X (description)"; sets *context_lost for sticky errors.
Status KernelFailure(CUresult r, const std::string& who, const char* call, bool* context_lost);

class KernelLaunch {
 public:
  // `who` names the kernel in messages ("candidate 'add'", "reference 'add_ref'").
  static Result<KernelLaunch> Prepare(CUfunction f, const JobSpec& spec, const ResolvedLaunch& launch,
                                      std::string who);
  // Points tensor parameters at device buffers; `by_arg` is indexed like spec.args
  // (entries of scalar args are ignored).
  void SetTensors(const std::vector<CUdeviceptr>& by_arg);
  // Enqueues one launch. Never synchronizes.
  Status Launch(CUstream stream, bool* context_lost) const;
  // Launch and wait for it: the kernel's own errors are reported here.
  Status LaunchAndWait(CUstream stream, bool* context_lost) const;
  const ResolvedLaunch& launch() const { return launch_; }
  const std::string& who() const { return who_; }

 private:
  CUfunction f_ = nullptr;
  ResolvedLaunch launch_;
  std::string who_;
  std::vector<uint64_t> slots_;  // one 8-byte slot per argument, holding its value
  std::vector<void*> params_;    // params_[i] == &slots_[i]
  std::vector<bool> is_tensor_;
};

}  // namespace assay

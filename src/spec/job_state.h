// Job kinds and the job state machine:
//   queued -> compiling -> running -> done | failed | cancelled | timed_out
// (compiling and running may be skipped; any non-terminal state may end in
// failed, cancelled or timed_out; compiling/running may go back to queued when
// a job is retried after an infrastructure failure).
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string_view>

namespace assay {

enum class JobKind {
  kCompile,      // compile-only: cubin + resource usage (+ PTX/SASS)
  kCuda,         // CUDA C++ source with an extern "C" entry
  kCubin,        // precompiled modules
  kPtx,
  kFatbin,
  kCudaProgram,  // whole .cu with main()
  kTriton,       // Python kinds (harness process)
  kTorch,
  kTorchCuda,
  kKernelbench,
};

enum class JobState { kQueued, kCompiling, kRunning, kDone, kFailed, kCancelled, kTimedOut };

std::string_view JobKindName(JobKind k);
std::optional<JobKind> JobKindFromName(std::string_view name);
std::string_view JobStateName(JobState s);
std::optional<JobState> JobStateFromName(std::string_view name);

bool IsTerminal(JobState s);
// Whether the state machine allows from -> to.
bool CanTransition(JobState from, JobState to);

}  // namespace assay

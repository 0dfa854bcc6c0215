#include "spec/job_state.h"

#include <array>
#include <utility>

namespace assay {
namespace {
constexpr std::array<std::pair<JobKind, std::string_view>, 10> kKinds = {{
    {JobKind::kCompile, "compile"},
    {JobKind::kCuda, "cuda"},
    {JobKind::kCubin, "cubin"},
    {JobKind::kPtx, "ptx"},
    {JobKind::kFatbin, "fatbin"},
    {JobKind::kCudaProgram, "cuda_program"},
    {JobKind::kTriton, "triton"},
    {JobKind::kTorch, "torch"},
    {JobKind::kTorchCuda, "torch_cuda"},
    {JobKind::kKernelbench, "kernelbench"},
}};
constexpr std::array<std::pair<JobState, std::string_view>, 7> kStates = {{
    {JobState::kQueued, "queued"},
    {JobState::kCompiling, "compiling"},
    {JobState::kRunning, "running"},
    {JobState::kDone, "done"},
    {JobState::kFailed, "failed"},
    {JobState::kCancelled, "cancelled"},
    {JobState::kTimedOut, "timed_out"},
}};
}  // namespace

std::string_view JobKindName(JobKind k) {
  for (auto& [v, n] : kKinds)
    if (v == k) return n;
  return "unknown";
}
std::optional<JobKind> JobKindFromName(std::string_view name) {
  for (auto& [v, n] : kKinds)
    if (n == name) return v;
  return std::nullopt;
}
std::string_view JobStateName(JobState s) {
  for (auto& [v, n] : kStates)
    if (v == s) return n;
  return "unknown";
}
std::optional<JobState> JobStateFromName(std::string_view name) {
  for (auto& [v, n] : kStates)
    if (n == name) return v;
  return std::nullopt;
}

bool IsTerminal(JobState s) {
  return s == JobState::kDone || s == JobState::kFailed || s == JobState::kCancelled ||
         s == JobState::kTimedOut;
}

bool CanTransition(JobState from, JobState to) {
  if (IsTerminal(from)) return false;
  if (to == JobState::kFailed || to == JobState::kCancelled || to == JobState::kTimedOut) return true;
  switch (from) {
    case JobState::kQueued:
      return to == JobState::kCompiling || to == JobState::kRunning || to == JobState::kDone;
    case JobState::kCompiling:
      return to == JobState::kRunning || to == JobState::kDone || to == JobState::kQueued;
    case JobState::kRunning:
      return to == JobState::kDone || to == JobState::kQueued;
    default:
      return false;
  }
}

}  // namespace assay

#include "worker/job_runner.h"

#include <map>
#include <mutex>

#include "worker/kernel_runner.h"
#include "worker/program_runner.h"
#include "worker/python_runner.h"

namespace assay {
namespace {

std::map<std::string, JobRunner>& Registry() {
  static std::map<std::string, JobRunner> registry;
  return registry;
}

}  // namespace

void RegisterJobRunner(const std::string& kind, JobRunner runner) { Registry()[kind] = std::move(runner); }

const JobRunner* FindJobRunner(const std::string& kind) {
  auto it = Registry().find(kind);
  return it == Registry().end() ? nullptr : &it->second;
}

std::vector<std::string> RegisteredJobKinds() {
  std::vector<std::string> kinds;
  for (const auto& [kind, runner] : Registry()) kinds.push_back(kind);
  return kinds;
}

void RegisterBuiltinJobRunners() {
  static std::once_flag once;
  std::call_once(once, [] {
    RegisterJobRunner("cuda_program", RunCudaProgram);
    for (const char* kind : {"cuda", "cubin", "ptx", "fatbin"}) RegisterJobRunner(kind, RunKernelJob);
    for (const char* kind : {"torch", "torch_cuda", "triton", "kernelbench"}) RegisterJobRunner(kind, RunPythonJob);
  });
}

}  // namespace assay

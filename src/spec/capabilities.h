// What this server can run, and the check of a parsed spec against it. A
// spec can be valid and still not runnable here (a Python kind before the
// harness exists, a GPU kind on a machine with no GPU, a GPU type not
// present): those are Rejected at submit time with a plain message, never
// queued to fail later.
// Thread-safety: plain values and a pure function.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "common/status.h"
#include "spec/job_spec.h"
#include "spec/job_state.h"

namespace assay {

struct Capabilities {
  std::set<JobKind> supported;         // kinds this server implements
  bool has_gpu = false;                // at least one usable GPU
  std::vector<std::string> gpu_names;  // e.g. "NVIDIA H100 80GB HBM3"
  // Kinds that run here without a GPU although KindNeedsGpu says otherwise:
  // the Python kinds on a server started with `--python-device cpu` (tests).
  std::set<JobKind> cpu_kinds;
  // Why the Python kinds are missing from `supported` (no interpreter, torch
  // does not import, no GPU, ...); part of the rejection message.
  std::string python_note;
};

// torch, torch_cuda, triton, kernelbench: run by the Python harness.
bool IsPythonKind(JobKind kind);
// cuda, cubin, ptx, fatbin: modules launched by the kernel engine.
bool IsModuleKind(JobKind kind);

// Every kind but compile and cuda_program runs on a GPU. (cuda_program can be
// built anywhere and runs as a process; without a GPU its CUDA calls fail,
// which is the program's business.)
bool KindNeedsGpu(JobKind kind);

// OK, or Rejected naming the field: "kind", "reference.kind" or "gpu.type".
// Besides kind support it refuses a reference from the other engine (a module
// kind for a Python candidate, a Python kind for a module candidate): the two
// engines do not share buffers.
Status CheckSupported(const JobSpec& spec, const Capabilities& caps);

}  // namespace assay

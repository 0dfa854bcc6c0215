// The cuda_program kind: runs the executable that the compile stage built with
// nvcc as a child process of the worker, in a fresh per-job directory, with the
// spec's argv / stdin / env and output caps, sandboxed when the worker is.
//
// Result: {"program": {exit_code, signal, signal_name, stdout, stderr,
//   stdout_bytes, stdout_truncated, stderr_bytes, stderr_truncated, duration_ms}}
// Classes: exit 0 -> OK; non-zero exit or a signal -> runtime_error; past the
// timeout -> timeout (partial output kept); cancel -> cancelled; cannot start -> infra_error.
//
// Thread-safety: reentrant.
#pragma once

#include "worker/job_runner.h"

namespace assay {

WorkOutcome RunCudaProgram(const RunContext& ctx);

}  // namespace assay

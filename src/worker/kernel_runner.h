// Runner for the kernel kinds (cuda, cubin, ptx, fatbin): hands the job to the
// worker's KernelEngine (engine/kernel_engine.h), created on first use and kept
// warm for the life of the worker process.
#pragma once

#include "worker/job_runner.h"

namespace assay {

WorkOutcome RunKernelJob(const RunContext& ctx);

}  // namespace assay

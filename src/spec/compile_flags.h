// The allow-list of compiler flags a job may pass (docs/job-spec.md,
// "Compiler flags"). Flags outside it are rejected rather than passed on:
// nvcc/NVRTC flags can read and write files (-I, -o, --keep, -include) or run
// host tools, and the compile cache key assumes flags are what they look like.
// Thread-safety: pure function.
#pragma once

#include <string_view>

#include "common/status.h"
#include "spec/job_state.h"

namespace assay {

// OK if `flag` may be used for `kind`; Rejected(reason) otherwise (field left empty).
Status CheckCompileFlag(std::string_view flag, JobKind kind);

}  // namespace assay

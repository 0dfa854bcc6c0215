// Per-kernel resource usage, from the two places the toolkit records it:
// ptxas' verbose report (`-v`: registers, shared memory, stack, spills) and the
// cubin's own ELF sections (the kernel list, `__launch_bounds__` as
// EIATTR_MAX_THREADS, per-kernel constant banks).
//
// Thread-safety: pure functions.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "compile/compiler.h"
#include "compile/cubin_elf.h"

namespace assay {

// Parses ptxas -v output (NVRTC program log or nvcc stderr). Kernels appear
// under "Compiling entry function 'NAME' for 'sm_XX'"; non-entry functions
// are skipped. Fields not reported stay 0; max_threads_per_block is not set.
std::map<std::string, ResourceUsage> ParsePtxasLog(std::string_view log);

// Threads per block that fit the register file of arch `major` (sm_75 and
// newer: 64 K registers per block, allocated per warp in units of 256),
// capped at 1024 and at `launch_bounds` when that is non-zero:
//   per_warp = ceil(registers * 32 / 256) * 256
//   threads  = min(1024, floor(65536 / per_warp) * 32, launch_bounds)
int MaxThreadsPerBlock(int registers, int launch_bounds);

// Itanium demangling; returns `name` unchanged when it is not mangled
// (extern "C" kernels) or cannot be demangled.
std::string Demangle(const std::string& name);

// ptxas' report merged with the cubin's facts; fills demangled names and
// max_threads_per_block. Kernels known to only one source are kept.
std::map<std::string, ResourceUsage> MergeResourceUsage(std::string_view ptxas_log,
                                                        std::string_view cubin);

}  // namespace assay

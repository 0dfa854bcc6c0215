// The timer's own device code, compiled at run time with NVRTC for the
// device's architecture (cached on disk, so only the first worker on a host
// pays the ~0.3 s compile) and loaded into the current context:
//   assay_blocking_kernel  holds a stream until the host releases a flag
//   assay_peak_copy        float4 device-to-device copy (DRAM bandwidth peak)
//   assay_peak_fma         independent FP32 FMA chains (FP32 throughput peak)
//   assay_empty            an empty kernel (the timer's fixed event overhead)
//   assay_l2_flush         reads a 2 x L2 buffer: L2 left holding clean lines only
//
// Thread-safety: a HelperKernels value is used by one thread.
// REQUIRES: the device's primary context is current.
#pragma once

#include <cuda.h>

#include <filesystem>
#include <string>

#include "common/status.h"
#include "gpu/cuda_handles.h"
#include "gpu/devices.h"

namespace assay {

struct HelperKernels {
  Module module;
  // (volatile int* flag, int* timed_out, unsigned long long timeout_ns); launch <<<1,1>>>.
  CUfunction blocking = nullptr;
  // (const float4* src, float4* dst, unsigned long long n_float4); one float4 per thread.
  CUfunction copy = nullptr;
  // (float* out, int iterations, float seed); 8 chains of `iterations` FMAs per thread.
  CUfunction fma = nullptr;
  // (); does nothing: the fixed cost of event timing around a launch.
  CUfunction empty = nullptr;
  // (const float4* buf, unsigned long long n_float4, float* sink); grid-stride, any grid.
  CUfunction l2_flush = nullptr;
};
inline constexpr int kFmaChains = 8;

// Compiles `source` with NVRTC for gpu.arch() (or finds it in `cache_dir`) and
// loads it into the current context. infra_error on failure: the sources given
// here are Assay's own (helpers, test and benchmark kernels), never a user's.
Result<Module> CompileAndLoad(const GpuInfo& gpu, const std::string& source, const std::filesystem::path& cache_dir,
                              const std::string& filename);

// Compiles (or finds in `cache_dir`) and loads the helpers. infra_error on failure.
Result<HelperKernels> LoadHelperKernels(const GpuInfo& gpu, const std::filesystem::path& cache_dir);

// $TMPDIR/assay-measure-<uid>: the default cache of the helpers' cubins.
std::filesystem::path DefaultMeasureCacheDir();

}  // namespace assay

// The engine's own device kernels: input generation from a seed, output
// poisoning, input checksums and output comparison. Written as CUDA source in
// helper_kernels.cc, compiled once per worker with NVRTC for the device's arch
// (cached on disk by the compile cache) and loaded as one module.
//
// Every call enqueues on `stream`; Checksum and Compare synchronize it to read
// their result. Failures are infra errors (our kernels), except that a sticky
// error left behind by a user kernel surfaces here too: callers synchronize
// and classify user launches before calling these.
// Thread-safety: not thread-safe (one shared scratch buffer).
// REQUIRES: the engine's context is current.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <filesystem>
#include <string_view>

#include "common/status.h"
#include "gpu/cuda_handles.h"
#include "gpu/devices.h"
#include "spec/job_spec.h"

namespace assay {

// Device-side comparison summary of one output (layout shared with the kernel).
struct CompareStats {
  uint64_t mismatches = 0;      // elements failing the tolerance rule
  uint64_t poisoned = 0;        // candidate elements still holding the poison pattern (and failing)
  uint64_t first_mismatch = 0;  // smallest failing index; UINT64_MAX when none
  uint64_t max_abs_bits = 0;    // double bits of max |a - b| over finite pairs
  uint64_t max_rel_bits = 0;    // double bits of max |a - b| / |b| over finite pairs, b != 0
  uint64_t ref_varying = 0;     // reference elements whose bits differ from element 0
  uint64_t ref_poisoned = 0;    // reference elements still holding the poison pattern
  double max_abs() const;
  double max_rel() const;
};

// The CUDA source of the helpers (extern "C" kernels assay_generate,
// assay_poison, assay_checksum, assay_compare), for tests and docs.
std::string_view HelperKernelSource();

class HelperKernels {
 public:
  // Compiles (or finds in the cache under cache_dir) and loads the helpers.
  static Result<HelperKernels> Create(const GpuInfo& gpu, const std::filesystem::path& cache_dir);

  // Fills n elements of dtype t from the trial's seed. `arg_index` gives each
  // argument its own random stream, so two inputs never hold the same data.
  Status Generate(CUstream stream, CUdeviceptr p, uint64_t n, DType t, const InitSpec& init, uint64_t seed,
                  uint64_t arg_index);
  // Writes PoisonBits(t) (host_values.h) into n elements.
  Status Poison(CUstream stream, CUdeviceptr p, uint64_t n, DType t);
  // Order-sensitive 64-bit hash of `bytes` bytes (each word mixed with its position).
  Result<uint64_t> Checksum(CUstream stream, CUdeviceptr p, uint64_t bytes);
  // Compares n elements of cand against ref under the tolerance rule.
  Result<CompareStats> Compare(CUstream stream, CUdeviceptr cand, CUdeviceptr ref, uint64_t n, DType t,
                               const Tolerance& tol, bool nan_equal);

 private:
  Status Launch(CUfunction f, CUstream stream, uint64_t n, void** params, const char* what);

  Module module_;
  CUfunction generate_ = nullptr, poison_ = nullptr, checksum_ = nullptr, compare_ = nullptr;
  DeviceBuffer scratch_;  // CompareStats or one checksum
  uint32_t max_blocks_ = 1024;
};

}  // namespace assay

// The CUDA driver API, loaded at run time with dlopen so every Assay binary
// starts on a machine without a GPU driver. Types come from the toolkit's
// cuda.h; the entry points are resolved by their versioned names (cuda.h maps
// e.g. cuMemAlloc to cuMemAlloc_v2, and we resolve exactly that symbol).
//
// Thread-safety: CudaDriver() is initialized once (std::call_once); the table
// is immutable afterwards and its functions are the driver's own (thread-safe).
#pragma once

#include <cuda.h>

#include <string>

#include "common/status.h"

namespace assay {

struct CudaDriverApi {
#define ASSAY_CU_FN(name) decltype(&::name) name = nullptr;
#include "gpu/cuda_driver_fns.inc"
#undef ASSAY_CU_FN
};

// The loaded driver, or the reason it is unavailable ("libcuda.so.1 not found",
// "cuInit failed: CUDA_ERROR_NO_DEVICE", ...). cuInit(0) has been called on success.
Result<const CudaDriverApi*> CudaDriver();

// "CUDA_ERROR_ILLEGAL_ADDRESS" for a driver result code.
std::string CuResultName(CUresult r);
// Status for a failed call: class as given, message "<call>: <CUDA_ERROR_NAME> (<description>)".
Status CuStatus(ErrorClass cls, CUresult r, const char* call);

}  // namespace assay

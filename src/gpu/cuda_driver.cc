#include "gpu/cuda_driver.h"

#include <dlfcn.h>

#include <mutex>

namespace assay {
namespace {

#define ASSAY_STR2(x) #x
#define ASSAY_STR(x) ASSAY_STR2(x)

struct Loaded {
  CudaDriverApi api;
  Status status;
};

Loaded Load() {
  Loaded out;
  void* h = nullptr;
  for (const char* name : {"libcuda.so.1", "libcuda.so"}) {
    h = ::dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (h) break;
  }
  if (!h) {
    out.status = Status::Infra("no CUDA driver: libcuda.so.1 not found (no NVIDIA driver installed)");
    return out;
  }
  // ASSAY_STR(name) expands cuda.h's versioning macros, e.g. cuMemAlloc -> "cuMemAlloc_v2".
#define ASSAY_CU_FN(name)                                                                  \
  out.api.name = reinterpret_cast<decltype(&::name)>(::dlsym(h, ASSAY_STR(name)));        \
  if (!out.api.name) {                                                                     \
    out.status = Status::Infra(std::string("CUDA driver too old: missing ") + ASSAY_STR(name)); \
    return out;                                                                            \
  }
#include "gpu/cuda_driver_fns.inc"
#undef ASSAY_CU_FN
  CUresult r = out.api.cuInit(0);
  if (r != CUDA_SUCCESS) {
    out.status = CuStatus(ErrorClass::kInfraError, r, "cuInit");
    if (r == CUDA_ERROR_NO_DEVICE) out.status = Status::Infra("no GPU: the CUDA driver reports no device");
  }
  return out;
}

const Loaded& Instance() {
  static Loaded* loaded = nullptr;
  static std::once_flag once;
  std::call_once(once, [] { loaded = new Loaded(Load()); });  // never freed: process lifetime
  return *loaded;
}

}  // namespace

Result<const CudaDriverApi*> CudaDriver() {
  const Loaded& l = Instance();
  if (!l.status.ok()) return l.status;
  return &l.api;
}

std::string CuResultName(CUresult r) {
  const Loaded& l = Instance();
  const char* name = nullptr;
  if (l.api.cuGetErrorName && l.api.cuGetErrorName(r, &name) == CUDA_SUCCESS && name) return name;
  return "CUDA_ERROR_" + std::to_string(static_cast<int>(r));
}

Status CuStatus(ErrorClass cls, CUresult r, const char* call) {
  const Loaded& l = Instance();
  std::string msg = std::string(call) + ": " + CuResultName(r);
  const char* desc = nullptr;
  if (l.api.cuGetErrorString && l.api.cuGetErrorString(r, &desc) == CUDA_SUCCESS && desc)
    msg += std::string(" (") + desc + ")";
  return Status(cls, msg);
}

}  // namespace assay

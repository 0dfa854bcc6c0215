#include "measure/blocking_kernel.h"

#include <utility>

#include "gpu/cuda_driver.h"

namespace assay {
namespace {
const CudaDriverApi& Cu() { return **CudaDriver(); }  // REQUIRES: CudaDriver().ok()
}  // namespace

Result<BlockingKernel> BlockingKernel::Create(CUfunction fn) {
  auto drv = CudaDriver();
  if (!drv.ok()) return drv.status();
  BlockingKernel b;
  b.fn_ = fn;
  void* p = nullptr;
  if (CUresult r = Cu().cuMemHostAlloc(&p, 2 * sizeof(int), CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE);
      r != CUDA_SUCCESS)
    return CuStatus(ErrorClass::kInfraError, r, "cuMemHostAlloc");
  b.host_ = static_cast<int*>(p);
  b.host_[0] = 1;  // released: nothing enqueued yet
  b.host_[1] = 0;
  if (CUresult r = Cu().cuMemHostGetDevicePointer(&b.device_, p, 0); r != CUDA_SUCCESS)
    return CuStatus(ErrorClass::kInfraError, r, "cuMemHostGetDevicePointer");
  return b;
}

BlockingKernel& BlockingKernel::operator=(BlockingKernel&& o) noexcept {
  if (this != &o) {
    if (host_) Cu().cuMemFreeHost(host_);
    fn_ = o.fn_;
    host_ = std::exchange(o.host_, nullptr);
    device_ = std::exchange(o.device_, 0);
  }
  return *this;
}

BlockingKernel::~BlockingKernel() {
  if (host_) Cu().cuMemFreeHost(host_);
}

Status BlockingKernel::Enqueue(CUstream stream, double timeout_ms) {
  __atomic_store_n(&host_[1], 0, __ATOMIC_SEQ_CST);
  __atomic_store_n(&host_[0], 0, __ATOMIC_SEQ_CST);
  CUdeviceptr flag = device_;
  CUdeviceptr timed_out = device_ + sizeof(int);
  unsigned long long timeout_ns = static_cast<unsigned long long>(timeout_ms * 1e6);
  void* args[] = {&flag, &timed_out, &timeout_ns};
  if (CUresult r = Cu().cuLaunchKernel(fn_, 1, 1, 1, 1, 1, 1, 0, stream, args, nullptr); r != CUDA_SUCCESS) {
    Release();
    return CuStatus(ErrorClass::kRuntimeError, r, "cuLaunchKernel(blocking kernel)");
  }
  return Status::Ok();
}

void BlockingKernel::Release() {
  if (host_) __atomic_store_n(&host_[0], 1, __ATOMIC_SEQ_CST);
}

bool BlockingKernel::TimedOut() const { return host_ && __atomic_load_n(&host_[1], __ATOMIC_SEQ_CST) != 0; }

}  // namespace assay

#include "gpu/cuda_handles.h"

namespace assay {
namespace {
const CudaDriverApi& Cu() { return **CudaDriver(); }  // REQUIRES: CudaDriver().ok()
}  // namespace

Result<PrimaryContext> PrimaryContext::Create(int ordinal) {
  auto drv = CudaDriver();
  if (!drv.ok()) return drv.status();
  PrimaryContext p;
  if (CUresult r = Cu().cuDeviceGet(&p.dev_, ordinal); r != CUDA_SUCCESS)
    return CuStatus(ErrorClass::kInfraError, r, "cuDeviceGet");
  if (CUresult r = Cu().cuDevicePrimaryCtxRetain(&p.ctx_, p.dev_); r != CUDA_SUCCESS)
    return CuStatus(ErrorClass::kInfraError, r, "cuDevicePrimaryCtxRetain");
  if (Status s = p.MakeCurrent(); !s.ok()) return s;
  return p;
}

PrimaryContext& PrimaryContext::operator=(PrimaryContext&& o) noexcept {
  if (this != &o) {
    if (ctx_) Cu().cuDevicePrimaryCtxRelease(dev_);
    dev_ = o.dev_;
    ctx_ = std::exchange(o.ctx_, nullptr);
  }
  return *this;
}

PrimaryContext::~PrimaryContext() {
  if (ctx_) Cu().cuDevicePrimaryCtxRelease(dev_);
}

Status PrimaryContext::MakeCurrent() const {
  if (CUresult r = Cu().cuCtxSetCurrent(ctx_); r != CUDA_SUCCESS)
    return CuStatus(ErrorClass::kInfraError, r, "cuCtxSetCurrent");
  return Status::Ok();
}

Result<DeviceBuffer> DeviceBuffer::Create(size_t bytes) {
  DeviceBuffer b;
  b.bytes_ = bytes;
  if (bytes == 0) return b;
  if (CUresult r = Cu().cuMemAlloc(&b.ptr_, bytes); r != CUDA_SUCCESS)
    return CuStatus(ErrorClass::kInfraError, r, "cuMemAlloc");
  return b;
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (ptr_) Cu().cuMemFree(ptr_);
    ptr_ = std::exchange(o.ptr_, 0);
    bytes_ = std::exchange(o.bytes_, 0);
  }
  return *this;
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_) Cu().cuMemFree(ptr_);
}

Result<PinnedBuffer> PinnedBuffer::Create(size_t bytes) {
  PinnedBuffer b;
  b.bytes_ = bytes;
  if (CUresult r = Cu().cuMemAllocHost(&b.ptr_, bytes); r != CUDA_SUCCESS)
    return CuStatus(ErrorClass::kInfraError, r, "cuMemAllocHost");
  return b;
}

PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& o) noexcept {
  if (this != &o) {
    if (ptr_) Cu().cuMemFreeHost(ptr_);
    ptr_ = std::exchange(o.ptr_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
  }
  return *this;
}

PinnedBuffer::~PinnedBuffer() {
  if (ptr_) Cu().cuMemFreeHost(ptr_);
}

Result<Stream> Stream::Create() {
  Stream s;
  if (CUresult r = Cu().cuStreamCreate(&s.s_, CU_STREAM_NON_BLOCKING); r != CUDA_SUCCESS)
    return CuStatus(ErrorClass::kInfraError, r, "cuStreamCreate");
  return s;
}

Stream& Stream::operator=(Stream&& o) noexcept {
  if (this != &o) {
    if (s_) Cu().cuStreamDestroy(s_);
    s_ = std::exchange(o.s_, nullptr);
  }
  return *this;
}

Stream::~Stream() {
  if (s_) Cu().cuStreamDestroy(s_);
}

Result<Event> Event::Create() {
  Event e;
  if (CUresult r = Cu().cuEventCreate(&e.e_, CU_EVENT_DEFAULT); r != CUDA_SUCCESS)
    return CuStatus(ErrorClass::kInfraError, r, "cuEventCreate");
  return e;
}

Event& Event::operator=(Event&& o) noexcept {
  if (this != &o) {
    if (e_) Cu().cuEventDestroy(e_);
    e_ = std::exchange(o.e_, nullptr);
  }
  return *this;
}

Event::~Event() {
  if (e_) Cu().cuEventDestroy(e_);
}

Result<Module> Module::Load(const std::string& image) {
  Module m;
  char error_log[8192] = {};
  CUjit_option opts[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* vals[] = {error_log, reinterpret_cast<void*>(sizeof(error_log))};
  CUresult r = Cu().cuModuleLoadDataEx(&m.m_, image.data(), 2, opts, vals);
  if (r != CUDA_SUCCESS) {
    Status s = CuStatus(ErrorClass::kLaunchError, r, "cuModuleLoadData");
    std::string msg = s.message();
    if (error_log[0]) msg += ": " + std::string(error_log);
    return Status::LaunchError(msg);
  }
  return m;
}

Module& Module::operator=(Module&& o) noexcept {
  if (this != &o) {
    if (m_) Cu().cuModuleUnload(m_);
    m_ = std::exchange(o.m_, nullptr);
  }
  return *this;
}

Module::~Module() {
  if (m_) Cu().cuModuleUnload(m_);
}

Result<CUfunction> Module::Function(const std::string& name) const {
  CUfunction f = nullptr;
  CUresult r = Cu().cuModuleGetFunction(&f, m_, name.c_str());
  if (r == CUDA_ERROR_NOT_FOUND) return Status::LaunchError("no kernel named '" + name + "' in the module");
  if (r != CUDA_SUCCESS) return CuStatus(ErrorClass::kLaunchError, r, "cuModuleGetFunction");
  return f;
}

}  // namespace assay

// Move-only owners of CUDA driver handles. Each owns exactly one handle and
// releases it exactly once; none can be copied. Errors in constructors are
// reported through the static Create() factories as Status values (class given
// by the caller's context: infra for our own allocations).
//
// Thread-safety: a handle object is not thread-safe; the driver calls are.
// REQUIRES: the owning context is current on the calling thread (ScopedContext).
#pragma once

#include <cuda.h>

#include <cstddef>
#include <string>
#include <utility>

#include "common/status.h"
#include "gpu/cuda_driver.h"

namespace assay {

// Retains a device's primary context and makes it current on this thread.
class PrimaryContext {
 public:
  static Result<PrimaryContext> Create(int ordinal);
  PrimaryContext(PrimaryContext&& o) noexcept { *this = std::move(o); }
  PrimaryContext& operator=(PrimaryContext&& o) noexcept;
  PrimaryContext(const PrimaryContext&) = delete;
  PrimaryContext& operator=(const PrimaryContext&) = delete;
  ~PrimaryContext();
  CUcontext get() const { return ctx_; }
  CUdevice device() const { return dev_; }
  // Makes the context current on the calling thread.
  Status MakeCurrent() const;

 private:
  PrimaryContext() = default;
  CUdevice dev_ = 0;
  CUcontext ctx_ = nullptr;
};

// A device allocation of `bytes` bytes.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  static Result<DeviceBuffer> Create(size_t bytes);
  DeviceBuffer(DeviceBuffer&& o) noexcept { *this = std::move(o); }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer();
  CUdeviceptr get() const { return ptr_; }
  size_t size() const { return bytes_; }

 private:
  CUdeviceptr ptr_ = 0;
  size_t bytes_ = 0;
};

// Page-locked host memory (for async copies and host-visible flags).
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  static Result<PinnedBuffer> Create(size_t bytes);
  PinnedBuffer(PinnedBuffer&& o) noexcept { *this = std::move(o); }
  PinnedBuffer& operator=(PinnedBuffer&& o) noexcept;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  ~PinnedBuffer();
  void* get() const { return ptr_; }
  size_t size() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

class Stream {
 public:
  Stream() = default;
  static Result<Stream> Create();  // non-blocking with respect to the legacy stream
  Stream(Stream&& o) noexcept { *this = std::move(o); }
  Stream& operator=(Stream&& o) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream();
  CUstream get() const { return s_; }

 private:
  CUstream s_ = nullptr;
};

class Event {
 public:
  Event() = default;
  static Result<Event> Create();  // timing-enabled
  Event(Event&& o) noexcept { *this = std::move(o); }
  Event& operator=(Event&& o) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  ~Event();
  CUevent get() const { return e_; }

 private:
  CUevent e_ = nullptr;
};

// A loaded module (cubin, PTX or fatbin image).
class Module {
 public:
  Module() = default;
  // Loads an image; a refused image is a launch_error carrying the JIT log.
  static Result<Module> Load(const std::string& image);
  Module(Module&& o) noexcept { *this = std::move(o); }
  Module& operator=(Module&& o) noexcept;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  ~Module();
  CUmodule get() const { return m_; }
  // launch_error "no kernel named X in the module" when absent.
  Result<CUfunction> Function(const std::string& name) const;

 private:
  CUmodule m_ = nullptr;
};

}  // namespace assay

// nvbench's trick for keeping host launch latency out of the samples: a
// one-thread kernel spins on a flag in host-mapped memory, the host queues a
// whole batch of [flush, start event, launch, stop event] behind it, then
// releases the flag. The GPU then runs the batch back to back, fed from a full
// queue, so no sample waits for the host to issue its launch.
//
// The kernel gives up after a timeout (so it can never hold the GPU forever,
// e.g. when the launch queue fills and the host blocks before releasing) and
// reports that: a batch whose blocking kernel timed out may have waited for
// host launches (KernelTimer counts them in TimingResult.blocking_timeouts).
//
// Thread-safety: one thread. Move-only: owns one host-mapped allocation.
#pragma once

#include <cuda.h>

#include <cstdint>

#include "common/status.h"

namespace assay {

class BlockingKernel {
 public:
  BlockingKernel() = default;
  // `fn` is assay_blocking_kernel (helper_kernels.h). infra_error on failure.
  static Result<BlockingKernel> Create(CUfunction fn);
  BlockingKernel(BlockingKernel&& o) noexcept { *this = std::move(o); }
  BlockingKernel& operator=(BlockingKernel&& o) noexcept;
  BlockingKernel(const BlockingKernel&) = delete;
  BlockingKernel& operator=(const BlockingKernel&) = delete;
  ~BlockingKernel();

  // Arms the flag and enqueues the kernel on `stream`; it spins until Release()
  // or `timeout_ms` (device time since it started). runtime_error on failure.
  Status Enqueue(CUstream stream, double timeout_ms);
  // Lets the enqueued kernel finish. Idempotent; safe without Enqueue.
  void Release();
  // After the stream has synchronised: whether the last Enqueue timed out.
  bool TimedOut() const;

 private:
  CUfunction fn_ = nullptr;
  int* host_ = nullptr;          // [0] flag, [1] timed_out; pinned, device-mapped
  CUdeviceptr device_ = 0;       // the device's address of host_
};

}  // namespace assay

// CUPTI Activity tracing of kernels inside the worker process: the GPU start
// and end of every kernel the timer's samples run (KernelTimer's "cupti"
// source, docs/measurement.md). This is the in-process twin of the injection
// library (src/cupti/injection.cc), which does the same for user programs.
//
// libcupti is dlopen'ed (cupti/cupti_loader.h), never linked: without it the
// timer falls back to CUDA events with a note. CUPTI's activity callbacks are
// process-wide, so there is one tracer per process, and it refuses to start in
// a process that runs under the injection library (CUDA_INJECTION64_PATH set),
// whose callbacks it would take over.
//
// Thread-safety: Get() is thread-safe. Enable, Disable and Collect are called
// by one thread at a time (the timer's); CUPTI hands buffers over on its own
// thread, guarded by an internal mutex. Records are process-wide: two timers
// measuring at once in one process would see each other's kernels (their
// matches fail and they fall back to events). A worker has one timer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"
#include "measure/launch_match.h"

namespace assay {

class CuptiTracer {
 public:
  // The process's tracer: loads libcupti and registers the buffer callbacks on
  // first use (tens of ms). kInfraError saying why when CUPTI cannot be used;
  // the same answer every time.
  static Result<CuptiTracer*> Get();

  // Starts / stops recording kernels (CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
  // which keeps kernels on different streams concurrent). Disable also drops
  // every record not collected yet.
  virtual Status Enable() = 0;
  virtual void Disable() = 0;

  // Now on the clock of the kernel records (cuptiGetTimestamp) [ns].
  virtual uint64_t Now() = 0;

  // Drops the records delivered so far (after flushing CUPTI's buffers).
  virtual void Discard() = 0;

  // Moves the records of kernels that started at or after `since_ns` (a Now()
  // taken before the work was queued) into *out; older records, which a late
  // buffer may still bring, are dropped. The caller has synchronised the work
  // whose records it wants: CUPTI is flushed (default flush) until at least
  // `want` such records not named in `exclude` arrived or about 20 ms passed,
  // then once forced. kInfraError when CUPTI dropped records (its buffers ran
  // out) or a flush failed.
  virtual Status Collect(uint64_t since_ns, size_t want, std::span<const std::string> exclude,
                         std::vector<KernelSpan>* out) = 0;

  // The libcupti file in use.
  virtual const std::string& library() const = 0;

 protected:
  ~CuptiTracer() = default;  // never destroyed: CUPTI may deliver buffers at exit
};

}  // namespace assay

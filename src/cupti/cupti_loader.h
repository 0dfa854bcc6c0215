// Finding and loading libcupti at run time, shared by the injection library
// (libassay_cupti.so, inside a user's program) and the worker's in-process
// kernel timing (measure/cupti_tracer.h). Nothing links libcupti: a missing or
// mismatched copy must cost the timing, never the process.
//
// Built into assay_cupti_log (position-independent, hidden symbols), so it may
// live inside other people's processes: no exceptions, no logging.
//
// Thread-safety: reentrant (dlopen is thread-safe).
#pragma once

#include <string>

namespace assay::cupti {

// dlopen()s libcupti.so.13, in this order:
//   1. $ASSAY_CUPTI_LIB when set (only that one);
//   2. a copy already loaded in the process (PyTorch ships one; two CUPTIs
//      in one process would fight over the driver);
//   3. `own_dir`/libcupti.so.13 (skipped when own_dir is empty);
//   4. the loader's search path (LD_LIBRARY_PATH, ld.so.cache);
//   5. /usr/local/cuda/lib64, then /usr/local/cuda/extras/CUPTI/lib64.
// Returns the handle (never closed), or null with *error saying what was
// tried and the loader's last message.
void* LoadCuptiLibrary(const std::string& own_dir, std::string* error) noexcept;

// Directory of the object (executable or library) that contains `address`,
// or "" when unknown.
std::string DirectoryOf(const void* address) noexcept;

}  // namespace assay::cupti

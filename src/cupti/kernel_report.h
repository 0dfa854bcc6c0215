// Turns the file that libassay_cupti.so writes (format v1, docs/cupti.md) into
// the kernel section of a cuda_program result:
//
//   program.kernels            per-launch list, by start time (capped: kernels_truncated)
//   program.kernel_totals      per kernel name: launches, total/mean/min/max/median [ms]
//   program.gpu_time_ms        sum of kernel durations
//   program.gpu_busy_ms        union of kernel intervals (overlap counted once)
//   ... and the bookkeeping fields listed in docs/cupti.md.
//
// The file is written inside the user's job directory, so it is untrusted
// input: sizes are capped, every field is type-checked, and a bad file is an
// error value, never a crash.
//
// Thread-safety: reentrant; no shared state.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstddef>
#include <filesystem>
#include <string_view>

#include "common/status.h"

namespace assay {

struct KernelReportOptions {
  // Launch entries kept in "kernels"; totals always cover every record.
  size_t max_kernels = 10000;
  // Files larger than this are refused [bytes]. The injection library keeps
  // at most 1,000,000 kernel records (~250 bytes each in the file).
  size_t max_file_bytes = size_t{1} << 30;
};

// Parses `path`. A missing file is not an error: it means the program never
// initialised CUDA (or died before CUDA started), and the result is
// EmptyKernelReport(). Errors (all kInfraError, with a message for the user):
// unreadable or oversized file, malformed JSON or fields, wrong "v", and a
// document in which the library reported that CUPTI could not start.
Result<nlohmann::json> KernelReportFromFile(const std::filesystem::path& path, const KernelReportOptions& options = {});

// The same, for the document's text (tests, and callers holding it in memory).
Result<nlohmann::json> KernelReportFromText(std::string_view text, const KernelReportOptions& options = {});

// The report of a process that recorded nothing: empty lists, zero times,
// "kernels_complete": true.
nlohmann::json EmptyKernelReport();

// What the cuda_program runner calls: reads `path` and merges the report's
// keys into *program (an object). On error the keys of EmptyKernelReport()
// are merged instead, plus "kernels_error": "<message>"; the job's own status
// must not change because profiling failed.
void AttachKernelReport(const std::filesystem::path& path, nlohmann::json* program,
                        const KernelReportOptions& options = {});

}  // namespace assay

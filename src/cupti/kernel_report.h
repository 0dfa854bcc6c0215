// Turns the file that libassay_cupti.so writes (format v1, docs/cupti.md) into
// the kernel section of a cuda_program result:
//
//   program.kernels            per-launch list, by start time (capped: kernels_truncated)
//   program.kernel_totals      per kernel name: launches, total/mean/min/max/median [ms]
//   program.gpu_time_ms        sum of kernel durations
//   program.gpu_busy_ms        union of kernel intervals (overlap counted once)
//   ... and the bookkeeping fields listed in docs/cupti.md.
// It also sums the kernels of one phase between two AssayCuptiMark marks
// (SummarizePhase), for the Python harness's "two clocks".
//
// The file is written inside the user's job directory, so it is untrusted
// input: sizes are capped, every field is type-checked, and a bad file is an
// error value, never a crash.
//
// Thread-safety: reentrant; no shared state.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

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

// ---- Phases between marks --------------------------------------------------
// A process under the injection marks the start and end of a phase by calling
// the library's `extern "C" void AssayCuptiMark(const char* label)` (e.g. from
// Python through ctypes, after torch.cuda.synchronize()). The file then holds
// "marks":[{"label":..,"ts_ns":..}] on the clock of the kernel records, and
// SummarizePhase adds up the kernels that started inside the phase.

// One kernel name's share of a phase.
struct PhaseKernelTotal {
  std::string name;       // demangled, as in kernel_totals
  uint64_t launches = 0;
  double total_ms = 0;    // sum of durations
};

struct PhaseSummary {
  bool begin_found = false;  // a mark with begin_label exists
  bool end_found = false;    // a mark with end_label exists at or after the begin mark
  uint64_t begin_ns = 0;     // the marks' timestamps (CUPTI clock), 0 when not found
  uint64_t end_ns = 0;
  double span_ms = 0;        // end - begin; 0 unless both were found
  // Kernels whose start lies in [begin_ns, end_ns], minus the excluded names.
  // All zero unless both marks were found.
  uint64_t kernels = 0;
  uint64_t excluded_kernels = 0;  // in the phase but named in exclude_names
  double kernel_sum_ms = 0;       // sum of their durations
  double kernel_busy_ms = 0;      // length of the union of their intervals (overlap counted once)
  std::vector<PhaseKernelTotal> top;  // per name, most total time first (ties by name), at most top_n
  // Bookkeeping copied from the file: when complete is false or records were
  // dropped/truncated, the sums may undercount.
  bool complete = false;
  uint64_t records_dropped = 0;
  bool records_truncated = false;
  uint64_t marks_dropped = 0;     // marks the library could not record (too many, or CUPTI not up)
};

// Summarises the phase between the first mark labelled `begin_label` and the
// first mark labelled `end_label` at or after it (labels compare exactly, after
// the library's sanitising: at most 64 bytes, printable ASCII). A kernel is in
// the phase when begin.ts <= start_ns <= end.ts; it is excluded when its
// demangled or mangled name equals one of `exclude_names` (e.g.
// "assay_l2_flush"). Missing marks are not an error: begin_found/end_found say
// so and the sums stay 0.
// Errors (kInfraError): a missing file (the injection never ran), and every
// error of KernelReportFromFile (unreadable, malformed, library error document).
Result<PhaseSummary> SummarizePhase(const std::filesystem::path& file, std::string_view begin_label,
                                    std::string_view end_label, const std::vector<std::string>& exclude_names,
                                    size_t top_n = 10);
// The same for the document's text.
Result<PhaseSummary> SummarizePhaseText(std::string_view text, std::string_view begin_label,
                                        std::string_view end_label, const std::vector<std::string>& exclude_names,
                                        size_t top_n = 10);

// {"begin_found":..,"end_found":..,"span_ms":..,"kernels":..,"excluded_kernels":..,
//  "kernel_sum_ms":..,"kernel_busy_ms":..,"top":[{"name","launches","total_ms"}],
//  "complete":..,"records_dropped":..,"records_truncated":..,"marks_dropped":..}
nlohmann::json ToJson(const PhaseSummary& s);

}  // namespace assay

// From what the Python harness left behind to the job's outcome: the harness
// process's exit, its `result.json` (docs/python-kinds.md, *contract*) and the
// CUPTI phases of its timed samples (the second clock) become the job's status
// and the result sections `python`, `correctness`, `timing`, `kernelbench`,
// `warnings`, plus the output .npy blobs.
//
// Everything read here was written by a process that also ran the user's code,
// so it is untrusted input: sizes and nesting are capped, every field is
// type-checked, output files must be regular files inside DIR/out, and nothing
// throws.
//
// Thread-safety: pure functions (MapHarnessRun reads the output files).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cupti/kernel_report.h"
#include "proc/subprocess.h"
#include "worker/worker_client.h"

namespace assay {

inline constexpr size_t kMaxHarnessResultBytes = size_t{8} << 20;  // result.json [bytes]
// The harness's own kernels inside a timed phase, left out of the CUPTI sums:
// the cold-mode L2 flush and the kernel that holds the queue while a batch of
// samples is enqueued.
inline constexpr const char* kL2FlushKernelName = "assay_l2_flush";
inline constexpr const char* kBlockingKernelName = "assay_blocking_kernel";
// Disagreement rule: CUPTI's kernel busy time per sample above
// event median * kDisagreementRatio + kDisagreementSlackMs means work the events did not see.
inline constexpr double kDisagreementRatio = 1.10;
inline constexpr double kDisagreementSlackMs = 0.005;

// The CUPTI record of one timed phase (the kernels between its two marks).
struct PhaseClock {
  PhaseSummary summary;
  int64_t samples = 0;  // timed samples in the phase (from the harness's timing section)
};

// Everything one harness run left behind.
struct HarnessRun {
  ProcessResult process;
  nlohmann::json result;                   // result.json parsed by ParseHarnessResult (null: none usable)
  std::string result_error;                // why `result` is null
  std::filesystem::path dir;               // the job directory; outputs must lie in dir/out
  int64_t timeout_ms = 0;
  std::vector<std::string> outputs;        // spec.outputs: the only names returned as blobs
  // CUPTI summaries of the candidate's and the reference's timed phases, when
  // the injection ran and the marks were found (see MarksOf).
  std::optional<PhaseClock> candidate_clock;
  std::optional<PhaseClock> reference_clock;
  std::string cupti_error;                 // why there is no CUPTI record (reported, never fatal)
  // The user's code names a kernel like one of the harness's helpers, which
  // are left out of the CUPTI sums: the clocks are not compared.
  bool helper_name_in_source = false;
};

// Whether `source` mentions kL2FlushKernelName or kBlockingKernelName.
bool MentionsHelperKernel(std::string_view source);

// Reads DIR/a/b/... (the components, each a plain name) without following a
// symbolic link below DIR and only if the last one is a regular file: the job
// could have replaced any of them by a link to someone else's data. NotFound
// when absent; Rejected when it is a link, not a regular file, or larger than
// max_bytes.
Result<std::string> ReadJobFile(const std::filesystem::path& dir, const std::vector<std::string>& components,
                                size_t max_bytes);

// The mark labels of one timing section ({"marks": [begin, end]}), or the
// defaults ("cand.begin"/"cand.end", "ref.begin"/"ref.end").
std::pair<std::string, std::string> MarksOf(const nlohmann::json& timing_section, bool reference);

// The harness's result.json, parsed: null when absent, too large, too deep or
// not a JSON object (then *error says why).
nlohmann::json ParseHarnessResult(const std::optional<std::string>& text, std::string* error);

// The job's outcome: status, result sections and output blobs.
WorkOutcome MapHarnessRun(const HarnessRun& run);

// Adds the second clock to a flattened timing section (`timing.cupti`) and
// applies the disagreement rule: when the kernels' busy time per sample beats
// the event median by more than the rule allows, `timing.disagreement` is set,
// `timing.median_ms` becomes the busy time (`timing.source: "cupti"`, the
// event figure kept as `timing.event_median_ms`), a warning is added, and a
// kernelbench section's runtime and speedup follow. Returns true on disagreement.
// The candidate's timed calls must launch GPU work: fewer than
// kMinKernelsPerTimedCall kernels per call (by CUPTI, between the phase's marks)
// means the calls returned results computed earlier. wrong_result then; OK when
// the record is missing, incomplete or lossy (nothing to conclude). Not applied
// when the reference's timed calls launch no kernels either (a pure view op).
inline constexpr double kMinKernelsPerTimedCall = 0.5;
Status CheckTimedCallsDidWork(const PhaseClock& clock);

bool ApplyTwoClocks(const PhaseClock& clock, nlohmann::json* timing, nlohmann::json* warnings,
                    nlohmann::json* kernelbench, bool helper_name_in_source = false);

// {kernel_sum_ms, kernel_busy_ms, kernels_per_call, names: [top 5], ...} per sample.
nlohmann::json CuptiTimingJson(const PhaseClock& clock);

}  // namespace assay

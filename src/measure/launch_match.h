// Turning CUPTI kernel records into per-sample GPU times (KernelTimer's
// "cupti" source, docs/measurement.md). Pure arithmetic on plain records, no
// CUDA or CUPTI here, so it is tested on machines without a GPU
// (launch_match_test.cc).
//
// Thread-safety: all functions are pure and reentrant.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"

namespace assay {

// One kernel execution as CUPTI reports it. Times are GPU timestamps [ns].
struct KernelSpan {
  std::string name;          // as CUPTI reports it (mangled for C++ kernels)
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint32_t correlation = 0;  // CUPTI correlation id of the launching call (diagnostics)
};

// The kernels one run of a launch enqueues, as a sorted list of names without
// the `exclude`d ones (the timer's own helper kernels). Sorted, because the
// kernels of one graph replay may run in any order on parallel branches.
std::vector<std::string> LaunchSignature(std::span<const KernelSpan> records, std::span<const std::string> exclude);

// A CUPTI sample may exceed the event sample around it by at most this much
// (timer steps and clock normalisation) [ms] ...
inline constexpr double kCuptiOverEventSlackMs = 0.001;
// ... plus this fraction of the event sample.
inline constexpr double kCuptiOverEventSlack = 0.01;

// Splits the kernel records of one batch of `event_ms.size()` samples into
// per-sample GPU times [ms]:
//  - records named in `exclude` are dropped (the blocking kernel);
//  - the rest, ordered by start, must number samples x signature.size();
//  - consecutive groups of signature.size() records are the samples in order
//    (one stream: sample i+1 starts after sample i ended); each group's sorted
//    names must equal `signature` and start no earlier than the previous
//    group's end;
//  - a sample's time is its group's last end minus its first start (for one
//    kernel: its duration);
//  - cross-check: the kernels ran between the sample's events, so a CUPTI time
//    above event x (1 + kCuptiOverEventSlack) + kCuptiOverEventSlackMs means a
//    wrong match; more than a tenth of the samples like that is an error.
// Errors (kInfraError) say what did not match; the caller falls back to events.
Result<std::vector<double>> MatchBatch(std::vector<KernelSpan> records, std::span<const std::string> signature,
                                       std::span<const std::string> exclude, std::span<const double> event_ms);

// True when a CUPTI median is well below what the events around the same
// samples saw minus their own overhead: by more than 1 us and by more than a
// tenth of the event median [all ms]. Normally the CUPTI median is the event
// median minus the overhead plus an empty kernel's own GPU time (a little
// more, never less), so this means GPU work on the stream that the kernel
// records do not cover.
bool ClocksDisagree(double cupti_median_ms, double event_median_ms, double event_overhead_ms);

}  // namespace assay

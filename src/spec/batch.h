// Batches (POST /v1/batches, `assay batch`; docs/api.md, "Batches"): one
// template job spec and many candidates, each replacing the template's code,
// expanded into one job spec per candidate; and the per-candidate outcome and
// summary that GET /v1/batches/{id} reports.
//
//   {"name": "relu sweep",                       (optional label)
//    "template": {<job spec without its code>},
//    "candidates": [{"name": "v1", "source": {"text": "..."}}, ...]}
//
// A candidate's `source` becomes the template's `candidate` for kind
// kernelbench and its `source` for every other kind.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "spec/limits.h"

namespace assay {

struct BatchCandidate {
  std::string name;      // unique within the batch; the job's name
  nlohmann::json spec;   // the template with this candidate's code (not validated yet)
};

struct BatchPlan {
  std::string name;                        // the batch's label; may be empty
  std::string code_key;                    // "candidate" (kernelbench) or "source"
  std::vector<BatchCandidate> candidates;  // in request order
};

// Checks the request's shape (fields, counts, names) and expands it. Each
// candidate's spec is left for ParseJobSpec; map its errors with
// BatchCandidateError. Rejected names the field ("candidates[3].name",
// "template.source", "candidates").
Result<BatchPlan> ExpandBatch(const nlohmann::json& body, const SpecLimits& limits = {});

// A failed validation of candidate `index`'s spec, with the field moved to
// where it is in the batch request: the code to "candidates[i].source...",
// everything else to "template...", the document itself to "candidates[i]".
Status BatchCandidateError(const Status& status, const BatchPlan& plan, size_t index);

// One candidate's line of GET /v1/batches/{id}, from its name and a job
// document {id, state, error, result}:
//   {name, job_id, state, verdict, correct, runtime_ms, speedup, error}
// verdict: "correct" (done and checked), "done" (done, nothing to check),
// the error class of a failed job, "timeout", "cancelled", or the state of
// an unfinished one. runtime_ms: result.kernelbench.runtime, else
// result.timing.median_ms. correct: null when nothing was checked.
nlohmann::json BatchEntry(const std::string& name, const nlohmann::json& job);

// {total, finished, all_finished, by_state: {state: n}, correct,
//  fastest_correct: {name, job_id, runtime_ms, speedup} | null} over entries.
nlohmann::json BatchSummary(const nlohmann::json& entries);

}  // namespace assay

// Seed 002 ("CUDA Eval Server V2") compatibility: its request body mapped onto
// an Assay job spec, and an Assay job document mapped back onto its answer
// (docs/api.md, "POST /v1/eval"; docs/python-kinds.md, "Seed 002").
//
// Two request forms are accepted:
//   {"ref_kernel": {"source_code": str, "kernel_type": "torch"|"torch_cuda"|"triton"|"cuda",
//                   "io": {...}?, "metadata": {...}?},
//    "custom_kernel": {...same...}, "num_trials": int?, "timeout": int?}
//   {"ref_code": str, "custom_code": str, "num_trials": int?, "timeout": int?}   (legacy:
//    the reference is torch, the candidate torch_cuda)
// Both map to an Assay `kernelbench` job when the reference is a KernelBench
// problem (top-level `class Model` and `def get_inputs`) and the candidate
// defines `ModelNew`; anything else is Rejected with the seed field to blame
// and where Assay takes that code instead.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "spec/limits.h"

namespace assay {

struct Seed002Mapping {
  // An Assay job spec (kind kernelbench). ParseJobSpecJson still validates it;
  // map its errors back with Seed002Field.
  nlohmann::json spec;
  // Seed fields that were accepted but mean nothing here ("ref_kernel.io is
  // ignored: ..."). Returned to the client in the answer's `warnings`.
  std::vector<std::string> warnings;
  bool legacy = false;  // the ref_code/custom_code form
};

// Defaults of the seed's request model.
inline constexpr int kSeed002DefaultNumTrials = 100;
inline constexpr int kSeed002DefaultTimeoutS = 120;

// True when `body` is an object with one of the seed's request fields
// (ref_kernel, custom_kernel, ref_code, custom_code).
bool IsSeed002Request(const nlohmann::json& body);

// Maps a parsed request. Rejected(message, field) names the seed's field
// ("custom_kernel.kernel_type", "timeout", "ref_code"); "" for the document.
Result<Seed002Mapping> MapSeed002Request(const nlohmann::json& body, const SpecLimits& limits = {});
// Same from text: size and depth limits as for a job spec, malformed JSON rejected.
Result<Seed002Mapping> ParseSeed002Request(std::string_view text, const SpecLimits& limits = {});

// The request field that produced `spec_field` of the mapped spec
// ("problem.text" -> "ref_kernel.source_code"; "timeout_s" -> "timeout").
// Fields with no seed counterpart map to "".
std::string Seed002Field(std::string_view spec_field, bool legacy);

// Whether Python `source` binds `name` at the top level: a line starting (in
// column 0) with `class NAME`, `def NAME`, `async def NAME` or `NAME =`.
bool DefinesPythonName(std::string_view source, std::string_view name);
// A KernelBench problem: defines `Model` and `get_inputs` at the top level.
bool IsKernelBenchProblem(std::string_view source);

// The answer to a seed-002 request, from the job document of GET /v1/jobs/{id}
// (JobService::JobJson): seed fields at the top level (job_id, status,
// compiled, correctness, runtime, ref_runtime, speedup, runtime_stats,
// ref_runtime_stats, metadata, kernel_exec_result) from result.kernelbench, plus Assay's own:
// state, queue_position, error, warnings, and the whole result document
// under `result`. status: "success" (done), "failed" (any other end),
// "pending" (not finished).
nlohmann::json Seed002Response(const nlohmann::json& job, const std::vector<std::string>& warnings = {});

}  // namespace assay

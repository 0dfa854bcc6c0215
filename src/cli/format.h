// Human renderings of the API's JSON documents (results, jobs, job lists,
// GPUs). Generic by design: a section the formatter does not know is still
// shown as key/value lines, so a newer server never loses information on an
// older CLI. Programs should use --json instead of parsing this text.
// Thread-safety: pure functions.
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

namespace assay::cli {

// A result document (docs/result-schema.md): header, error, compile resources
// table and log, program exit/stdout/stderr, correctness, timing, and any
// other non-null section.
std::string FormatResult(const nlohmann::json& result);

// One job document (GET /v1/jobs/{id}): id, kind, state, queue position,
// attempts, times, error.
std::string FormatJob(const nlohmann::json& job);

// {jobs: [...], next} as a table; "No jobs." when empty.
std::string FormatJobList(const nlohmann::json& list);

// A GPU inventory ({gpus: [...], driver_version, reason}) as a table, or
// "No GPU found: <reason>" when it lists none. Used for local and server lists.
std::string FormatGpus(const nlohmann::json& inventory);

// The one-line progress shown while waiting: "j_ab12  queued (#3 in queue)  12.4 s".
std::string FormatProgress(const nlohmann::json& job, double elapsed_s);

// A batch document (GET /v1/batches/{id}): one row per candidate (candidate,
// verdict, runtime, speedup, job) and the summary (correct count, fastest
// correct candidate).
std::string FormatBatch(const nlohmann::json& batch);
// "b_ab12  7/40 finished (3 running, 30 queued)  12.4 s"
std::string FormatBatchProgress(const nlohmann::json& batch, double elapsed_s);

// A seed-002 answer (POST/GET /v1/eval): status, compiled, correctness,
// runtime, ref_runtime, speedup, error and warnings.
std::string FormatEval(const nlohmann::json& eval);

}  // namespace assay::cli

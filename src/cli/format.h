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

}  // namespace assay::cli

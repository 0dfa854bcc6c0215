// The result document of a job (docs/result-schema.md): one versioned JSON
// object per job, built up by the stages that run it (compile, program,
// correctness, timing, ...). These helpers give every producer the same
// skeleton and the same error shape.
// Thread-safety: pure functions on values the caller owns.
#pragma once

#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "spec/job_state.h"

namespace assay {

inline constexpr int kResultSchemaVersion = 1;

// {schema_version, job_id, kind, state: "queued", error: null, timestamps: {},
//  compile: null, program: null, correctness: null, timing: null,
//  telemetry: null, gpu: null, outputs: {}}
nlohmann::json MakeResultSkeleton(std::string_view job_id, JobKind kind);

// Sets result["error"] = {class, message, field (only when non-empty), detail}.
// `detail` is free-form per class (e.g. the CUDA error name, the first
// mismatches); null when there is none. An OK status clears the error.
void SetError(nlohmann::json& result, const Status& status,
              nlohmann::json detail = nullptr);

// Sets result["state"] and records the time of entering it in
// result["timestamps"][state] (RFC 3339 UTC, e.g. "2026-11-21T10:00:00.123Z").
void SetState(nlohmann::json& result, JobState state, int64_t unix_ms);

}  // namespace assay

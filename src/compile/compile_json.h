// The wire format of the compile path: CompileRequest on the internal-compile
// child's stdin, CompileOutput on its stdout and in the cache's meta.json.
// Both objects carry "v": 1. Bump rules: adding a field keeps v; renaming,
// removing or changing the meaning of one bumps it (and the cache format
// version in compile_cache.h, so old entries are never misread).
//
// Thread-safety: pure functions.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include "common/status.h"
#include "compile/compiler.h"

namespace assay {

inline constexpr int kCompileJsonVersion = 1;

nlohmann::json CompileRequestToJson(const CompileRequest& request);
// Rejected (naming the field) for a wrong version, a missing source or a wrong type.
Result<CompileRequest> CompileRequestFromJson(const nlohmann::json& j);

nlohmann::json ResourceUsageToJson(const ResourceUsage& usage);
nlohmann::json CompileOutputToJson(const CompileOutput& output);
// Rejected for a wrong version or shape; unknown fields are ignored.
Result<CompileOutput> CompileOutputFromJson(const nlohmann::json& j);

// "cubin" | "executable"
const char* CompileOutputKindName(CompileOutputKind kind);

}  // namespace assay

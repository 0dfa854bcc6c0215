// A .cu file may carry its job spec (everything but the source) in a comment
// header, so `assay run kernel.cu` needs no flags (docs/job-spec.md,
// "Contract header"). Two forms, one header per file:
//
//   /* assay: { "kind": "cuda", "entry": "add", ... } */      (may span lines)
//
//   // assay: { "kind": "cuda", "entry": "add",
//   // assay:   "launch": { ... } }                           (contiguous lines,
//                                                              fragments joined)
// The header is recognised only where its comment opens a line (after
// optional whitespace). Its body is plain JSON and must be an object.
// Thread-safety: pure functions.
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace assay {

// The header's JSON object; an empty object when the file has none. Errors
// are Rejected and name the source line ("assay header, line 4: ...").
Result<nlohmann::json> ExtractContractHeader(std::string_view source);

// Whether the source defines main(): such a file with no header is a cuda_program.
bool HasMainFunction(std::string_view source);

// A whole spec document for a source file: the header, plus
// source {text, filename}, plus the default kind: with a header and no kind,
// "cuda"; with no header and a main(), "cuda_program"; otherwise no kind
// (ParseJobSpec then asks for one). Rejected if the header carries "source".
Result<nlohmann::json> SpecFromSourceFile(std::string_view source, std::string_view filename);

}  // namespace assay

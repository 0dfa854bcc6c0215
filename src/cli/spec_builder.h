// Builds the job spec `assay run` / `assay submit` send, from a source file
// (its contract header, or main() detection), a spec file, and flags.
// Thread-safety: pure functions (reads the named files).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/status.h"

namespace assay::cli {

struct SpecOptions {
  std::string file;               // source file (.cu, .py ...); may be empty with spec_file
  std::string spec_file;          // a whole job spec (JSON); `file` then fills its source if absent
  std::string kind;               // overrides the kind ("cuda_program", "triton", ...)
  bool compile_only = false;      // kind "compile": compile and report resources, run nothing
  std::string arch;               // compile.arch, e.g. "sm_90"
  std::string compiler;           // compile.compiler: "nvrtc" | "nvcc"
  std::vector<std::string> flags; // appended to compile.flags
  std::string name;               // job label
  double timeout_s = 0;           // > 0: overrides timeout_s
};

// The spec document; Rejected (with the field) when the kind cannot be told
// or a file cannot be read or parsed. The server validates everything else.
Result<nlohmann::json> BuildSpec(const SpecOptions& options);

}  // namespace assay::cli

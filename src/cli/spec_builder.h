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
                                  // (kernelbench: the problem)
  std::string spec_file;          // a whole job spec (JSON); `file` then fills its source if absent
  std::string kind;               // overrides the kind ("cuda_program", "triton", ...)
  bool compile_only = false;      // kind "compile": compile and report resources, run nothing
  std::string arch;               // compile.arch, e.g. "sm_90"
  std::string compiler;           // compile.compiler: "nvrtc" | "nvcc"
  std::vector<std::string> flags; // appended to compile.flags
  std::string name;               // job label
  double timeout_s = 0;           // > 0: overrides timeout_s
  std::string candidate;          // --candidate: a KernelBench candidate (ModelNew); makes a kernelbench job
  std::string reference;          // --reference: a Python reference kernel (torch, torch_cuda, triton jobs)
  std::string reference_kind;     // its kind; default "torch"
  int num_trials = 0;             // > 0: kernelbench num_trials
};

// The spec document; Rejected (with the field) when the kind cannot be told
// or a file cannot be read or parsed. The server validates everything else.
// A .py FILE is never a cuda_program: with --candidate it is a KernelBench
// problem (it must define Model and get_inputs), otherwise --kind (or --spec)
// says what it is.
Result<nlohmann::json> BuildSpec(const SpecOptions& options);

// `assay batch`: the POST /v1/batches body.
struct BatchRequestOptions {
  std::vector<std::string> files;  // without spec_file: problem.py then candidates; with it: candidates
  std::string spec_file;           // the template (a job spec without its code)
  std::string name;                // the batch's label
  double timeout_s = 0;            // > 0: the template's timeout_s
  int num_trials = 0;              // > 0: the template's num_trials (kernelbench)
};
// Candidates are named after their file (the path as given when two files
// share a name). Rejected when a file cannot be read, the first file is not a
// KernelBench problem (without a template), or there is no candidate.
Result<nlohmann::json> BuildBatchRequest(const BatchRequestOptions& options);

// `assay eval`: a seed-002 request body (docs/api.md, POST /v1/eval).
struct EvalRequestOptions {
  std::string ref;                   // reference source (a KernelBench problem)
  std::string custom;                // candidate source (ModelNew)
  std::string ref_type = "torch";    // kernel_type of each
  std::string custom_type = "torch_cuda";
  int num_trials = 0;                // > 0: num_trials
  int timeout_s = 0;                 // > 0: timeout
  bool legacy = false;               // the legacy {ref_code, custom_code} form
};
Result<nlohmann::json> BuildEvalRequest(const EvalRequestOptions& options);

// A file name the server accepts as source.filename: [A-Za-z0-9._-], not
// starting with '.'; other characters become '_'.
std::string SafeFilename(const std::string& path);

}  // namespace assay::cli

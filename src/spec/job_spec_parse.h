// Internal to spec/: the pieces of ParseJobSpec, one per part of the spec.
// Each reads one JSON value at `path` and fails with Rejected(message, path...).
#pragma once

#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "spec/job_spec.h"
#include "spec/json_reader.h"
#include "spec/limits.h"

namespace assay::spec_internal {

// Integer scalar args (the variables of expressions), for checks and evaluation.
using Vars = std::map<std::string, int64_t>;

// Kind groups (docs/job-spec.md, "Which fields apply to which kind").
bool IsModuleKind(JobKind k);   // cuda cubin ptx fatbin: entry + args + launch
bool HasArgs(JobKind k);        // module kinds, triton, torch, torch_cuda
bool HasCompile(JobKind k);     // compile cuda cuda_program
bool IsReferenceKind(JobKind k);

Status ParseSource(const nlohmann::json& v, const std::string& path, JobKind kind,
                   std::string_view default_filename, const SpecLimits& limits,
                   SourceSpec* out);
// The kernel fields of `r` (the top level or a reference): source, compile,
// entry, launch. Launch expressions are checked against `vars`.
Status ParseKernel(const ObjectReader& r, JobKind kind, const Vars& vars,
                   const SpecLimits& limits, KernelSpec* out);

// args: two passes, so shapes may name scalars declared after them.
Status ParseArgs(const nlohmann::json& v, const std::string& path, const SpecLimits& limits,
                 std::vector<ArgSpec>* out);
Vars IntegerScalars(const std::vector<ArgSpec>& args);
// Checks an integer-or-expression value and evaluates it.
Status ParseIntOrExpr(const nlohmann::json& v, const std::string& path, const Vars& vars,
                      IntOrExpr* out, int64_t* value);
Status ParseBlobRef(const nlohmann::json& v, const std::string& path, std::string_view hash_key,
                    BlobRef* out);

Status ParseCorrectness(const nlohmann::json& v, const std::string& path,
                        const SpecLimits& limits, CorrectnessSpec* out);
Status ParseTiming(const nlohmann::json& v, const std::string& path, const SpecLimits& limits,
                   TimingSpec* out);
Status ParseProfile(const nlohmann::json& v, const std::string& path, const SpecLimits& limits,
                    ProfileSpec* out);
Status ParseProgram(const nlohmann::json& v, const std::string& path, const SpecLimits& limits,
                    ProgramSpec* out);

// JSON of the parts, shared by ToJson for the job and its reference.
nlohmann::json IntOrExprJson(const IntOrExpr& v);
nlohmann::json KernelJson(const KernelSpec& k);
nlohmann::json BlobRefJson(const BlobRef& b, std::string_view hash_key);

}  // namespace assay::spec_internal

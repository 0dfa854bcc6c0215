// The job spec: what a client sends to run one job (docs/job-spec.md).
// A versioned JSON document (`schema_version: 1`) parsed into typed structs
// and validated completely before the job is stored: a spec that parses is
// runnable as far as the spec can tell (kind support and GPU availability are
// checked separately by CheckSupported in spec/capabilities.h).
//
// ToJson gives the normalized form: every default filled in, only the fields
// that apply to the kind. ParseJobSpec(ToJson(s).dump()) == s.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/status.h"
#include "spec/job_state.h"
#include "spec/limits.h"

namespace assay {

inline constexpr int kJobSpecSchemaVersion = 1;

enum class DType { kF64, kF32, kF16, kBF16, kI64, kI32, kI16, kI8, kU8, kBool };
std::string_view DTypeName(DType t);                    // "f32"
std::optional<DType> DTypeFromName(std::string_view name);
int DTypeSize(DType t);                                 // [bytes]; bool is 1
bool IsFloatDType(DType t);                             // f64 f32 f16 bf16

enum class ArgRole { kIn, kOut, kInOut, kScalar };
std::string_view ArgRoleName(ArgRole r);                // "inout"

// A size: a constant, or an expression over integer scalar args (spec/expr.h).
using IntOrExpr = std::variant<int64_t, std::string>;

// Where a kernel's code comes from. Exactly one of: inline text, base64 bytes
// (decoded into `data`), or a blob already uploaded (its SHA-256).
struct SourceSpec {
  enum class Form { kText, kBase64, kBlob };
  Form form = Form::kText;
  std::string data;      // kText: the text; kBase64: the decoded bytes
  std::string blob;      // kBlob: lower-case hex SHA-256
  std::string filename;  // shown in diagnostics; default from the kind ("kernel.cu")
  bool operator==(const SourceSpec&) const = default;
};

struct CompileSpec {
  std::string compiler = "nvrtc";   // "nvrtc" | "nvcc"; cuda_program: always "nvcc"
  std::string arch;                 // "sm_90", "sm_90a"; empty: the GPU's (or the server default)
  std::vector<std::string> flags;   // allow-listed (docs/job-spec.md, "Compiler flags")
  bool ptx = false;                 // return PTX text
  bool sass = false;                // return SASS text
  bool operator==(const CompileSpec&) const = default;
};

struct LaunchSpec {
  IntOrExpr grid[3] = {int64_t{1}, int64_t{1}, int64_t{1}};
  IntOrExpr block[3] = {int64_t{1}, int64_t{1}, int64_t{1}};
  IntOrExpr shared_mem_bytes = int64_t{0};  // dynamic shared memory [bytes]
  bool operator==(const LaunchSpec&) const = default;
};

// Uploaded tensor data: a blob (content hash) in one of three formats.
struct BlobRef {
  std::string hash;            // lower-case hex SHA-256
  std::string format = "npy";  // "npy" | "safetensors" | "raw" (little-endian, C order)
  std::string tensor;          // safetensors only: which tensor; empty = the only one
  bool operator==(const BlobRef&) const = default;
};

// How an input is made: generated on the device from the trial's seed, or uploaded.
struct InitSpec {
  enum class Kind { kUniform, kNormal, kInt, kConst, kBlob };
  Kind kind = Kind::kUniform;
  double a = 0;  // uniform: low;  normal: mean; int: low;  const: value
  double b = 0;  // uniform: high; normal: std;  int: high
  BlobRef blob;  // kBlob
  bool operator==(const InitSpec&) const = default;
};
std::string_view InitKindName(InitSpec::Kind k);

struct Tolerance {
  double atol = 0;
  double rtol = 0;
  bool operator==(const Tolerance&) const = default;
};

struct ArgSpec {
  std::string name;                     // C identifier, unique
  ArgRole role = ArgRole::kIn;
  DType dtype = DType::kF32;
  std::vector<IntOrExpr> shape;         // tensors only; 1..max_dims dims
  std::variant<int64_t, double> value;  // scalars only: int64 for integer dtypes and bool
  std::optional<InitSpec> init;         // in/inout tensors (defaulted); never for out
  std::optional<Tolerance> tolerance;   // out/inout tensors: override of the per-dtype default
  bool is_tensor() const { return role != ArgRole::kScalar; }
  bool operator==(const ArgSpec&) const = default;
};

// What runs: the kind, its code, and how it is built and launched. The job's
// own kernel and a reference kernel share this shape.
struct KernelSpec {
  JobKind kind = JobKind::kCuda;
  SourceSpec source;
  std::optional<CompileSpec> compile;  // kinds compile, cuda, cuda_program
  std::string entry;                   // kernel (cuda/cubin/ptx/fatbin) or launcher (python kinds)
  std::optional<LaunchSpec> launch;    // kinds cuda, cubin, ptx, fatbin
  bool operator==(const KernelSpec&) const = default;
};

struct ReferenceSpec {
  std::optional<KernelSpec> kernel;        // a reference kernel, or
  std::map<std::string, BlobRef> expected; // expected output data per out/inout arg
  bool operator==(const ReferenceSpec&) const = default;
};

struct CorrectnessSpec {
  int trials = 3;
  std::map<DType, Tolerance> tolerance;  // per dtype, every dtype present after parsing
  std::optional<uint64_t> seed;          // none: a fresh random seed per job
  bool check_after_timing = true;
  bool nan_equal = false;
  bool operator==(const CorrectnessSpec&) const = default;
};
// The per-dtype default tolerance (docs/job-spec.md, "Tolerances").
Tolerance DefaultTolerance(DType t);

struct TimingSpec {
  enum class Mode { kCold, kHot, kGraph };
  bool enabled = true;
  Mode mode = Mode::kCold;
  int min_samples = 10;
  int max_samples = 1000;
  double noise_target = 0.005;   // relative standard error at which sampling stops
  int64_t time_budget_ms = 2000; // [ms] sampling stops after this
  int64_t warmup_ms = 100;       // [ms]
  std::optional<double> flops;   // per launch, for FLOP/s
  std::optional<double> bytes;   // per launch, for bandwidth
  bool operator==(const TimingSpec&) const = default;
};
std::string_view TimingModeName(TimingSpec::Mode m);

struct ProfileSpec {
  bool ncu = false;
  std::vector<std::string> sections;  // Nsight Compute section names; empty: ncu's defaults
  bool operator==(const ProfileSpec&) const = default;
};

struct ProgramSpec {
  std::vector<std::string> argv;        // argv[1..]; argv[0] is the program
  std::string stdin_text;               // JSON "stdin"
  int64_t stdout_limit_bytes = 1 << 20;
  int64_t stderr_limit_bytes = 1 << 20;
  std::map<std::string, std::string> env;
  bool operator==(const ProgramSpec&) const = default;
};

struct JobSpec : KernelSpec {
  int schema_version = kJobSpecSchemaVersion;
  std::string name;
  double timeout_s = 60;
  std::string gpu_type;  // JSON gpu.type: case-insensitive substring of the GPU name
  std::vector<ArgSpec> args;
  std::optional<ReferenceSpec> reference;
  std::optional<CorrectnessSpec> correctness;  // kernel and python kinds
  std::optional<TimingSpec> timing;            // kernel and python kinds
  std::optional<ProfileSpec> profile;          // every kind but compile
  std::vector<std::string> outputs;            // out/inout args returned as npy blobs
  std::optional<ProgramSpec> program;          // cuda_program
  std::optional<SourceSpec> problem;           // kernelbench: the problem (Model)
  std::optional<SourceSpec> candidate;         // kernelbench: the candidate (ModelNew)
  int num_trials = 100;                        // kernelbench: timed trials
  bool operator==(const JobSpec&) const = default;
};

// Parses and validates. Rejected(message, field) with the JSON path of the
// offending field ("args[2].dtype", "launch.grid[0]"); field is empty when
// the document itself is bad (not JSON, too large, too deep).
Result<JobSpec> ParseJobSpec(std::string_view json_text, const SpecLimits& limits = {});
// Same, from an already parsed document (size limit not applied).
Result<JobSpec> ParseJobSpecJson(const nlohmann::json& doc, const SpecLimits& limits = {});

// The normalized document.
nlohmann::json ToJson(const JobSpec& spec);

// Integer scalar args by name: the variables of shape and launch expressions.
std::map<std::string, int64_t> ScalarVars(const JobSpec& spec);
// A tensor arg's shape with every expression evaluated.
Result<std::vector<int64_t>> ResolveShape(const JobSpec& spec, const ArgSpec& arg);
// Launch sizes with every expression evaluated: grid, block, shared memory.
struct ResolvedLaunch {
  int64_t grid[3] = {1, 1, 1};
  int64_t block[3] = {1, 1, 1};
  int64_t shared_mem_bytes = 0;
};
Result<ResolvedLaunch> ResolveLaunch(const JobSpec& spec, const LaunchSpec& launch);

}  // namespace assay

// The files of one Python job (kinds torch, torch_cuda, triton, kernelbench):
// the user's sources, the data they read, and `request.json`, the document the
// harness (python/assay_harness.py) is run with. The layout and the request's
// fields are the *contract* of docs/python-kinds.md; both the worker (mode
// "run") and the scheduler's prepare step (mode "prepare") write them here, so
// the two always agree.
//
//   DIR/candidate.py   the job's source (kernelbench: `candidate`)
//   DIR/reference.py   a Python reference kernel's source, when there is one
//   DIR/problem.py     kernelbench: `problem`
//   DIR/blobs/<sha>    uploaded inputs (`init: blob`), linked or copied
//   DIR/expected_<arg>.npy  expected outputs, converted to .npy
//   DIR/out/           where the harness writes the outputs the spec asks for
//   DIR/request.json
//
// Thread-safety: pure functions, plus file writes into a directory the caller owns.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "spec/job_spec.h"

namespace assay {

inline constexpr int kPythonRequestVersion = 1;
// KernelBench's own default seed (its eval_kernel_against_ref).
inline constexpr uint64_t kKernelbenchSeed = 42;

// Blob hash -> a file with its bytes (RunContext::blob_files, WorkItem::blob_files).
using BlobFiles = std::map<std::string, std::filesystem::path>;

struct PythonRequestOptions {
  std::string mode = "run";       // "run" | "prepare"
  std::string device = "cuda";    // "cuda" | "cpu"
  int64_t l2_bytes = 0;           // [bytes] the device's L2 (cold-mode flush size); 0 without a GPU
  bool cupti_marks = false;       // the CUPTI injection library is loaded: call AssayCuptiMark
  // The candidate's load_inline cache (prepare builds and records into it, run
  // loads from it without building); empty = none.
  std::filesystem::path extension_cache;
};

// The bytes of a source object: its text / decoded base64, or the blob's file.
Result<std::string> PythonSourceBytes(const SourceSpec& source, const BlobFiles& blob_files);

// The candidate's source (kernelbench: `candidate`, otherwise `source`).
Result<std::string> PythonCandidateSource(const JobSpec& spec, const BlobFiles& blob_files);

// request.json for `spec` in `dir` (paths only: nothing is read or written).
// Every shape resolved, every tolerance filled in (per-arg override, else the
// job's per-dtype tolerance; kernelbench: correctness.atol/rtol only when the
// job changed a float dtype's tolerance, else the harness uses KernelBench's
// per-precision one). No correctness.seed: null (the harness draws a secret
// one; kernelbench: 42). Rejected when a shape does not resolve.
Result<nlohmann::json> BuildPythonRequest(const JobSpec& spec, const std::filesystem::path& dir,
                                          const PythonRequestOptions& options);

// Writes every file of the layout above and returns the request it wrote.
// Rejected: a blob that is not there, expected data that does not fit its
// argument; Infra: a file that cannot be written.
Result<nlohmann::json> WritePythonJob(const JobSpec& spec, const std::filesystem::path& dir,
                                      const BlobFiles& blob_files, const PythonRequestOptions& options);

// Whether the job gets a prepare step on the compile pool: torch_cuda and
// kernelbench always, any other Python job whose candidate mentions
// `load_inline` or `cpp_extension`.
bool NeedsPythonPrepare(JobKind kind, std::string_view candidate_source);

// The versions that decide what a build of the candidate's extensions is:
// {"python", "torch", "torch_cuda", "triton"} taken from the probe (missing ones null).
nlohmann::json PythonBuildVersions(const nlohmann::json& probe);

// Hex SHA-256 of (candidate source, PythonBuildVersions(probe), arch list):
// the name of the job's TORCH_EXTENSIONS_DIR under <cache>/torch_ext/.
std::string PythonExtensionKey(std::string_view candidate_source, const nlohmann::json& probe,
                               std::string_view arch_list);

// TORCH_CUDA_ARCH_LIST for an arch: "sm_90" -> "9.0", "sm_100a" -> "10.0"
// (torch's list knows few suffixed names; the plain one always builds); "" for
// anything that is not sm_<digits>.
std::string TorchArchList(std::string_view sm_arch);

}  // namespace assay

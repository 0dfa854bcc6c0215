// The compile path's internals shared by Compiler::Compile, CompileIsolated
// and the command: request validation, the two compiler drivers, SASS and
// toolkit discovery. Not for use outside src/compile/.
//
// Thread-safety: every function may run concurrently.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "common/status.h"
#include "compile/compile_flags.h"
#include "compile/compiler.h"

namespace assay {

// A request that passed validation, with the flags in the chosen compiler's spelling.
struct PreparedRequest {
  Arch arch;
  std::string compiler;  // "nvrtc" | "nvcc" (kExecutable is always nvcc)
  std::vector<std::string> flags;
};
// Rejected for an oversized or empty source, an unknown compiler, a bad arch,
// a flag outside the allow-list or a forbidden #include.
Result<PreparedRequest> PrepareRequest(const CompileRequest& request, const CompilerOptions& options);

// What a compiler driver produced. On success `<staging>/artifact` exists.
struct BuildResult {
  Status status;    // ok | compile_error | rejected | infra_error
  std::string log;  // the compiler's own words (warnings too)
  std::string ptx;  // when asked for
  // False for failures that may not repeat (timeouts, crashes, OOM kills):
  // those are not cached even when classed compile_error.
  bool cacheable = true;
};

BuildResult BuildWithNvrtc(const CompileRequest& request, const PreparedRequest& prepared,
                           const CompilerOptions& options, const std::filesystem::path& staging);
// timeout_ms bounds each nvcc invocation; past it: compile_error "compilation timed out".
BuildResult BuildWithNvcc(const CompileRequest& request, const PreparedRequest& prepared,
                          const CompilerOptions& options, const std::filesystem::path& staging);

// SASS text of a cubin or executable via cuobjdump -sass, else nvdisasm
// (cubins only). Infra when neither tool is in <cuda_root>/bin or on PATH.
Result<std::string> DisassembleSass(const std::filesystem::path& artifact, CompileOutputKind kind,
                                    const CompilerOptions& options);

// "13.0" from nvrtcVersion(), else from `nvcc --version`; "" when neither
// exists. Memoized per cuda_root for the life of the process.
std::string DetectToolkitVersion(const std::filesystem::path& cuda_root);

// <cuda_root>/bin/NAME when it is executable, else NAME (looked up in PATH).
std::string ToolPath(const std::filesystem::path& cuda_root, const std::string& name);
// The first line of `log` that contains "error", trimmed; `fallback` if none.
std::string FirstErrorLine(const std::string& log, const std::string& fallback);

}  // namespace assay

// The compile path. Needs no GPU: NVRTC (loaded at run time) or nvcc turn CUDA
// C++ into a cubin for a target architecture, with the compiler log, resource
// usage and, on request, PTX and SASS text. Results are cached on disk, keyed by
// source, flags, architecture, compiler and toolkit version.
//
// Thread-safety: Compile() may run concurrently; the cache is process- and
// thread-safe (atomic renames).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/status.h"

// The toolkit root compiled in (CMake cache variable ASSAY_CUDA_ROOT).
#ifndef ASSAY_CUDA_ROOT
#define ASSAY_CUDA_ROOT "/usr/local/cuda"
#endif

namespace assay {

enum class CompileOutputKind {
  kCubin,       // device code only (kinds cuda / compile)
  kExecutable,  // a host program built with nvcc (kind cuda_program)
};

struct CompileRequest {
  std::string source;                 // CUDA C++ text
  std::string filename = "kernel.cu"; // shown in diagnostics
  std::string compiler = "nvrtc";     // "nvrtc" | "nvcc" (kExecutable always uses nvcc)
  std::string arch = "sm_90";         // "sm_XY" (also "sm_90a")
  std::vector<std::string> flags;     // extra compiler flags, validated against an allow-list
  bool want_ptx = false;
  bool want_sass = false;
  CompileOutputKind output = CompileOutputKind::kCubin;
};

// Per-kernel resource usage as reported by ptxas for the target architecture.
struct ResourceUsage {
  int registers = 0;
  int64_t shared_bytes = 0;    // static shared memory
  int64_t local_bytes = 0;     // stack frame / local memory
  int64_t spill_stores = 0;    // [bytes]
  int64_t spill_loads = 0;     // [bytes]
  int64_t const_bytes = 0;
  int max_threads_per_block = 0;  // limited by registers on the target arch (and __launch_bounds__)
  std::string demangled;          // "void scale<float>(float*, int)"; the plain name for extern "C"
};

struct CompileOutput {
  Status status;                   // OK, or kCompileError (log holds the diagnostics), or kInfraError
  std::string log;                 // compiler log (warnings too)
  std::string arch;
  std::string compiler;
  std::string toolkit_version;     // e.g. "13.0"
  bool cache_hit = false;
  double duration_ms = 0;          // compile wall time (0 on a cache hit)
  std::string cache_key;           // hex SHA-256
  std::filesystem::path artifact;  // cubin or executable inside the cache dir
  std::string ptx;                 // when want_ptx
  std::string sass;                // when want_sass
  std::map<std::string, ResourceUsage> kernels;  // mangled or extern "C" name -> usage
};

struct CompilerOptions {
  std::filesystem::path cache_dir;       // created if missing
  std::filesystem::path cuda_root = ASSAY_CUDA_ROOT;
  int64_t timeout_ms = 120'000;          // per compile, nvcc and subprocess mode
  int64_t max_source_bytes = 4 << 20;
  // CompileIsolated only: run the child under the proc sandbox (no network,
  // read-only system, only cache_dir writable) when the host supports it.
  bool sandbox = true;
  // CompileIsolated only: RLIMIT_AS of the compile child [bytes]; 0 = none.
  int64_t max_memory_bytes = 8LL << 30;
};

class Compiler {
 public:
  explicit Compiler(CompilerOptions options);
  // Compiles in this process (NVRTC) or through nvcc child processes.
  CompileOutput Compile(const CompileRequest& request);
  // Same, in a child process (`self_exe internal-compile`), so a crashing or
  // memory-hungry compiler cannot take down the caller. Used by the server.
  // Concurrent calls for the same cache key compile once: the others wait and
  // take the cached result (a batch of identical references compiles one time).
  CompileOutput CompileIsolated(const CompileRequest& request, const std::filesystem::path& self_exe);
  // "13.0", or "" if neither NVRTC nor nvcc can be found.
  std::string ToolkitVersion();

 private:
  // The lock of the compile in flight for a cache key (single flight).
  std::shared_ptr<std::mutex> InFlightLock(const std::string& key);

  CompilerOptions options_;
  std::mutex inflight_mu_;
  std::map<std::string, std::weak_ptr<std::mutex>> inflight_;  // GUARDED_BY(inflight_mu_)
};

// Entry point of `assay internal-compile`: reads a request (JSON) on stdin,
// compiles, writes the CompileOutput (JSON) on stdout. Returns the exit code:
// 0 when an output was written (whatever its status), 2 for unreadable input.
// Applies options.max_memory_bytes to itself (RLIMIT_AS) first.
int InternalCompileMain(const CompilerOptions& options);

// The arguments CompileIsolated passes after `internal-compile`, for the
// binary's main to turn back into options: --cache-dir D --cuda-root R
// --timeout-ms N --max-memory-bytes N. Rejected on anything else.
Result<CompilerOptions> ParseInternalCompileArgs(const std::vector<std::string>& args);

}  // namespace assay

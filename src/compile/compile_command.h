// `assay compile FILE`: compiles locally, with no server and no GPU (seed
// 003's client-side compile), writes the cubin, prints per-kernel resource
// usage (or the CompileOutput as JSON), and PTX/SASS on request.
// See docs/compile.md#assay-compile.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "compile/compiler.h"

namespace assay {

struct CompileCommandOptions {
  std::filesystem::path file;          // the .cu to compile
  std::string arch = "sm_90";
  std::string compiler = "nvrtc";      // "nvrtc" | "nvcc"
  std::vector<std::string> flags;      // the allow-listed compiler flags
  bool ptx = false;                    // print the PTX
  bool sass = false;                   // print the SASS (needs cuobjdump or nvdisasm)
  bool json = false;                   // print the CompileOutput JSON instead of tables
  std::filesystem::path output;        // cubin destination; default FILE with .cubin
  std::filesystem::path cache_dir;     // default $XDG_CACHE_HOME/assay/compile or ~/.cache/assay/compile
  std::filesystem::path cuda_root = ASSAY_CUDA_ROOT;
};

// Exit codes: 0 compiled, 1 compile_error (the user's source), 2 bad usage or
// rejected request, 3 infra error (toolkit missing, cache unwritable).
int RunCompileCommand(const CompileCommandOptions& options);

}  // namespace assay

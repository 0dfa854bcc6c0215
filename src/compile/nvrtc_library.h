// NVRTC, loaded at run time with dlopen so every Assay binary starts on a
// machine without the CUDA toolkit and says clearly what is missing. The types
// come from the toolkit's own nvrtc.h, so a signature change is a build error.
//
// Thread-safety: NvrtcLibrary::Load may be called from any thread; the
// returned library is immutable and lives until the process exits (dlclose is
// never called: NVRTC keeps internal state that must outlive every program).
// NVRTC itself is documented thread-safe for distinct programs.
#pragma once

#include <nvrtc.h>

#include <filesystem>
#include <string>
#include <utility>

#include "common/status.h"

namespace assay {

struct NvrtcLibrary {
  decltype(&nvrtcVersion) Version = nullptr;
  decltype(&nvrtcGetErrorString) GetErrorString = nullptr;
  decltype(&nvrtcCreateProgram) CreateProgram = nullptr;
  decltype(&nvrtcDestroyProgram) DestroyProgram = nullptr;
  decltype(&nvrtcCompileProgram) CompileProgram = nullptr;
  decltype(&nvrtcGetPTXSize) GetPTXSize = nullptr;
  decltype(&nvrtcGetPTX) GetPTX = nullptr;
  decltype(&nvrtcGetCUBINSize) GetCUBINSize = nullptr;
  decltype(&nvrtcGetCUBIN) GetCUBIN = nullptr;
  decltype(&nvrtcGetProgramLogSize) GetProgramLogSize = nullptr;
  decltype(&nvrtcGetProgramLog) GetProgramLog = nullptr;
  std::string path;  // what dlopen found, for diagnostics

  // Tries libnvrtc.so.13, libnvrtc.so (loader path), then
  // <cuda_root>/lib64/libnvrtc.so* and <cuda_root>/lib/libnvrtc.so*.
  // Infra "NVRTC not found (looked in ...)" when none loads. The result of the
  // first successful load is reused by every later call.
  static Result<const NvrtcLibrary*> Load(const std::filesystem::path& cuda_root);

  // "13.0" from nvrtcVersion().
  std::string VersionString() const;
};

// Owns one nvrtcProgram: destroyed exactly once. Move-only.
class NvrtcProgram {
 public:
  NvrtcProgram() = default;
  NvrtcProgram(const NvrtcLibrary* lib, nvrtcProgram prog) : lib_(lib), prog_(prog) {}
  NvrtcProgram(NvrtcProgram&& o) noexcept
      : lib_(o.lib_), prog_(std::exchange(o.prog_, nullptr)) {}
  NvrtcProgram& operator=(NvrtcProgram&& o) noexcept {
    if (this != &o) {
      Reset();
      lib_ = o.lib_;
      prog_ = std::exchange(o.prog_, nullptr);
    }
    return *this;
  }
  NvrtcProgram(const NvrtcProgram&) = delete;
  NvrtcProgram& operator=(const NvrtcProgram&) = delete;
  ~NvrtcProgram() { Reset(); }

  nvrtcProgram get() const { return prog_; }

 private:
  void Reset() {
    if (prog_ != nullptr) lib_->DestroyProgram(&prog_);
    prog_ = nullptr;
  }
  const NvrtcLibrary* lib_ = nullptr;
  nvrtcProgram prog_ = nullptr;
};

}  // namespace assay

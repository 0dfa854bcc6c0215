#include "compile/nvrtc_library.h"

#include <dlfcn.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <vector>

namespace assay {
namespace {

// Candidate sonames/paths in the documented order. Versioned files under the
// toolkit are sorted so "libnvrtc.so.13" comes before "libnvrtc.so.13.0.88".
std::vector<std::string> Candidates(const std::filesystem::path& cuda_root) {
  std::vector<std::string> out = {"libnvrtc.so.13", "libnvrtc.so"};
  for (const char* sub : {"lib64", "lib"}) {
    std::error_code ec;
    std::vector<std::string> found;
    for (const auto& e : std::filesystem::directory_iterator(cuda_root / sub, ec)) {
      const std::string name = e.path().filename().string();
      if (name.rfind("libnvrtc.so", 0) == 0) found.push_back(e.path().string());
    }
    std::sort(found.begin(), found.end());
    out.insert(out.end(), found.begin(), found.end());
    if (found.empty()) out.push_back((cuda_root / sub / "libnvrtc.so*").string());
  }
  return out;
}

template <typename F>
bool Bind(void* handle, const char* name, F* slot) {
  *slot = reinterpret_cast<F>(dlsym(handle, name));
  return *slot != nullptr;
}

Result<NvrtcLibrary> Open(const std::filesystem::path& cuda_root) {
  std::string looked;
  for (const std::string& candidate : Candidates(cuda_root)) {
    if (!looked.empty()) looked += ", ";
    looked += candidate;
    if (candidate.find('*') != std::string::npos) continue;
    void* handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) continue;
    NvrtcLibrary lib;
    lib.path = candidate;
    const bool ok = Bind(handle, "nvrtcVersion", &lib.Version) &&
                    Bind(handle, "nvrtcGetErrorString", &lib.GetErrorString) &&
                    Bind(handle, "nvrtcCreateProgram", &lib.CreateProgram) &&
                    Bind(handle, "nvrtcDestroyProgram", &lib.DestroyProgram) &&
                    Bind(handle, "nvrtcCompileProgram", &lib.CompileProgram) &&
                    Bind(handle, "nvrtcGetPTXSize", &lib.GetPTXSize) &&
                    Bind(handle, "nvrtcGetPTX", &lib.GetPTX) &&
                    Bind(handle, "nvrtcGetCUBINSize", &lib.GetCUBINSize) &&
                    Bind(handle, "nvrtcGetCUBIN", &lib.GetCUBIN) &&
                    Bind(handle, "nvrtcGetProgramLogSize", &lib.GetProgramLogSize) &&
                    Bind(handle, "nvrtcGetProgramLog", &lib.GetProgramLog);
    if (ok) return lib;
    dlclose(handle);  // an unrelated or too-old library: keep looking
  }
  return Status::Infra("NVRTC not found (looked in " + looked + ")");
}

}  // namespace

Result<const NvrtcLibrary*> NvrtcLibrary::Load(const std::filesystem::path& cuda_root) {
  // A failed load is retried on the next call (the toolkit may be installed
  // later); a successful one is kept for the life of the process.
  static std::mutex mu;
  static std::unique_ptr<NvrtcLibrary> loaded;
  std::lock_guard<std::mutex> lock(mu);
  if (loaded) return static_cast<const NvrtcLibrary*>(loaded.get());
  Result<NvrtcLibrary> lib = Open(cuda_root);
  if (!lib.ok()) return lib.status();
  loaded = std::make_unique<NvrtcLibrary>(std::move(lib).value());
  return static_cast<const NvrtcLibrary*>(loaded.get());
}

std::string NvrtcLibrary::VersionString() const {
  int major = 0, minor = 0;
  if (Version(&major, &minor) != NVRTC_SUCCESS) return "";
  return std::to_string(major) + "." + std::to_string(minor);
}

}  // namespace assay

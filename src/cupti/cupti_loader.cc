#include "cupti/cupti_loader.h"

#include <dlfcn.h>

#include <cstdlib>

namespace assay::cupti {

std::string DirectoryOf(const void* address) noexcept {
  try {
    Dl_info info{};
    if (dladdr(address, &info) == 0 || info.dli_fname == nullptr) return {};
    std::string path = info.dli_fname;
    auto slash = path.rfind('/');
    return slash == std::string::npos ? std::string() : path.substr(0, slash);
  } catch (...) {
    return {};
  }
}

void* LoadCuptiLibrary(const std::string& own_dir, std::string* error) noexcept {
  try {
    std::string tried;
    auto fail = [&]() -> void* {
      const char* why = ::dlerror();
      if (error) *error = "cannot load libcupti (tried " + tried + "): " + (why ? why : "not found");
      return nullptr;
    };
    if (const char* forced = std::getenv("ASSAY_CUPTI_LIB"); forced && *forced) {
      tried = forced;
      if (void* h = ::dlopen(forced, RTLD_NOW | RTLD_LOCAL)) return h;
      return fail();
    }
    if (void* h = ::dlopen("libcupti.so.13", RTLD_NOW | RTLD_NOLOAD)) return h;
    const std::string candidates[] = {
        own_dir.empty() ? std::string() : own_dir + "/libcupti.so.13",
        "libcupti.so.13",  // LD_LIBRARY_PATH, ld.so.cache
        "/usr/local/cuda/lib64/libcupti.so.13",
        "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13",
    };
    for (const std::string& c : candidates) {
      if (c.empty()) continue;
      if (!tried.empty()) tried += ", ";
      tried += c;
      if (void* h = ::dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL)) return h;
    }
    return fail();
  } catch (...) {
    if (error) *error = "cannot load libcupti: out of memory";
    return nullptr;
  }
}

}  // namespace assay::cupti

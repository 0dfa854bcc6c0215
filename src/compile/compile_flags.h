// What a user may ask of the compiler. A compile server must not read or
// write files the user names, so flags pass an allow-list (docs/compile.md
// lists it) and #include directives may not name absolute or `..` paths.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace assay {

// A target architecture "sm_XY" / "sm_XYZ" with an optional "a"/"f" suffix.
struct Arch {
  int major = 0;  // 9 for sm_90, 12 for sm_120
  int minor = 0;
  std::string suffix;  // "", "a" or "f"
  std::string name;    // "sm_90a"
};
// Rejected for anything but sm_75 and newer in the form above.
Result<Arch> ParseArch(std::string_view arch);

// Validates `flags` for `compiler` ("nvrtc" | "nvcc") and returns them in the
// spelling that compiler accepts (e.g. -O2 becomes --ptxas-options=-O2 under
// NVRTC). Rejected naming the first flag outside the allow-list.
Result<std::vector<std::string>> TranslateFlags(const std::vector<std::string>& flags,
                                                std::string_view compiler);

// Rejected when the source includes an absolute or `..` path, uses a computed
// (macro) #include, #include_next, #embed, #import, or the `.incbin` assembler
// directive. Continuation lines, comments and the `%:` digraph are seen through.
Status CheckSourceIncludes(std::string_view source);

}  // namespace assay

#include "spec/compile_flags.h"

#include <algorithm>
#include <array>
#include <string>

#include "spec/json_reader.h"

namespace assay {
namespace {

constexpr std::array<std::string_view, 24> kExact = {
    "-O0", "-O1", "-O2", "-O3",
    "--use_fast_math", "-use_fast_math",
    "-lineinfo", "--generate-line-info",
    // Device debug: allowed for finding bugs; it disables optimisation, so
    // timings of such a job are not comparable (docs/job-spec.md).
    "-G", "--device-debug",
    "-std=c++17", "-std=c++20", "--std=c++17", "--std=c++20",
    "--extra-device-vectorization", "-extra-device-vectorization",
    "--restrict", "-restrict",
    "-ftz=true", "-ftz=false", "-prec-div=true", "-prec-div=false",
    "-prec-sqrt=true", "-prec-sqrt=false",
};
constexpr std::array<std::string_view, 2> kFmad = {"-fmad=true", "-fmad=false"};
// nvcc only, harmless language switches.
constexpr std::array<std::string_view, 2> kNvccOnly = {"--expt-relaxed-constexpr",
                                                       "--expt-extended-lambda"};
// cuda_program only: the toolkit libraries a program may link.
constexpr std::array<std::string_view, 7> kLibs = {"-lcuda",   "-lcublas",   "-lcublasLt", "-lcurand",
                                                   "-lcufft",  "-lcusparse", "-lcusolver"};

template <size_t N>
bool In(const std::array<std::string_view, N>& set, std::string_view s) {
  return std::find(set.begin(), set.end(), s) != set.end();
}

// -DNAME or -DNAME=VALUE with a value free of spaces, quotes and shell metacharacters.
bool IsDefine(std::string_view f) {
  if (f.substr(0, 2) != "-D") return false;
  f.remove_prefix(2);
  size_t eq = f.find('=');
  if (!spec_internal::IsIdentifier(f.substr(0, eq))) return false;
  if (eq == std::string_view::npos) return true;
  std::string_view value = f.substr(eq + 1);
  return std::all_of(value.begin(), value.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '.' || c == '+' || c == '-';
  });
}

bool IsMaxRegCount(std::string_view f) {
  for (std::string_view p : {"-maxrregcount=", "--maxrregcount="}) {
    if (f.substr(0, p.size()) != p) continue;
    std::string_view n = f.substr(p.size());
    if (n.empty() || n.size() > 3 || !std::all_of(n.begin(), n.end(), [](char c) {
          return c >= '0' && c <= '9';
        }))
      return false;
    int v = std::stoi(std::string(n));
    return v >= 16 && v <= 255;
  }
  return false;
}

}  // namespace

Status CheckCompileFlag(std::string_view flag, JobKind kind) {
  if (In(kExact, flag) || In(kFmad, flag) || IsDefine(flag) || IsMaxRegCount(flag))
    return Status::Ok();
  if (In(kNvccOnly, flag)) {
    if (kind == JobKind::kCudaProgram) return Status::Ok();
    return Status::Rejected("flag '" + std::string(flag) + "' is for nvcc programs only");
  }
  if (In(kLibs, flag)) {
    if (kind == JobKind::kCudaProgram) return Status::Ok();
    return Status::Rejected("linking ('" + std::string(flag) + "') applies to kind cuda_program only");
  }
  return Status::Rejected("flag '" + std::string(flag) +
                          "' is not allowed (see docs/job-spec.md, \"Compiler flags\")");
}

}  // namespace assay

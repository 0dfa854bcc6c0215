#include "compile/compile_flags.h"

#include <algorithm>
#include <cctype>
#include <regex>

namespace assay {
namespace {

bool IsIdentifier(std::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

// -DNAME or -DNAME=VALUE; VALUE has no spaces, quotes, backslashes or '$'.
bool IsDefine(std::string_view f) {
  if (f.rfind("-D", 0) != 0) return false;
  std::string_view body = f.substr(2);
  const size_t eq = body.find('=');
  if (!IsIdentifier(body.substr(0, eq))) return false;
  if (eq == std::string_view::npos) return true;
  std::string_view value = body.substr(eq + 1);
  return std::none_of(value.begin(), value.end(), [](char c) {
    return std::isspace(static_cast<unsigned char>(c)) || c == '"' || c == '\'' || c == '\\' ||
           c == '$' || c == '`' || !std::isprint(static_cast<unsigned char>(c));
  });
}

// Options given to ptxas: -O0..-O3 and the L1 cache policy for loads.
bool IsPtxasOption(std::string_view v) {
  static const std::regex re(R"(-O[0-3]|-dlcm=(ca|cg)|-dscm=(cg|wt))");
  return std::regex_match(v.begin(), v.end(), re);
}

}  // namespace

Result<Arch> ParseArch(std::string_view arch) {
  static const std::regex re(R"(sm_([1-9][0-9]{1,2})([af]?))");
  std::match_results<std::string_view::const_iterator> m;
  if (!std::regex_match(arch.begin(), arch.end(), m, re)) {
    return Status::Rejected("arch must look like sm_90 (or sm_90a), got '" + std::string(arch) + "'",
                            "arch");
  }
  const int number = std::stoi(m[1].str());
  if (number < 75) {
    return Status::Rejected("arch " + std::string(arch) + " is older than sm_75, the oldest CUDA 13 supports",
                            "arch");
  }
  Arch out;
  out.major = number / 10;
  out.minor = number % 10;
  out.suffix = m[2].str();
  out.name = std::string(arch);
  return out;
}

Result<std::vector<std::string>> TranslateFlags(const std::vector<std::string>& flags,
                                                std::string_view compiler) {
  const bool nvrtc = compiler == "nvrtc";
  static const std::regex maxrreg(R"(--?maxrregcount=([0-9]{1,3}))");
  static const std::regex std_re(R"(--?std=c\+\+(17|20))");
  static const std::regex bool_opt(R"(--?(ftz|prec-div|prec-sqrt|fmad)=(true|false))");
  std::vector<std::string> out;
  for (size_t i = 0; i < flags.size(); ++i) {
    const std::string& f = flags[i];
    const std::string field = "flags[" + std::to_string(i) + "]";
    std::smatch m;
    if (f == "-O0" || f == "-O1" || f == "-O2" || f == "-O3") {
      // NVRTC has no -O; the device-code optimisation level belongs to ptxas.
      out.push_back(nvrtc ? "--ptxas-options=" + f : f);
    } else if (f == "-use_fast_math" || f == "--use_fast_math") {
      out.push_back("--use_fast_math");
    } else if (f == "-lineinfo" || f == "--generate-line-info") {
      out.push_back("-lineinfo");
    } else if (f == "-G" || f == "--device-debug") {
      out.push_back("-G");
    } else if (f == "-w" || f == "--disable-warnings") {
      out.push_back("-w");
    } else if (f == "--extra-device-vectorization" || f == "-extra-device-vectorization") {
      out.push_back("--extra-device-vectorization");
    } else if (std::regex_match(f, m, std_re)) {
      out.push_back("-std=c++" + m[1].str());
    } else if (std::regex_match(f, m, bool_opt)) {
      out.push_back("--" + m[1].str() + "=" + m[2].str());
    } else if (std::regex_match(f, m, maxrreg)) {
      const int n = std::stoi(m[1].str());
      if (n < 16 || n > 255) return Status::Rejected("-maxrregcount must be in [16, 255]: " + f, field);
      out.push_back("--maxrregcount=" + m[1].str());
    } else if (IsDefine(f)) {
      out.push_back(f);
    } else if (f.rfind("-Xptxas=", 0) == 0 || f.rfind("--ptxas-options=", 0) == 0) {
      const std::string value = f.substr(f.find('=') + 1);
      if (!IsPtxasOption(value)) return Status::Rejected("ptxas option not allowed: " + f, field);
      out.push_back(nvrtc ? "--ptxas-options=" + value : "-Xptxas=" + value);
    } else if (f == "--expt-relaxed-constexpr" || f == "--extended-lambda") {
      if (nvrtc) return Status::Rejected("flag " + f + " needs compiler nvcc", field);
      out.push_back(f);
    } else {
      return Status::Rejected("flag not allowed: '" + f + "' (see docs/compile.md for the allow-list)",
                              field);
    }
  }
  return out;
}

Status CheckSourceIncludes(std::string_view source) {
  // Join continuation lines and drop comments, keeping string literals, so
  // `#/**/include` and `#\<newline>include` cannot hide a directive.
  std::string text;
  text.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    const char c = source[i];
    if (c == '\\' && i + 1 < source.size() && source[i + 1] == '\n') {
      ++i;
    } else if (c == '\\' && i + 2 < source.size() && source[i + 1] == '\r' && source[i + 2] == '\n') {
      i += 2;
    } else if (c == '/' && i + 1 < source.size() && source[i + 1] == '*') {
      const size_t end = source.find("*/", i + 2);
      text += ' ';
      if (end == std::string_view::npos) break;
      i = end + 1;
    } else if (c == '/' && i + 1 < source.size() && source[i + 1] == '/') {
      const size_t end = source.find('\n', i);
      if (end == std::string_view::npos) break;
      i = end - 1;
    } else if (c == '"') {
      // Copy a string literal whole, so "//" or "/*" inside it are not comments.
      size_t j = i + 1;
      while (j < source.size() && source[j] != '"' && source[j] != '\n') j += (source[j] == '\\') ? 2 : 1;
      j = std::min(j, source.size() - 1);
      text.append(source.substr(i, j - i + 1));
      i = j;
    } else {
      text += c;
    }
  }
  std::string lower = text;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower.find("incbin") != std::string::npos) {
    return Status::Rejected("the .incbin assembler directive is not allowed", "source");
  }
  static const std::regex directive(R"(^[ \t]*(#|%:)[ \t]*(include_next|include|import|embed)\b[ \t]*(.*)$)",
                                    std::regex::multiline);
  for (auto it = std::sregex_iterator(text.begin(), text.end(), directive); it != std::sregex_iterator();
       ++it) {
    const std::string kind = (*it)[2].str();
    const std::string rest = (*it)[3].str();
    const std::string line = "#" + kind + " " + rest;
    if (kind != "include") return Status::Rejected("#" + kind + " is not allowed: " + line, "source");
    if (rest.empty() || (rest[0] != '"' && rest[0] != '<')) {
      return Status::Rejected("computed #include is not allowed: " + line, "source");
    }
    const char close = rest[0] == '"' ? '"' : '>';
    const size_t end = rest.find(close, 1);
    const std::string path = rest.substr(1, end == std::string::npos ? std::string::npos : end - 1);
    if (path.empty() || path[0] == '/' || path[0] == '~' || path.find("..") != std::string::npos ||
        path.find('\\') != std::string::npos) {
      return Status::Rejected("#include of an absolute or parent path is not allowed: " + line, "source");
    }
  }
  return Status::Ok();
}

}  // namespace assay

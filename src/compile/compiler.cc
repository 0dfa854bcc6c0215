#include "compile/compiler.h"

#include <map>
#include <mutex>
#include <regex>
#include <sstream>

#include "common/log.h"
#include "common/util.h"
#include "compile/build.h"
#include "compile/compile_cache.h"
#include "compile/nvrtc_library.h"
#include "compile/resource_usage.h"
#include "proc/subprocess.h"

namespace assay {

Result<PreparedRequest> PrepareRequest(const CompileRequest& request, const CompilerOptions& options) {
  if (options.cache_dir.empty()) return Status::Infra("CompilerOptions.cache_dir is not set");
  if (request.source.empty()) return Status::Rejected("source is empty", "source");
  if (static_cast<int64_t>(request.source.size()) > options.max_source_bytes) {
    return Status::Rejected("source is " + std::to_string(request.source.size()) + " bytes, over the limit of " +
                                std::to_string(options.max_source_bytes),
                            "source");
  }
  if (request.compiler != "nvrtc" && request.compiler != "nvcc") {
    return Status::Rejected("compiler must be nvrtc or nvcc, got '" + request.compiler + "'", "compiler");
  }
  PreparedRequest out;
  out.compiler = request.output == CompileOutputKind::kExecutable ? "nvcc" : request.compiler;
  Result<Arch> arch = ParseArch(request.arch);
  if (!arch.ok()) return arch.status();
  out.arch = *arch;
  Result<std::vector<std::string>> flags = TranslateFlags(request.flags, out.compiler);
  if (!flags.ok()) return flags.status();
  out.flags = std::move(flags).value();
  ASSAY_RETURN_IF_ERROR(CheckSourceIncludes(request.source));
  return out;
}

std::string FirstErrorLine(const std::string& log, const std::string& fallback) {
  std::istringstream in(log);
  std::string line;
  while (std::getline(in, line)) {
    if (line.find("error") != std::string::npos) {
      const size_t b = line.find_first_not_of(" \t");
      return line.substr(b == std::string::npos ? 0 : b);
    }
  }
  return fallback;
}

std::string DetectToolkitVersion(const std::filesystem::path& cuda_root) {
  static std::mutex mu;
  static std::map<std::filesystem::path, std::string> known;
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = known.find(cuda_root); it != known.end()) return it->second;
  std::string version;
  if (Result<const NvrtcLibrary*> lib = NvrtcLibrary::Load(cuda_root); lib.ok()) {
    version = (*lib)->VersionString();
  }
  if (version.empty()) {
    ProcessOptions po;
    po.argv = {ToolPath(cuda_root, "nvcc"), "--version"};
    po.timeout_ms = 30'000;
    Result<ProcessResult> run = RunProcess(po);
    static const std::regex release(R"(release (\d+\.\d+))");
    std::smatch m;
    if (run.ok() && run->exit_code == 0 && std::regex_search(run->stdout_data, m, release)) version = m[1].str();
  }
  if (!version.empty()) known[cuda_root] = version;  // a missing toolkit is looked for again next time
  return version;
}

Compiler::Compiler(CompilerOptions options) : options_(std::move(options)) {}

std::string Compiler::ToolkitVersion() { return DetectToolkitVersion(options_.cuda_root); }

CompileOutput Compiler::Compile(const CompileRequest& request) {
  CompileOutput out;
  out.arch = request.arch;
  Result<PreparedRequest> prepared = PrepareRequest(request, options_);
  if (!prepared.ok()) {
    out.status = prepared.status();
    out.compiler = request.compiler;
    return out;
  }
  out.compiler = prepared->compiler;
  out.toolkit_version = ToolkitVersion();
  if (out.toolkit_version.empty()) {
    out.status = Status::Infra("CUDA toolkit not found under " + options_.cuda_root.string() +
                               " (neither NVRTC nor nvcc)");
    return out;
  }
  out.cache_key = CompileCacheKey(request, out.toolkit_version);
  CompileCache cache(options_.cache_dir);
  if (std::optional<CompileOutput> hit = cache.Lookup(out.cache_key)) return *hit;

  Result<TempDir> staging = cache.NewStaging();
  if (!staging.ok()) {
    out.status = staging.status();
    return out;
  }
  const int64_t start = MonotonicMs();
  BuildResult built = prepared->compiler == "nvrtc"
                          ? BuildWithNvrtc(request, *prepared, options_, staging->path())
                          : BuildWithNvcc(request, *prepared, options_, staging->path());
  out.status = built.status;
  out.log = SanitizeUtf8(built.log);
  out.ptx = std::move(built.ptx);
  if (out.status.ok()) {
    const std::filesystem::path artifact = staging->path() / "artifact";
    if (request.output == CompileOutputKind::kCubin) {
      Result<std::string> cubin = ReadFile(artifact, 1ULL << 30);
      out.kernels = MergeResourceUsage(out.log, cubin.ok() ? std::string_view(*cubin) : std::string_view());
    } else {
      out.kernels = MergeResourceUsage(out.log, {});
    }
    if (request.want_sass) {
      Result<std::string> sass = DisassembleSass(artifact, request.output, options_);
      if (sass.ok()) {
        out.sass = std::move(sass).value();
      } else {
        out.status = sass.status();
      }
    }
  }
  out.duration_ms = static_cast<double>(MonotonicMs() - start);
  const ErrorClass cls = out.status.error_class();
  // Same key, same answer: successes and the user's compile errors are cached;
  // infra errors (our fault, maybe transient) and rejections are not.
  if ((cls != ErrorClass::kOk && cls != ErrorClass::kCompileError) || !built.cacheable) return out;
  Result<CompileOutput> committed = cache.Commit(std::move(staging).value(), out);
  if (!committed.ok()) {
    log::Event("compile.cache_commit_failed").Kv("key", out.cache_key).Kv("error", committed.status().message()).Warn();
    out.status = committed.status();
    return out;
  }
  log::Event("compile.done")
      .Kv("key", out.cache_key.substr(0, 12))
      .Kv("compiler", out.compiler)
      .Kv("arch", out.arch)
      .Kv("status", ErrorClassName(out.status.error_class()))
      .Kv("ms", out.duration_ms)
      .Debug();
  return std::move(committed).value();
}

}  // namespace assay

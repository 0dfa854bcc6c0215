// Compiling in a child process: `self_exe internal-compile ...` reads the
// request on stdin and writes the output on stdout, so a compiler that
// crashes, hangs or eats memory takes down only that child. The parent
// answers cache hits itself, without a child.
#include <sys/resource.h>

#include <nlohmann/json.hpp>

#include <iostream>
#include <iterator>

#include "common/log.h"
#include "compile/build.h"
#include "compile/compile_cache.h"
#include "compile/compile_json.h"
#include "compile/compiler.h"
#include "proc/subprocess.h"

namespace assay {
namespace {

// The child gets this much longer than one compile, so its own nvcc timeout
// (which yields a precise message) normally fires first.
constexpr int64_t kChildSlackMs = 5'000;

CompileOutput Failed(const CompileRequest& request, Status status, std::string log = {}) {
  CompileOutput out;
  out.status = std::move(status);
  out.arch = request.arch;
  out.compiler = request.output == CompileOutputKind::kExecutable ? "nvcc" : request.compiler;
  out.log = SanitizeUtf8(log);
  return out;
}

}  // namespace

std::shared_ptr<std::mutex> Compiler::InFlightLock(const std::string& key) {
  std::lock_guard<std::mutex> lock(inflight_mu_);
  for (auto it = inflight_.begin(); it != inflight_.end();) {  // forget finished flights
    it = it->second.expired() ? inflight_.erase(it) : std::next(it);
  }
  std::shared_ptr<std::mutex> m = inflight_[key].lock();
  if (!m) {
    m = std::make_shared<std::mutex>();
    inflight_[key] = m;
  }
  return m;
}

CompileOutput Compiler::CompileIsolated(const CompileRequest& request, const std::filesystem::path& self_exe) {
  Result<PreparedRequest> prepared = PrepareRequest(request, options_);
  if (!prepared.ok()) return Failed(request, prepared.status());
  const std::string toolkit = ToolkitVersion();
  if (toolkit.empty()) {
    return Failed(request, Status::Infra("CUDA toolkit not found under " + options_.cuda_root.string() +
                                         " (neither NVRTC nor nvcc)"));
  }
  CompileCache cache(options_.cache_dir);
  const std::string key = CompileCacheKey(request, toolkit);
  if (std::optional<CompileOutput> hit = cache.Lookup(key)) return *hit;
  // One compile per key at a time; whoever waited finds the winner's result cached.
  std::shared_ptr<std::mutex> flight = InFlightLock(key);
  std::lock_guard<std::mutex> flight_lock(*flight);
  if (std::optional<CompileOutput> hit = cache.Lookup(key)) return *hit;

  std::error_code ec;
  std::filesystem::create_directories(options_.cache_dir / "tmp", ec);
  const std::filesystem::path cache_dir = std::filesystem::absolute(options_.cache_dir, ec);
  ProcessOptions po;
  po.argv = {self_exe.string(),
             "internal-compile",
             "--cache-dir",
             cache_dir.string(),
             "--cuda-root",
             options_.cuda_root.string(),
             "--timeout-ms",
             std::to_string(options_.timeout_ms),
             "--max-memory-bytes",
             std::to_string(options_.max_memory_bytes)};
  po.stdin_data = CompileRequestToJson(request).dump();
  po.timeout_ms = options_.timeout_ms + kChildSlackMs;
  po.stdout_limit = 512 << 20;  // PTX and SASS of a big program can be large
  po.stderr_limit = 1 << 20;
  // nvcc's temporaries go under the cache dir: the one place the sandbox leaves writable.
  std::map<std::string, std::string> env;
  for (const char* name : {"PATH", "HOME", "LANG", "LD_LIBRARY_PATH", "ASSAY_SANDBOX"}) {
    if (const char* v = std::getenv(name)) env[name] = v;
  }
  env["TMPDIR"] = (cache_dir / "tmp").string();
  po.env = env;
  po.sandbox.enabled = options_.sandbox;
  po.sandbox.writable_dir = cache_dir;
  po.nice = kBackgroundNice;  // builds yield the CPU to the workers

  Result<ProcessResult> run = RunProcess(po);
  if (!run.ok()) return Failed(request, Status::Infra("cannot start compile child: " + run.status().message()));
  if (run->timed_out) {
    return Failed(request,
                  Status::CompileError("compilation timed out after " + std::to_string(options_.timeout_ms / 1000) + " s"),
                  run->stderr_data);
  }
  if (run->signal != 0) {
    // The child runs only the compiler on the user's source: a crash there is
    // the user's compile error (SIGKILL without a timeout: most likely memory).
    return Failed(request, Status::CompileError("compiler crashed with " + SignalName(run->signal)), run->stderr_data);
  }
  const nlohmann::json j = nlohmann::json::parse(run->stdout_data, nullptr, /*allow_exceptions=*/false);
  Result<CompileOutput> out = j.is_discarded() ? Result<CompileOutput>(Status::Rejected("not JSON"))
                                                : CompileOutputFromJson(j);
  if (run->exit_code != 0 || !out.ok()) {
    // A std::bad_alloc under RLIMIT_AS ends the child with SIGABRT (above);
    // anything else here is a broken child, which is ours to fix.
    return Failed(request,
                  Status::Infra("compile child failed (exit " + std::to_string(run->exit_code) +
                                "): " + (out.ok() ? std::string() : out.status().message())),
                  run->stderr_data);
  }
  return std::move(out).value();
}

Result<CompilerOptions> ParseInternalCompileArgs(const std::vector<std::string>& args) {
  CompilerOptions options;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (i + 1 >= args.size()) return Status::Rejected("missing value for " + a);
    const std::string& v = args[++i];
    try {
      if (a == "--cache-dir") {
        options.cache_dir = v;
      } else if (a == "--cuda-root") {
        options.cuda_root = v;
      } else if (a == "--timeout-ms") {
        options.timeout_ms = std::stoll(v);
      } else if (a == "--max-memory-bytes") {
        options.max_memory_bytes = std::stoll(v);
      } else {
        return Status::Rejected("unknown internal-compile argument " + a);
      }
    } catch (const std::exception&) {
      return Status::Rejected("bad number for " + a + ": " + v);
    }
  }
  if (options.cache_dir.empty()) return Status::Rejected("--cache-dir is required");
  return options;
}

int InternalCompileMain(const CompilerOptions& options) {
  if (options.max_memory_bytes > 0) {
    const rlimit limit{static_cast<rlim_t>(options.max_memory_bytes), static_cast<rlim_t>(options.max_memory_bytes)};
    if (setrlimit(RLIMIT_AS, &limit) != 0) log::Event("compile.rlimit_failed").Warn();
  }
  const std::string input((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  const nlohmann::json j = nlohmann::json::parse(input, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    std::cerr << "internal-compile: stdin is not JSON\n";
    return 2;
  }
  Result<CompileRequest> request = CompileRequestFromJson(j);
  CompileOutput out;
  if (request.ok()) {
    Compiler compiler(options);
    out = compiler.Compile(*request);
  } else {
    out.status = request.status();
  }
  std::cout << CompileOutputToJson(out).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << std::flush;
  return std::cout.good() ? 0 : 2;
}

}  // namespace assay

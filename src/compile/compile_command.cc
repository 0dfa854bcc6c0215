#include "compile/compile_command.h"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "common/util.h"
#include "compile/compile_json.h"
#include "compile/compiler.h"

namespace assay {
namespace {

std::filesystem::path DefaultCacheDir() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) {
    return std::filesystem::path(xdg) / "assay" / "compile";
  }
  if (const char* home = std::getenv("HOME"); home && *home) {
    return std::filesystem::path(home) / ".cache" / "assay" / "compile";
  }
  return std::filesystem::temp_directory_path() / "assay-compile-cache";
}

int ExitCodeFor(const Status& status) {
  switch (status.error_class()) {
    case ErrorClass::kOk: return 0;
    case ErrorClass::kCompileError: return 1;
    case ErrorClass::kRejected: return 2;
    default: return 3;
  }
}

void PrintTable(const CompileOutput& out) {
  fmt::print("{} {} (toolkit {}){}  {:.0f} ms\n", out.compiler, out.arch, out.toolkit_version,
             out.cache_hit ? "  cache hit" : "", out.duration_ms);
  fmt::print("{:<32} {:>5} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}\n", "kernel", "regs", "smem", "local",
             "spill_st", "spill_ld", "cmem", "max_thr");
  for (const auto& [name, u] : out.kernels) {
    fmt::print("{:<32} {:>5} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}\n", u.demangled.empty() ? name : u.demangled,
               u.registers, u.shared_bytes, u.local_bytes, u.spill_stores, u.spill_loads, u.const_bytes,
               u.max_threads_per_block);
  }
}

}  // namespace

int RunCompileCommand(const CompileCommandOptions& options) {
  Result<std::string> source = ReadFile(options.file, 64 << 20);
  if (!source.ok()) {
    fmt::print(stderr, "assay compile: {}\n", source.status().message());
    return 2;
  }
  CompilerOptions copts;
  copts.cache_dir = options.cache_dir.empty() ? DefaultCacheDir() : options.cache_dir;
  copts.cuda_root = options.cuda_root;
  CompileRequest request;
  request.source = std::move(source).value();
  request.filename = options.file.filename().string();
  request.compiler = options.compiler;
  request.arch = options.arch;
  request.flags = options.flags;
  request.want_ptx = options.ptx;
  request.want_sass = options.sass;

  Compiler compiler(copts);
  CompileOutput out = compiler.Compile(request);

  std::filesystem::path written;
  if (out.status.ok() && !out.artifact.empty()) {
    written = options.output.empty() ? std::filesystem::path(options.file).replace_extension(".cubin")
                                     : options.output;
    std::error_code ec;
    std::filesystem::copy_file(out.artifact, written, std::filesystem::copy_options::overwrite_existing, ec);
    if (ec) {
      out.status = Status::Infra("cannot write " + written.string() + ": " + ec.message());
      written.clear();
    }
  }

  if (options.json) {
    nlohmann::json j = CompileOutputToJson(out);
    if (!written.empty()) j["output"] = written.string();
    fmt::print("{}\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
    return ExitCodeFor(out.status);
  }
  if (!out.log.empty() && (!out.status.ok() || out.log.find("warning") != std::string::npos)) {
    // The log is mostly ptxas' report on success; show it when it has something to say.
    fmt::print(stderr, "{}", out.log);
    if (out.log.back() != '\n') fmt::print(stderr, "\n");
  }
  if (!out.status.ok()) {
    fmt::print(stderr, "assay compile: {}\n", out.status.ToString());
    return ExitCodeFor(out.status);
  }
  PrintTable(out);
  fmt::print("wrote {}\n", written.string());
  if (options.ptx) fmt::print("\n// PTX\n{}\n", out.ptx);
  if (options.sass) fmt::print("\n// SASS\n{}\n", out.sass);
  return 0;
}

}  // namespace assay

// The nvcc driver: the source is written to a private work dir and nvcc runs
// there as a child process (through RunProcess: own process group, timeout),
// so diagnostics name "kernel.cu", not a temp path.
#include <cctype>
#include <fstream>

#include "common/util.h"
#include "compile/build.h"
#include "proc/subprocess.h"

namespace assay {
namespace {

// Keeps the user's file name readable in diagnostics without letting it name a path.
std::string SafeFilename(const std::string& name) {
  std::string base = std::filesystem::path(name).filename().string();
  for (char& c : base) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') c = '_';
  }
  if (base.empty() || base[0] == '.') base = "kernel" + base;
  if (base.size() < 3 || base.substr(base.size() - 3) != ".cu") base += ".cu";
  return base;
}

bool HasOptLevel(const std::vector<std::string>& flags) {
  for (const std::string& f : flags) {
    if (f.size() == 3 && f[0] == '-' && f[1] == 'O') return true;
  }
  return false;
}

}  // namespace

BuildResult BuildWithNvcc(const CompileRequest& request, const PreparedRequest& prepared,
                          const CompilerOptions& options, const std::filesystem::path& staging) {
  BuildResult out;
  const std::filesystem::path work = staging / "work";
  const std::string filename = SafeFilename(request.filename);
  std::error_code ec;
  std::filesystem::create_directories(work / "keep", ec);
  {
    std::ofstream f(work / filename, std::ios::binary);
    f << request.source;
    if (!f.flush() || ec) {
      out.status = Status::Infra("cannot write nvcc input in " + work.string());
      return out;
    }
  }

  const bool executable = request.output == CompileOutputKind::kExecutable;
  std::vector<std::string> argv = {ToolPath(options.cuda_root, "nvcc")};
  if (executable) {
    if (!HasOptLevel(prepared.flags)) argv.push_back("-O3");
    argv.push_back("-lineinfo");
  } else {
    argv.push_back("-cubin");
  }
  argv.push_back("-arch=" + prepared.arch.name);
  argv.push_back("-Xptxas=-v");
  if (request.want_ptx) {
    // The PTX of the same compile, left behind in keep/ (no second compile).
    argv.insert(argv.end(), {"--keep", "--keep-dir", "keep"});
  }
  argv.insert(argv.end(), prepared.flags.begin(), prepared.flags.end());
  argv.insert(argv.end(), {"-o", (staging / "artifact").string(), filename});

  ProcessOptions po;
  po.argv = argv;
  po.cwd = work;
  po.timeout_ms = options.timeout_ms;
  po.stdout_limit = 4 << 20;
  po.stderr_limit = 4 << 20;
  Result<ProcessResult> run = RunProcess(po);
  if (!run.ok()) {
    out.status = Status::Infra("cannot run nvcc: " + run.status().message());
    return out;
  }
  out.log = run->stderr_data + run->stdout_data;
  if (run->timed_out || run->signal != 0) out.cacheable = false;
  if (run->timed_out) {
    out.status = Status::CompileError("compilation timed out after " +
                                      std::to_string(options.timeout_ms / 1000) + " s");
  } else if (run->signal != 0) {
    out.status = Status::CompileError("compiler crashed with " + SignalName(run->signal));
  } else if (run->exit_code != 0) {
    out.status = Status::CompileError(FirstErrorLine(out.log, "nvcc exited with code " +
                                                                  std::to_string(run->exit_code)));
  } else if (!std::filesystem::exists(staging / "artifact", ec)) {
    out.status = Status::Infra("nvcc succeeded but wrote no output");
  }
  if (out.status.ok() && request.want_ptx) {
    const std::string stem = std::filesystem::path(filename).stem().string();
    Result<std::string> ptx = ReadFile(work / "keep" / (stem + ".ptx"), 256 << 20);
    if (ptx.ok()) out.ptx = std::move(ptx).value();
  }
  std::filesystem::remove_all(work, ec);  // the cache entry keeps only artifact + meta.json
  return out;
}

}  // namespace assay

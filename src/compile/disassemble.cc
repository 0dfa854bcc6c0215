#include <unistd.h>

#include "compile/build.h"
#include "proc/subprocess.h"

namespace assay {
namespace {

// Whether NAME is reachable: <cuda_root>/bin/NAME or a PATH entry.
bool ToolExists(const std::filesystem::path& cuda_root, const std::string& name) {
  const std::string path = ToolPath(cuda_root, name);
  if (path.find('/') != std::string::npos) return access(path.c_str(), X_OK) == 0;
  const char* env = std::getenv("PATH");
  std::string dirs = env ? env : "";
  size_t start = 0;
  while (start <= dirs.size()) {
    const size_t end = std::min(dirs.find(':', start), dirs.size());
    const std::string dir = dirs.substr(start, end - start);
    if (!dir.empty() && access((dir + "/" + name).c_str(), X_OK) == 0) return true;
    start = end + 1;
  }
  return false;
}

}  // namespace

std::string ToolPath(const std::filesystem::path& cuda_root, const std::string& name) {
  const std::filesystem::path p = cuda_root / "bin" / name;
  return access(p.c_str(), X_OK) == 0 ? p.string() : name;
}

Result<std::string> DisassembleSass(const std::filesystem::path& artifact, CompileOutputKind kind,
                                    const CompilerOptions& options) {
  std::vector<std::string> argv;
  if (ToolExists(options.cuda_root, "cuobjdump")) {
    argv = {ToolPath(options.cuda_root, "cuobjdump"), "-sass", artifact.string()};
  } else if (kind == CompileOutputKind::kCubin && ToolExists(options.cuda_root, "nvdisasm")) {
    argv = {ToolPath(options.cuda_root, "nvdisasm"), artifact.string()};
  } else {
    return Status::Infra("SASS requested but neither cuobjdump nor nvdisasm was found (looked in " +
                         (options.cuda_root / "bin").string() + " and PATH)");
  }
  ProcessOptions po;
  po.argv = argv;
  po.timeout_ms = options.timeout_ms;
  po.stdout_limit = 64 << 20;
  Result<ProcessResult> run = RunProcess(po);
  if (!run.ok()) return run.status();
  if (run->timed_out || run->signal != 0 || run->exit_code != 0) {
    return Status::Infra(argv[0] + " failed: " + run->stderr_data);
  }
  return std::move(run->stdout_data);
}

}  // namespace assay

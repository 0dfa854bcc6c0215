#include "worker/program_runner.h"

#include <unistd.h>

#include <cstdlib>
#include <map>

#include "common/log.h"
#include "common/util.h"
#include "cupti/kernel_report.h"
#include "proc/subprocess.h"

extern char** environ;

namespace assay {
namespace {

constexpr int64_t kDefaultOutputLimit = 1 << 20;

std::map<std::string, std::string> ProgramEnv(const RunContext& ctx, const nlohmann::json& program,
                                              const std::filesystem::path& dir) {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string kv = *e;
    auto eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  env.erase("ASSAY_WORKER_HEARTBEAT_MS");
  if (auto it = program.find("env"); it != program.end() && it->is_object()) {
    for (const auto& [k, v] : it->items()) {
      if (v.is_string()) env[k] = v.get<std::string>();
    }
  }
  // Set last so a spec cannot override them: the program sees only this
  // worker's GPU, and scratch files (and the CUDA JIT cache under $HOME) land
  // in the job's own directory.
  env["CUDA_VISIBLE_DEVICES"] = ctx.device >= 0 ? std::to_string(ctx.device) : "";
  env["TMPDIR"] = dir.string();
  env["HOME"] = dir.string();
  return env;
}

// The CUPTI injection library that records every kernel a program launches
// (src/cupti), installed next to the assay binary; empty when absent.
std::filesystem::path CuptiLibrary() {
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return {};
  auto lib = self.parent_path() / "libassay_cupti.so";
  return std::filesystem::exists(lib, ec) ? lib : std::filesystem::path();
}

std::string WithGpuHint(const RunContext& ctx, std::string message) {
  if (ctx.device < 0) message += "; this worker has no GPU; a program that calls CUDA cannot run here";
  return message;
}

}  // namespace

WorkOutcome RunCudaProgram(const RunContext& ctx) {
  WorkOutcome out;
  const nlohmann::json& spec = *ctx.spec;
  const nlohmann::json program = spec.contains("program") && spec["program"].is_object()
                                     ? spec["program"]
                                     : nlohmann::json::object();
  if (ctx.artifact.empty() || access(ctx.artifact.c_str(), X_OK) != 0) {
    out.status = Status::Infra("the program's executable is missing: '" + ctx.artifact.string() + "'");
    return out;
  }
  auto dir = TempDir::Create("job_" + ctx.job_id + "_", ctx.work_dir);
  if (!dir.ok()) {
    out.status = dir.status();
    return out;
  }

  // The program runs from a copy inside its own directory: the sandbox hides
  // the host's /tmp (where artifacts may live) and the cached original must
  // not be modifiable by the job.
  const std::filesystem::path exe = dir->path() / "program";
  std::error_code ec;
  std::filesystem::copy_file(ctx.artifact, exe, ec);
  if (!ec) {
    std::filesystem::permissions(exe, std::filesystem::perms::owner_all | std::filesystem::perms::group_read |
                                          std::filesystem::perms::group_exec, ec);
  }
  if (ec) {
    out.status = Status::Infra("cannot copy the program into its job directory: " + ec.message());
    return out;
  }

  ProcessOptions p;
  p.argv.push_back(exe.string());
  if (auto it = program.find("argv"); it != program.end() && it->is_array()) {
    for (const auto& a : *it) {
      if (a.is_string()) p.argv.push_back(a.get<std::string>());
    }
  }
  p.cwd = dir->path();
  p.env = ProgramEnv(ctx, program, dir->path());
  // Per-kernel GPU times: the driver loads the injection library into the
  // program. It is copied into the job directory so any sandbox can read it.
  const std::filesystem::path cupti_out = dir->path() / "cupti.json";
  bool profiled = false;
  if (auto lib = CuptiLibrary(); ctx.device >= 0 && !lib.empty()) {
    auto local = dir->path() / "libassay_cupti.so";
    std::filesystem::copy_file(lib, local, ec);
    if (!ec) {
      (*p.env)["CUDA_INJECTION64_PATH"] = local.string();
      (*p.env)["ASSAY_CUPTI_OUT"] = cupti_out.string();
      profiled = true;
    }
  }
  p.stdin_data = program.value("stdin", std::string());
  p.timeout_ms = ctx.timeout_ms;
  p.stdout_limit = static_cast<size_t>(program.value("stdout_limit_bytes", kDefaultOutputLimit));
  p.stderr_limit = static_cast<size_t>(program.value("stderr_limit_bytes", kDefaultOutputLimit));
  p.cancel = ctx.cancel;
  p.sandbox.enabled = ctx.sandbox;
  p.sandbox.writable_dir = dir->path();
  // The server kills this group too when it has to kill the worker.
  p.on_start = [&](int pid) {
    if (ctx.progress) ctx.progress("running", {{"pgid", pid}});
  };

  auto r = RunProcess(p);
  if (ctx.progress) ctx.progress("finished", nlohmann::json::object());
  if (!r.ok()) {
    out.status = r.status();
    return out;
  }
  const ProcessResult& pr = *r;
  out.result["program"] = {
      {"exit_code", pr.signal == 0 ? nlohmann::json(pr.exit_code) : nlohmann::json(nullptr)},
      {"signal", pr.signal == 0 ? nlohmann::json(nullptr) : nlohmann::json(pr.signal)},
      {"signal_name", pr.signal == 0 ? nlohmann::json(nullptr) : nlohmann::json(SignalName(pr.signal))},
      {"stdout", SanitizeUtf8(pr.stdout_data)},
      {"stderr", SanitizeUtf8(pr.stderr_data)},
      {"stdout_bytes", pr.stdout_bytes},
      {"stdout_truncated", pr.stdout_truncated},
      {"stderr_bytes", pr.stderr_bytes},
      {"stderr_truncated", pr.stderr_truncated},
      {"duration_ms", pr.duration_ms},
  };
  if (profiled) AttachKernelReport(cupti_out, &out.result["program"]);
  if (pr.cancelled) {
    out.status = Status::Cancelled("cancelled while the program was running");
  } else if (pr.timed_out) {
    out.status = Status::Timeout("program timed out after " + fmt::format("{:g}", ctx.timeout_ms / 1000.0) + " s");
  } else if (pr.signal != 0) {
    out.status = Status::RuntimeError(WithGpuHint(ctx, "program killed by " + SignalName(pr.signal)));
  } else if (pr.exit_code != 0) {
    out.status = Status::RuntimeError(WithGpuHint(ctx, "program exited with code " + std::to_string(pr.exit_code)));
  }
  return out;
}

}  // namespace assay

#include "worker/python_runner.h"

#include <deque>
#include <mutex>
#include <optional>

#include "common/log.h"
#include "common/util.h"
#include "cupti/kernel_report.h"
#include "gpu/devices.h"
#include "proc/sandbox.h"
#include "spec/job_spec.h"
#include "worker/python_request.h"
#include "worker/python_result.h"

extern char** environ;

namespace assay {
namespace {

using nlohmann::json;

std::filesystem::path SelfDir() {
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::path() : self.parent_path();
}

std::map<std::string, std::string> InheritedEnv() {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string kv = *e;
    auto eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  env.erase("ASSAY_WORKER_HEARTBEAT_MS");
  return env;
}

std::filesystem::path ResolveInterpreter(const std::filesystem::path& interpreter) {
  const char* path = getenv("PATH");
  // Not canonicalized: a venv's python must keep its own path to find pyvenv.cfg.
  return FindExecutable(interpreter.string(), path ? path : "/usr/bin:/bin");
}

std::filesystem::path HarnessFor(const PythonWorkerOptions& options) {
  return options.harness.empty() ? DefaultHarnessPath() : options.harness;
}

// The GPU this worker runs on (for l2_bytes and TORCH_CUDA_ARCH_LIST), looked up once.
const GpuInfo* WorkerGpu(int device) {
  static const GpuInventory inv = ListGpus();
  for (const auto& g : inv.gpus)
    if (g.index == device) return &g;
  return nullptr;
}

int64_t SamplesOf(const json& section) {
  if (auto it = section.find("samples_ms"); it != section.end() && it->is_array()) return static_cast<int64_t>(it->size());
  if (auto it = section.find("samples"); it != section.end() && it->is_number_integer()) return it->get<int64_t>();
  return 0;
}

// The CUPTI record of one timed phase, named by the marks in `timing.<which>`.
std::optional<PhaseClock> ClockOf(const std::filesystem::path& cupti_file, const json& doc, const char* which,
                                  std::string* error) {
  auto timing = doc.find("timing");
  if (timing == doc.end() || !timing->is_object()) return std::nullopt;
  auto section = timing->find(which);
  if (section == timing->end() || !section->is_object()) return std::nullopt;
  auto [begin, end] = MarksOf(*section, std::string_view(which) == "reference");
  auto s = SummarizePhase(cupti_file, begin, end, {kL2FlushKernelName, kBlockingKernelName});
  if (!s.ok()) {
    if (error->empty()) *error = s.status().message();
    return std::nullopt;
  }
  if (!s->begin_found || !s->end_found) {
    if (error->empty()) *error = "the marks " + begin + "/" + end + " are not in the CUPTI record";
    return std::nullopt;
  }
  return PhaseClock{std::move(s).value(), SamplesOf(*section)};
}

// A harness process in the job directory `dir`: the harness copied into it
// (every sandbox mode lets the process read it there), `<python> -I -B
// DIR/assay_harness.py args...`, cwd and HOME/TMPDIR = dir, `env` over the
// inherited environment, writable: dir and `writable`.
Result<ProcessOptions> HarnessProcess(const std::filesystem::path& interpreter, const std::filesystem::path& harness,
                                      const std::filesystem::path& dir, const std::vector<std::string>& args,
                                      const std::map<std::string, std::string>& env, bool sandbox,
                                      std::vector<std::filesystem::path> writable) {
  const auto copy = dir / kHarnessFileName;
  std::error_code ec;
  std::filesystem::copy_file(harness, copy, std::filesystem::copy_options::overwrite_existing, ec);
  if (ec) return Status::Infra("cannot copy the harness " + harness.string() + ": " + ec.message());
  ProcessOptions p;
  p.argv = {interpreter.string(), "-I", "-B", copy.string()};
  p.argv.insert(p.argv.end(), args.begin(), args.end());
  p.cwd = dir;
  p.env = InheritedEnv();
  for (const auto& [k, v] : env) (*p.env)[k] = v;
  (*p.env)["HOME"] = (*p.env)["TMPDIR"] = dir.string();
  p.sandbox.enabled = sandbox;
  p.sandbox.writable_dir = dir;
  p.sandbox.extra_writable_dirs = std::move(writable);
  return p;
}

// What the harness left in its job directory.
HarnessOutput ReadHarnessOutput(const std::filesystem::path& dir, ProcessResult process) {
  HarnessOutput out;
  out.process = std::move(process);
  // The job could have replaced result.json by a link to someone else's: no links.
  auto text = ReadJobFile(dir, {"result.json"}, kMaxHarnessResultBytes);
  if (!text.ok()) {
    out.result_error = text.status().error_class() == ErrorClass::kNotFound
                           ? "no result.json"
                           : "result.json: " + text.status().message();
  } else {
    out.result = ParseHarnessResult(std::move(text).value(), &out.result_error);
  }
  return out;
}

// Everything a `run` harness process is started with except its job, which
// arrives on stdin (docs/python-kinds.md, "Standby"). Two equal configs start
// interchangeable processes, so a standby started after one job can take the next.
struct StandbyConfig {
  std::filesystem::path interpreter;  // absolute
  std::filesystem::path harness;
  std::filesystem::path cupti_lib;    // libassay_cupti.so to inject; empty = none
  std::filesystem::path triton_dir;   // shared Triton cache (writable)
  std::string visible_devices;        // CUDA_VISIBLE_DEVICES ("" = none)
  std::string arch_list;              // TORCH_CUDA_ARCH_LIST; empty = unset
  bool sandbox = true;
  bool warm_cuda = false;             // create the CUDA context before the job arrives
  int64_t l2_bytes = 0;               // and load the helper kernels for this L2 size
  bool operator==(const StandbyConfig&) const = default;
};

// A started harness and the job directory it was started in (its cwd, HOME,
// TMPDIR, TORCH_EXTENSIONS_DIR parent, and its only writable place besides
// the Triton cache). Members in this order so the process dies before its directory goes.
struct Standby {
  StandbyConfig config;
  TempDir dir;
  std::unique_ptr<StartedProcess> process;
};

Result<Standby> StartStandby(const StandbyConfig& c, const std::filesystem::path& work_dir) {
  auto dir = TempDir::Create("job_", work_dir);
  if (!dir.ok()) return dir.status();
  const auto& d = dir->path();
  std::error_code ec;
  std::filesystem::create_directories(d / "torch_ext", ec);
  if (ec) return Status::Infra("cannot make " + (d / "torch_ext").string() + ": " + ec.message());
  std::map<std::string, std::string> env;
  if (!c.cupti_lib.empty()) {
    // A copy inside the job directory, as the harness's: every sandbox mode can load it.
    std::filesystem::copy_file(c.cupti_lib, d / "libassay_cupti.so", ec);
    if (ec) return Status::Infra("cannot copy " + c.cupti_lib.string() + ": " + ec.message());
    // The second clock: the injection library records every kernel and the harness's marks.
    env["CUDA_INJECTION64_PATH"] = (d / "libassay_cupti.so").string();
    env["ASSAY_CUPTI_OUT"] = (d / "cupti.json").string();
  }
  env["CUDA_VISIBLE_DEVICES"] = c.visible_devices;
  // load_inline builds that the prepare step's cache lacks land in the job's own directory.
  env["TORCH_EXTENSIONS_DIR"] = (d / "torch_ext").string();
  env["TRITON_CACHE_DIR"] = c.triton_dir.string();
  if (!c.arch_list.empty()) env["TORCH_CUDA_ARCH_LIST"] = c.arch_list;
  if (c.warm_cuda) env["ASSAY_HARNESS_WARM"] = "cuda";
  if (c.l2_bytes > 0) env["ASSAY_HARNESS_L2_BYTES"] = std::to_string(c.l2_bytes);
  auto p = HarnessProcess(c.interpreter, c.harness, d, {"standby"}, env, c.sandbox, {c.triton_dir});
  if (!p.ok()) return p.status();
  p->stdin_pipe = true;
  auto process = StartProcess(*p);
  if (!process.ok()) return process.status();
  return Standby{c, std::move(dir).value(), std::move(process).value()};
}

// The worker's waiting harnesses, oldest first (the likeliest to be ready).
// The worker runs one job at a time; the mutex only guards against tests that
// call the runner from several threads.
std::mutex g_standby_mu;
std::deque<Standby> g_standbys;  // GUARDED_BY(g_standby_mu)

// The oldest standby that fits `c` and still waits, else a process started now.
// Standbys that exited or were started for another config are discarded.
Result<Standby> TakeStandby(const StandbyConfig& c, const std::filesystem::path& work_dir, bool* prestarted) {
  std::deque<Standby> waiting;
  {
    std::lock_guard<std::mutex> lock(g_standby_mu);
    waiting.swap(g_standbys);
  }
  std::optional<Standby> taken;
  std::deque<Standby> keep;
  while (!waiting.empty()) {
    Standby s = std::move(waiting.front());
    waiting.pop_front();
    const bool usable = s.config == c && !s.process->Exited();
    if (usable && !taken) {
      taken = std::move(s);
    } else if (usable) {
      keep.push_back(std::move(s));
    } else {
      log::Event("worker.python_standby_discarded")
          .Kv("reason", s.config == c ? "exited while waiting" : "configuration changed").Info();
    }  // a discarded one is killed and its directory removed here
  }
  if (!keep.empty()) {
    std::lock_guard<std::mutex> lock(g_standby_mu);
    for (auto& s : keep) g_standbys.push_back(std::move(s));
  }
  *prestarted = taken.has_value();
  if (taken) return std::move(*taken);
  return StartStandby(c, work_dir);
}

// Starts processes until `count` wait, so that they import torch while this job runs.
void FillStandbys(const StandbyConfig& c, const std::filesystem::path& work_dir, int count) {
  while (true) {
    {
      std::lock_guard<std::mutex> lock(g_standby_mu);
      if (static_cast<int>(g_standbys.size()) >= count) return;
    }
    auto s = StartStandby(c, work_dir);
    if (!s.ok()) {
      log::Event("worker.python_standby_failed").Kv("error", s.status().message()).Warn();
      return;
    }
    std::lock_guard<std::mutex> lock(g_standby_mu);
    g_standbys.push_back(std::move(s).value());
  }
}

}  // namespace

void ReleasePythonStandby() {
  std::deque<Standby> waiting;
  {
    std::lock_guard<std::mutex> lock(g_standby_mu);
    waiting.swap(g_standbys);
  }
  // Destroyed here, outside the lock: each process group killed, then its directory removed.
}

std::filesystem::path DefaultHarnessPath() { return SelfDir() / kHarnessFileName; }

PythonProbe RunPythonProbe(const PythonWorkerOptions& options, int device, const std::filesystem::path& harness,
                           const std::filesystem::path& scratch_dir) {
  PythonProbe p;
  p.harness = harness;
  p.interpreter = ResolveInterpreter(options.interpreter);
  if (p.interpreter.empty()) {
    p.error = "no Python interpreter '" + options.interpreter.string() + "' on PATH";
    return p;
  }
  std::error_code ec;
  if (!std::filesystem::is_regular_file(harness, ec)) {
    p.error = "the harness " + harness.string() + " is missing";
    return p;
  }
  if (options.device == "cuda" && device < 0) {
    p.error = "this worker has no GPU (start the server with --python-device cpu to run the Python kinds on the "
              "CPU, for tests)";
    return p;
  }
  auto scratch = TempDir::Create("python_probe_", scratch_dir);
  if (!scratch.ok()) {
    p.error = scratch.status().message();
    return p;
  }
  ProcessOptions po;
  po.argv = {p.interpreter.string(), "-I", "-B", harness.string(), "--probe"};
  po.cwd = scratch->path();
  po.env = InheritedEnv();
  (*po.env)["CUDA_VISIBLE_DEVICES"] = options.device == "cuda" ? std::to_string(device) : "";
  (*po.env)["HOME"] = (*po.env)["TMPDIR"] = scratch->path().string();
  po.timeout_ms = kPythonProbeTimeoutMs;
  po.stdout_limit = 64 << 10;
  po.stderr_limit = 64 << 10;
  auto r = RunProcess(po);
  if (!r.ok()) {
    p.error = r.status().message();
    return p;
  }
  if (r->timed_out) {
    p.error = p.interpreter.string() + " --probe timed out after " + std::to_string(kPythonProbeTimeoutMs / 1000) + " s";
    return p;
  }
  // The probe's JSON is its last line: imports may print before it.
  std::string out = r->stdout_data;
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  std::string last = out.substr(out.rfind('\n') == std::string::npos ? 0 : out.rfind('\n') + 1);
  json info = json::parse(last, nullptr, false);
  if (r->exit_code != 0 || info.is_discarded() || !info.is_object()) {
    std::string err = SanitizeUtf8(r->stderr_data);
    size_t end = err.find_last_not_of(" \n");
    err = end == std::string::npos ? "" : err.substr(0, end + 1);
    err = err.substr(err.rfind('\n') == std::string::npos ? 0 : err.rfind('\n') + 1);
    p.error = p.interpreter.string() + " --probe failed (exit " + std::to_string(r->exit_code) + ")" +
              (err.empty() ? "" : ": " + TruncateUtf8(err, 300));
    return p;
  }
  p.info = info;
  auto torch = info.find("torch");
  if (torch == info.end() || !torch->is_string()) {
    auto e = info.find("torch_error");
    p.error = "torch does not import in " + p.interpreter.string() +
              (e != info.end() && e->is_string() ? ": " + e->get<std::string>() : "");
    return p;
  }
  auto cuda = info.find("cuda");
  if (options.device == "cuda" && cuda != info.end() && cuda->is_boolean() && !cuda->get<bool>()) {
    p.error = "torch " + torch->get<std::string>() + " in " + p.interpreter.string() + " sees no CUDA device";
    return p;
  }
  auto triton = info.find("triton");
  p.triton = triton != info.end() && triton->is_string();
  p.ok = true;
  return p;
}

const PythonProbe& ProbePython(const PythonWorkerOptions& options, int device, const std::filesystem::path& scratch_dir) {
  static std::once_flag once;
  static PythonProbe probe;
  std::call_once(once, [&] {
    int64_t t0 = MonotonicMs();
    // A worker replaced after a crash takes its predecessor's answer instead of
    // importing torch again (seconds); `assay serve` removes the file at start.
    const auto cache = scratch_dir / kPythonProbeCacheFile;
    const json key = {{"interpreter", options.interpreter.string()}, {"harness", HarnessFor(options).string()},
                      {"device", options.device}, {"ordinal", device}};
    if (auto text = ReadFile(cache, 1 << 20); text.ok()) {
      json c = json::parse(*text, nullptr, false);
      if (c.is_object() && c.value("key", json()) == key && c.contains("probe") && c["probe"].is_object()) {
        probe.ok = true;
        probe.info = c["probe"];
        probe.interpreter = c.value("resolved", "");
        probe.harness = HarnessFor(options);
        probe.triton = probe.info.contains("triton") && probe.info["triton"].is_string();
        log::Event("worker.python_probe").Kv("cached", true).Kv("ok", true).Info();
        return;
      }
    }
    probe = RunPythonProbe(options, device, HarnessFor(options), scratch_dir);
    if (probe.ok)
      (void)WriteFileAtomic(cache, json({{"key", key}, {"probe", probe.info}, {"resolved", probe.interpreter.string()}}).dump());
    auto ev = log::Event("worker.python_probe");
    ev.Kv("interpreter", options.interpreter.string()).Kv("device", options.device).Kv("ok", probe.ok)
        .Kv("ms", MonotonicMs() - t0);
    if (probe.ok) {
      ev.Kv("info", probe.info.dump()).Info();
    } else {
      ev.Kv("error", probe.error).Warn();
    }
  });
  return probe;
}

std::vector<std::string> PythonKinds(const PythonProbe& probe) {
  if (!probe.ok) return {};
  std::vector<std::string> kinds = {"torch", "torch_cuda", "kernelbench"};
  if (probe.triton) kinds.push_back("triton");
  return kinds;
}

json PythonHelloJson(const PythonWorkerOptions& options, const PythonProbe& probe) {
  return {{"interpreter", probe.interpreter.empty() ? options.interpreter.string() : probe.interpreter.string()},
          {"device", options.device},
          {"ok", probe.ok},
          {"probe", probe.info.is_null() ? json(nullptr) : probe.info},
          {"error", probe.ok ? json(nullptr) : json(probe.error)},
          {"kinds", PythonKinds(probe)}};
}

Result<HarnessOutput> RunHarness(const HarnessInvocation& inv) {
  auto p = HarnessProcess(inv.interpreter, inv.harness, inv.dir,
                          {inv.mode, "--request", (inv.dir / "request.json").string(), "--result",
                           (inv.dir / "result.json").string()},
                          inv.env, inv.sandbox, inv.writable_dirs);
  if (!p.ok()) return p.status();
  p->timeout_ms = inv.timeout_ms;
  p->stdout_limit = p->stderr_limit = inv.output_limit;
  p->cancel = inv.cancel;
  p->nice = inv.nice;
  p->on_start = inv.on_start;
  auto r = RunProcess(*p);
  if (!r.ok()) return r.status();
  return ReadHarnessOutput(inv.dir, std::move(r).value());
}

WorkOutcome RunPythonJob(const RunContext& ctx) {
  WorkOutcome out;
  const std::string kind = ctx.spec->value("kind", "");
  if (!ctx.python || ctx.python->interpreter.empty()) {
    out.status = Status::Rejected("this worker has no Python interpreter; kind '" + kind + "' cannot run here", "kind");
    return out;
  }
  const PythonWorkerOptions& py = *ctx.python;
  const PythonProbe& probe = ProbePython(py, ctx.device, ctx.work_dir);
  if (!probe.ok) {
    out.status = Status::Rejected("this worker cannot run kind '" + kind + "': " + probe.error, "kind");
    return out;
  }
  auto spec = ParseJobSpecJson(*ctx.spec);
  if (!spec.ok()) {
    out.status = Status::Infra("the job's spec no longer parses: " + spec.status().ToString());
    return out;
  }
  if (spec->kind == JobKind::kTriton && !probe.triton) {
    out.status = Status::Rejected("triton does not import in " + probe.interpreter.string(), "kind");
    return out;
  }
  const bool on_gpu = py.device == "cuda";
  const GpuInfo* gpu = on_gpu ? WorkerGpu(ctx.device) : nullptr;
  if (on_gpu && !gpu) {
    out.status = Status::Infra("worker has no GPU " + std::to_string(ctx.device));
    out.exit_worker = true;
    return out;
  }
  auto source = PythonCandidateSource(*spec, ctx.blob_files);
  if (!source.ok()) {
    out.status = source.status();
    return out;
  }
  const std::string arch_list = gpu ? TorchArchList(gpu->arch()) : "";
  // Read-only for the run: the prepare step built into it (docs/python-kinds.md, "Extension builds").
  const auto ext_cache = py.cache_dir / "torch_ext" / PythonExtensionKey(*source, probe.info, arch_list);
  StandbyConfig config;
  config.interpreter = probe.interpreter;
  config.harness = probe.harness;
  config.triton_dir = py.cache_dir / "triton";
  config.visible_devices = on_gpu ? std::to_string(ctx.device) : "";
  config.arch_list = arch_list;
  config.sandbox = ctx.sandbox;
  config.warm_cuda = on_gpu;
  config.l2_bytes = gpu ? gpu->l2_bytes : 0;
  std::error_code ec;
  if (auto lib = SelfDir() / "libassay_cupti.so"; on_gpu && std::filesystem::exists(lib, ec)) config.cupti_lib = lib;
  std::filesystem::create_directories(config.triton_dir, ec);
  if (ec) {
    out.status = Status::Infra("cannot make the Triton cache " + config.triton_dir.string() + ": " + ec.message());
    return out;
  }

  const bool profiled = !config.cupti_lib.empty();
  PythonRequestOptions ro;
  ro.mode = "run";
  ro.device = py.device;
  ro.l2_bytes = gpu ? gpu->l2_bytes : 0;
  ro.cupti_marks = profiled;
  ro.extension_cache = ext_cache;

  // A standby killed while it waited can be handed the job before its death
  // shows (SIGKILL waits for a process in the GPU driver): a process that dies
  // before writing `accepted` never saw the job, which runs again once, in a
  // process started for it.
  bool prestarted = false;
  std::optional<Standby> standby;
  ProcessResult process;
  for (int attempt = 0;; ++attempt) {
    auto s = attempt == 0 ? TakeStandby(config, ctx.work_dir, &prestarted) : StartStandby(config, ctx.work_dir);
    if (!s.ok()) {
      out.status = s.status();
      return out;
    }
    standby = std::move(s).value();
    const std::filesystem::path dir = standby->dir.path();
    if (auto req = WritePythonJob(*spec, dir, ctx.blob_files, ro); !req.ok()) {
      out.status = req.status();
      return out;
    }
    // The next jobs' processes import torch while this one runs.
    if (attempt == 0) FillStandbys(config, ctx.work_dir, py.standby);

    ProcessOptions job;
    job.stdin_data = json({{"mode", "run"}, {"request", (dir / "request.json").string()},
                           {"result", (dir / "result.json").string()}})
                         .dump() +
                     "\n";
    job.timeout_ms = ctx.timeout_ms;
    job.cancel = ctx.cancel;
    job.stdout_limit = job.stderr_limit = 1 << 20;
    // The server kills this group too when it has to kill the worker.
    job.on_start = [&](int pid) {
      if (ctx.progress) ctx.progress("running", {{"pgid", pid}});
    };
    auto r = SuperviseProcess(std::move(standby->process), job);
    if (!r.ok()) {
      if (ctx.progress) ctx.progress("finished", json::object());
      out.status = r.status();
      return out;
    }
    process = std::move(r).value();
    const bool died = process.signal != 0 || process.exit_code != 0;
    if (attempt == 0 && prestarted && died && !process.cancelled && !process.timed_out &&
        !std::filesystem::exists(dir / "accepted", ec)) {
      log::Event("worker.python_standby_lost").Kv("job", ctx.job_id).Kv("signal", process.signal)
          .Kv("exit_code", process.exit_code).Warn();
      prestarted = false;
      continue;
    }
    break;
  }
  if (ctx.progress) ctx.progress("finished", json::object());
  const std::filesystem::path dir = standby->dir.path();
  const auto cupti_out = dir / "cupti.json";
  const int64_t t_read = MonotonicMs();
  HarnessOutput harness = ReadHarnessOutput(dir, std::move(process));

  HarnessRun run;
  run.process = std::move(harness.process);
  run.result = std::move(harness.result);
  run.result_error = std::move(harness.result_error);
  run.dir = dir;
  run.timeout_ms = ctx.timeout_ms;
  run.outputs = spec->outputs;
  run.helper_name_in_source = MentionsHelperKernel(*source);
  if (profiled && run.result.is_object()) {
    run.candidate_clock = ClockOf(cupti_out, run.result, "candidate", &run.cupti_error);
    run.reference_clock = ClockOf(cupti_out, run.result, "reference", &run.cupti_error);
  } else if (on_gpu && !profiled) {
    run.cupti_error = "libassay_cupti.so is not installed next to the assay binary";
  }
  out = MapHarnessRun(run);
  out.result["python"]["interpreter"] = probe.interpreter.string();
  out.result["python"]["device"] = py.device;
  // Started before the job arrived (a standby), or for it.
  out.result["python"]["prestarted"] = prestarted;
  // The worker's own share after the process ended: result.json, outputs, the CUPTI record.
  out.result["python"]["worker_ms"] = MonotonicMs() - t_read;
  if (gpu) out.result["gpu"] = ToJson(*gpu);
  return out;
}

}  // namespace assay

#include "sched/serve.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "api/server.h"
#include "common/log.h"
#include "common/util.h"
#include "compile/compiler.h"
#include "gpu/devices.h"
#include "sched/job_service_impl.h"
#include "sched/scheduler.h"
#include "store/store.h"
#include "worker/python_request.h"
#include "worker/python_runner.h"

namespace assay {
namespace {

std::filesystem::path SelfExe() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::path("assay") : p;
}

Capabilities ServerCapabilities(const GpuInventory& inv) {
  Capabilities caps;
  caps.has_gpu = !inv.gpus.empty();
  for (const auto& g : inv.gpus) caps.gpu_names.push_back(g.name);
  // Kinds this build runs; the kernel kinds need a GPU (CheckSupported says so
  // plainly on a server without one). The Python kinds are added per submit
  // from the workers' hellos (JobServiceImpl::CapabilitiesFor).
  caps.supported = {JobKind::kCompile, JobKind::kCudaProgram, JobKind::kCuda,
                    JobKind::kCubin, JobKind::kPtx, JobKind::kFatbin};
  return caps;
}

std::filesystem::path PythonInterpreter(const ServeOptions& options) {
  if (options.python == "none") return {};
  if (!options.python.empty()) return options.python;
  const char* env = std::getenv("ASSAY_PYTHON");
  return env && *env ? std::filesystem::path(env) : std::filesystem::path("python3");
}

}  // namespace

int ServeMain(const ServeOptions& options) {
  log::Configure(log::ParseLevel(options.log_level), options.log_json);
  // Writes to a dead worker or client must come back as EPIPE, not kill the server.
  ::signal(SIGPIPE, SIG_IGN);
  // SIGINT/SIGTERM are taken by one thread (sigwait); block them everywhere else.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  std::error_code ec;
  std::filesystem::create_directories(options.data_dir, ec);
  if (ec) {
    std::fprintf(stderr, "assay serve: cannot create data dir %s: %s\n", options.data_dir.c_str(),
                 ec.message().c_str());
    return 3;
  }
  auto store = OpenSqliteStore(options.data_dir / "assay.db");
  if (!store.ok()) {
    std::fprintf(stderr, "assay serve: %s\n", store.status().ToString().c_str());
    return 3;
  }
  auto recovered = RecoverInterruptedJobs(**store, options.max_attempts);
  if (!recovered.ok()) {
    std::fprintf(stderr, "assay serve: recovery failed: %s\n", recovered.status().ToString().c_str());
    return 3;
  }

  GpuInventory inv = ListGpus();
  if (inv.gpus.empty())
    log::Event("serve.no_gpu").Kv("reason", inv.status.message())
        .Kv("note", "kernels need a GPU; compile and cuda_program jobs still run").Warn();
  for (const auto& g : inv.gpus)
    log::Event("serve.gpu").Kv("index", g.index).Kv("name", g.name).Kv("arch", g.arch()).Info();

  CompilerOptions copts;
  copts.cache_dir = options.data_dir / "cache";
  Compiler compiler(copts);

  std::filesystem::path self = SelfExe();
  // The Python kinds' caches live next to the compile cache; the workers and
  // the prepare step share them (docs/python-kinds.md, "Caching and throughput").
  PythonWorkerOptions python;
  python.interpreter = PythonInterpreter(options);
  python.device = options.python_device;
  python.standby = options.python_standby;
  python.cache_dir = options.data_dir / "python-cache";
  if (!python.interpreter.empty()) {
    std::filesystem::create_directories(python.cache_dir, ec);
    log::Event("serve.python").Kv("interpreter", python.interpreter.string()).Kv("device", python.device).Info();
  }
  std::vector<WorkerOptions> workers;
  auto add_worker = [&](int device) {
    WorkerOptions w;
    w.self_exe = self;
    w.device = device;
    w.work_dir = options.data_dir / "work" / ("dev" + std::to_string(device));
    std::filesystem::create_directories(w.work_dir, ec);
    // The interpreter may have changed since the last run: probe it afresh.
    std::filesystem::remove(w.work_dir / kPythonProbeCacheFile, ec);
    w.sandbox = options.sandbox;
    w.python = python;
    // The worker probes the interpreter before its hello.
    if (!python.interpreter.empty()) w.start_timeout_ms = std::max(w.start_timeout_ms, kPythonProbeTimeoutMs + 30'000);
    workers.push_back(std::move(w));
  };
  if (inv.gpus.empty()) {
    add_worker(-1);
  } else {
    for (const auto& g : inv.gpus) add_worker(g.index);
  }

  SchedulerOptions sopts;
  sopts.self_exe = self;
  sopts.compile_threads = options.compile_threads > 0 ? options.compile_threads
                                                      : static_cast<int>(std::thread::hardware_concurrency());
  sopts.max_attempts = options.max_attempts;
  sopts.files_dir = options.data_dir / "files";
  std::filesystem::create_directories(sopts.files_dir, ec);
  if (!inv.gpus.empty()) sopts.default_arch = inv.gpus[0].arch();
  if (!python.interpreter.empty()) {
    sopts.python.interpreter = python.interpreter;
    sopts.python.harness = DefaultHarnessPath();
    sopts.python.cache_dir = python.cache_dir;
    sopts.python.work_dir = options.data_dir / "work" / "prepare";
    sopts.python.device = python.device;
    // As the workers compute it: their GPU's arch, none on the CPU.
    if (python.device == "cuda" && !inv.gpus.empty()) sopts.python.arch_list = TorchArchList(inv.gpus[0].arch());
    sopts.python.sandbox = options.sandbox;
  }

  JobServiceImpl service(**store, inv, ServerCapabilities(inv));
  Scheduler scheduler(**store, compiler, std::move(workers), sopts,
                      [&service](const JobRecord& r) { service.OnTransition(r); });
  service.SetScheduler(&scheduler);
  for (const auto& job : *recovered) scheduler.Enqueue(job);
  scheduler.Start();

  ApiOptions aopts;
  aopts.host = options.host;
  aopts.port = options.port;
  aopts.no_auth = options.no_auth;
  aopts.max_request_bytes = options.max_request_bytes;
  aopts.max_sse_streams = options.max_sse_streams;
  ApiServer api(service, aopts);
  auto port = api.Bind();
  if (!port.ok()) {
    std::fprintf(stderr, "assay serve: %s\n", port.status().ToString().c_str());
    scheduler.Stop();
    return port.status().error_class() == ErrorClass::kRejected ? 2 : 3;
  }
  if (!options.port_file.empty()) (void)WriteFileAtomic(options.port_file, std::to_string(*port) + "\n");
  log::Event("serve.listening").Kv("url", "http://" + options.host + ":" + std::to_string(*port))
      .Kv("auth", options.no_auth ? "off" : "api-key").Kv("recovered_jobs", recovered->size()).Info();
  std::printf("assay: listening on http://%s:%d\n", options.host.c_str(), *port);
  std::fflush(stdout);

  std::thread waiter([&] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    log::Event("serve.stopping").Kv("signal", sig).Info();
    api.Stop();
  });
  api.Serve();
  // Serve() may also return on its own (listen failure): release the signal thread.
  pthread_kill(waiter.native_handle(), SIGTERM);
  waiter.join();
  scheduler.Stop();
  log::Event("serve.stopped").Info();
  return 0;
}

}  // namespace assay

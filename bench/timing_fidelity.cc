// Timing fidelity benchmark (docs/measurement.md, "Fidelity"):
//  1. spin kernels of known length (10 us, 100 us, 1 ms): known vs Assay's median;
//  2. real kernels from ~2 us to ~10 ms (vector add at several sizes, a naive
//     matmul): Assay cold and hot medians vs a plain CUDA-event loop (events
//     back to back around each launch, no flush, no blocking kernel);
//     Assay's medians come from CUPTI (timing.source "cupti"); the event
//     medians of the same samples are recorded beside them;
//  3. run-to-run spread of Assay's cold median over 5 repeated measurements;
//  4. the device peaks (MeasureDevicePeaks).
// Prints a table and writes JSON (--json PATH). With --ncu-mode it only
// launches each kernel configuration 5 times, for bench/fidelity.sh to run
// under `ncu` and compare per-kernel durations.
//
// Usage: assay_bench_timing [--json PATH] [--ncu-mode] [--repeats N]
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpu/cuda_driver.h"
#include "gpu/cuda_handles.h"
#include "gpu/devices.h"
#include "measure/helper_kernels.h"
#include "measure/reference_kernels.h"
#include "measure/stats.h"
#include "measure/timer.h"

namespace assay {
namespace {

const CudaDriverApi& Cu() { return **CudaDriver(); }

struct Config {
  std::string label;
  std::string kernel;
  unsigned grid[3] = {1, 1, 1};
  unsigned block[3] = {1, 1, 1};
  std::vector<CUdeviceptr> ptrs;   // pointer arguments, in order
  unsigned long long u64 = 0;      // trailing 64-bit scalar (n, ns), when used
  int i32 = 0;                     // trailing int scalar (matmul n), when used
  bool has_u64 = false, has_i32 = false;
  double known_ms = 0;             // spin kernels only
  CUfunction fn = nullptr;
};

Status Launch(Config& c, CUstream s) {
  std::vector<void*> args;
  for (auto& p : c.ptrs) args.push_back(&p);
  if (c.has_u64) args.push_back(&c.u64);
  if (c.has_i32) args.push_back(&c.i32);
  CUresult r = Cu().cuLaunchKernel(c.fn, c.grid[0], c.grid[1], c.grid[2], c.block[0], c.block[1], c.block[2], 0, s,
                                   args.data(), nullptr);
  return r == CUDA_SUCCESS ? Status::Ok() : CuStatus(ErrorClass::kLaunchError, r, "cuLaunchKernel");
}

// The plain loop most harnesses use: events back to back around each launch,
// all queued from the host as it goes, one sync at the end, no L2 flush.
Result<double> PlainEventLoopMedian(Config& c, CUstream s, int warmup, int reps) {
  std::vector<Event> a, b;
  for (int i = 0; i < reps; ++i) {
    a.push_back(Event::Create().value());
    b.push_back(Event::Create().value());
  }
  for (int i = 0; i < warmup; ++i) ASSAY_RETURN_IF_ERROR(Launch(c, s));
  for (int i = 0; i < reps; ++i) {
    Cu().cuEventRecord(a[i].get(), s);
    ASSAY_RETURN_IF_ERROR(Launch(c, s));
    Cu().cuEventRecord(b[i].get(), s);
  }
  if (CUresult r = Cu().cuStreamSynchronize(s); r != CUDA_SUCCESS)
    return CuStatus(ErrorClass::kRuntimeError, r, "cuStreamSynchronize");
  std::vector<double> ms;
  for (int i = 0; i < reps; ++i) {
    float v = 0;
    Cu().cuEventElapsedTime(&v, a[i].get(), b[i].get());
    ms.push_back(v);
  }
  return Median(ms);
}

// Smallest positive gap between distinct sample values: the event timer's
// effective resolution as seen in this run [ms].
double SmallestStep(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  double step = 0;
  for (size_t i = 1; i < v.size(); ++i) {
    double d = v[i] - v[i - 1];
    if (d > 0 && (step == 0 || d < step)) step = d;
  }
  return step;
}

int Main(int argc, char** argv) {
  std::string json_path;
  bool ncu_mode = false;
  int repeats = 5;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--json") && i + 1 < argc) json_path = argv[++i];
    else if (!std::strcmp(argv[i], "--ncu-mode")) ncu_mode = true;
    else if (!std::strcmp(argv[i], "--repeats") && i + 1 < argc) repeats = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: assay_bench_timing [--json PATH] [--ncu-mode] [--repeats N]\n");
      return 2;
    }
  }
  GpuInventory inv = ListGpus();
  if (inv.gpus.empty()) {
    std::fprintf(stderr, "no GPU: %s\n", inv.status.message().c_str());
    return 1;
  }
  const GpuInfo& gpu = inv.gpus[0];
  auto ctx = PrimaryContext::Create(gpu.index);
  if (!ctx.ok()) return std::fprintf(stderr, "%s\n", ctx.status().ToString().c_str()), 1;
  auto module = CompileAndLoad(gpu, kReferenceKernelsSource, DefaultMeasureCacheDir(), "reference_kernels.cu");
  if (!module.ok()) return std::fprintf(stderr, "%s\n", module.status().ToString().c_str()), 1;

  // Buffers: vector add up to 2^26 floats, matmul up to 2048^2.
  const size_t max_n = size_t{1} << 26;
  auto a = DeviceBuffer::Create(max_n * 4), b = DeviceBuffer::Create(max_n * 4), c = DeviceBuffer::Create(max_n * 4);
  if (!a.ok() || !b.ok() || !c.ok()) return std::fprintf(stderr, "out of device memory\n"), 1;
  Cu().cuMemsetD32(a->get(), 0x3f800000u, max_n);  // 1.0f
  Cu().cuMemsetD32(b->get(), 0x40000000u, max_n);  // 2.0f

  std::vector<Config> configs;
  for (double us : {10.0, 100.0, 1000.0}) {
    Config s;
    s.label = "spin " + std::to_string(static_cast<int>(us)) + " us";
    s.kernel = "assay_spin";
    s.u64 = static_cast<unsigned long long>(us * 1000);
    s.has_u64 = true;
    s.known_ms = us / 1000;
    configs.push_back(s);
  }
  for (int lg : {12, 16, 20, 24, 26}) {
    Config v;
    v.label = "vector_add 2^" + std::to_string(lg);
    v.kernel = "assay_vector_add";
    const unsigned long long n = 1ull << lg;
    v.grid[0] = static_cast<unsigned>((n + 255) / 256);
    v.block[0] = 256;
    v.ptrs = {a->get(), b->get(), c->get()};
    v.u64 = n;
    v.has_u64 = true;
    configs.push_back(v);
  }
  for (int n : {256, 1024, 2048}) {
    Config m;
    m.label = "naive_matmul " + std::to_string(n);
    m.kernel = "assay_naive_matmul";
    m.grid[0] = m.grid[1] = static_cast<unsigned>((n + 15) / 16);
    m.block[0] = m.block[1] = 16;
    m.ptrs = {a->get(), b->get(), c->get()};
    m.i32 = n;
    m.has_i32 = true;
    configs.push_back(m);
  }
  for (auto& cfg : configs) cfg.fn = *module->Function(cfg.kernel);

  auto stream = Stream::Create();
  if (!stream.ok()) return 1;
  if (ncu_mode) {
    for (auto& cfg : configs)
      for (int i = 0; i < 5; ++i)
        if (Status s = Launch(cfg, stream->get()); !s.ok()) return std::fprintf(stderr, "%s\n", s.ToString().c_str()), 1;
    return Cu().cuStreamSynchronize(stream->get()) == CUDA_SUCCESS ? 0 : 1;
  }

  auto timer = KernelTimer::Create(gpu);
  if (!timer.ok()) return std::fprintf(stderr, "%s\n", timer.status().ToString().c_str()), 1;
  nlohmann::json out = {{"gpu", ToJson(gpu)}, {"driver_version", inv.driver_version}, {"kernels", nlohmann::json::array()}};
  std::printf("%-20s %10s %12s %6s %12s %12s %12s %9s %9s %9s %8s %6s\n", "kernel", "known_ms", "cold_med_ms", "src",
              "cold_ev_ms", "hot_med_ms", "plain_ev_ms", "spread%", "ev_sprd%", "noise%", "samples", "conv");
  for (auto& cfg : configs) {
    LaunchFn launch = [&cfg](CUstream s) { return Launch(cfg, s); };
    std::vector<double> medians, event_medians;
    TimingResult first;
    for (int r = 0; r < repeats; ++r) {
      auto res = (*timer)->Measure(launch, TimingOptions{});
      if (!res.ok()) return std::fprintf(stderr, "%s: %s\n", cfg.label.c_str(), res.status().ToString().c_str()), 1;
      medians.push_back(res->stats.median_ms);
      event_medians.push_back(res->event_median_ms);
      if (r == 0) first = std::move(*res);
    }
    auto hot = (*timer)->Measure(launch, TimingOptions{.mode = TimingMode::kHot});
    if (!hot.ok()) return std::fprintf(stderr, "%s\n", hot.status().ToString().c_str()), 1;
    auto plain = PlainEventLoopMedian(cfg, stream->get(), 10, 100);
    if (!plain.ok()) return std::fprintf(stderr, "%s\n", plain.status().ToString().c_str()), 1;
    auto spread_of = [](const std::vector<double>& v) {
      return (*std::max_element(v.begin(), v.end()) - *std::min_element(v.begin(), v.end())) / Median(v);
    };
    const double med_of_medians = Median(medians);
    const double spread = spread_of(medians);
    const double event_med = Median(event_medians);
    const double event_spread = spread_of(event_medians);
    std::printf("%-20s %10.4f %12.5f %6s %12.5f %12.5f %12.5f %9.3f %9.3f %9.3f %8d %6s\n", cfg.label.c_str(),
                cfg.known_ms, med_of_medians, first.source == "cupti" ? "cupti" : "event", event_med,
                hot->stats.median_ms, *plain, spread * 100, event_spread * 100, first.stats.noise * 100,
                first.stats.samples, first.stats.converged ? "yes" : "no");
    if (!first.notes.empty()) std::printf("  notes: %s\n", first.notes.c_str());
    out["kernels"].push_back({{"label", cfg.label},
                              {"kernel", cfg.kernel},
                              {"grid", {cfg.grid[0], cfg.grid[1], cfg.grid[2]}},
                              {"block", {cfg.block[0], cfg.block[1], cfg.block[2]}},
                              {"known_ms", cfg.known_ms},
                              {"cold_medians_ms", medians},
                              {"cold_median_ms", med_of_medians},
                              {"cold_run_to_run_spread", spread},
                              {"cold_source", first.source},
                              {"cold_event_medians_ms", event_medians},
                              {"cold_event_median_ms", event_med},
                              {"cold_event_run_to_run_spread", event_spread},
                              {"hot_median_ms", hot->stats.median_ms},
                              {"hot_source", hot->source},
                              {"hot_event_median_ms", hot->event_median_ms},
                              {"plain_event_loop_median_ms", *plain},
                              {"event_step_ms", SmallestStep(first.samples_ms)},
                              {"first_cold_timing", ToJson(first)}});
  }
  if (!out["kernels"].empty()) {
    const double ovh = out["kernels"][0]["first_cold_timing"]["event_overhead_ms"];
    std::printf("event overhead (empty kernel, hot median): %.5f ms\n", ovh);
    out["event_overhead_ms"] = ovh;
  }
  auto peaks = MeasureDevicePeaks(gpu);
  if (peaks.ok()) {
    std::printf("peaks: DRAM %.3f TB/s, FP32 %.2f TFLOP/s (%s)\n", peaks->dram_bytes_per_s / 1e12,
                peaks->fp32_flops_per_s / 1e12, gpu.name.c_str());
    out["peaks"] = ToJson(*peaks);
  } else {
    std::printf("peaks: %s\n", peaks.status().ToString().c_str());
  }
  if (!json_path.empty()) std::ofstream(json_path) << out.dump(1) << "\n";
  return 0;
}

}  // namespace
}  // namespace assay

int main(int argc, char** argv) { return assay::Main(argc, argv); }

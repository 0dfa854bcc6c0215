#include "measure/timer.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <utility>

#include "gpu/cuda_driver.h"
#include "gpu/cuda_handles.h"
#include "measure/blocking_kernel.h"
#include "measure/cupti_tracer.h"
#include "measure/helper_kernels.h"
#include "measure/launch_match.h"

namespace assay {
namespace {

const CudaDriverApi& Cu() { return **CudaDriver(); }  // REQUIRES: CudaDriver().ok()

// Errors on the measurement stream: the user's kernel faulted, or the context
// is poisoned by an earlier fault. Both are the job's runtime_error.
Status Check(CUresult r, const char* call) {
  return r == CUDA_SUCCESS ? Status::Ok() : CuStatus(ErrorClass::kRuntimeError, r, call);
}

// NVML clocks-event-reason bits that slow the clocks under load: sw power cap,
// hw slowdown, sw/hw thermal slowdown, hw power brake. Idle, application-clock
// settings, sync boost and display clocks are not throttling of a run.
constexpr uint64_t kThrottleMask = 0x4 | 0x8 | 0x20 | 0x40 | 0x80;

bool Throttled(const std::optional<GpuTelemetry>& t) {
  return t && t->throttle_reasons && (*t->throttle_reasons & kThrottleMask) != 0;
}

double WallMs(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - since).count();
}

// The blocking kernel waits at most this long for the host to queue a batch.
// A batch is at most kMaxBatch samples; queueing one takes well under 10 ms.
constexpr double kBlockingTimeoutMs = 1000;

// The timer's own kernels, which are in CUPTI's record but in no sample.
const std::vector<std::string>& HelperKernelNames() {
  static const std::vector<std::string> names = {"assay_blocking_kernel", "assay_empty", "assay_l2_flush"};
  return names;
}

// Stops CUPTI recording on every way out of a measurement.
class TracingScope {
 public:
  explicit TracingScope(CuptiTracer* t) : t_(t) {}
  TracingScope(const TracingScope&) = delete;
  TracingScope& operator=(const TracingScope&) = delete;
  ~TracingScope() {
    if (t_) t_->Disable();
  }

 private:
  CuptiTracer* t_;
};

// Owns a captured graph and its executable instance.
struct CapturedGraph {
  CUgraph graph = nullptr;
  CUgraphExec exec = nullptr;
  CapturedGraph() = default;
  CapturedGraph(const CapturedGraph&) = delete;
  CapturedGraph& operator=(const CapturedGraph&) = delete;
  ~CapturedGraph() {
    if (exec) Cu().cuGraphExecDestroy(exec);
    if (graph) Cu().cuGraphDestroy(graph);
  }
};

class KernelTimerImpl final : public KernelTimer {
 public:
  KernelTimerImpl(GpuInfo gpu, HelperKernels helpers, Stream stream, DeviceBuffer flush,
                  BlockingKernel blocking, std::vector<Event> starts, std::vector<Event> stops,
                  CuptiTracer* tracer, std::string tracer_error)
      : gpu_(std::move(gpu)), helpers_(std::move(helpers)), stream_(std::move(stream)),
        flush_(std::move(flush)), blocking_(std::move(blocking)), starts_(std::move(starts)),
        stops_(std::move(stops)), tracer_(tracer), tracer_error_(std::move(tracer_error)) {}

  CUstream stream() const override { return stream_.get(); }

  Result<TimingResult> Measure(const LaunchFn& launch, const TimingOptions& options) override {
    if (Status s = Validate(options); !s.ok()) return s;
    if (Status s = MeasureOverheadOnce(); !s.ok()) return s;
    TimingResult r;
    r.mode = options.mode;
    r.event_overhead_ms = *overhead_ms_;
    Status s = MeasureInto(launch, options, /*allow_cupti=*/true, r);
    if (!s.ok()) {
      // Never leave work pending: release a held stream and wait it out. The
      // sync's own error (the sticky fault again) adds nothing to `s`.
      blocking_.Release();
      Cu().cuStreamSynchronize(stream_.get());
      return s;
    }
    return r;
  }

 private:
  // The empty kernel's median, hot, once per timer (~20 ms).
  Status MeasureOverheadOnce() {
    if (overhead_ms_) return Status::Ok();
    CUfunction empty = helpers_.empty;
    LaunchFn launch = [empty](CUstream s) {
      return Check(Cu().cuLaunchKernel(empty, 1, 1, 1, 1, 1, 1, 0, s, nullptr, nullptr), "cuLaunchKernel(empty)");
    };
    TimingOptions o;
    o.mode = TimingMode::kHot;
    o.min_samples = 100;
    o.max_samples = 300;
    o.time_budget_ms = 20;
    o.warmup_ms = 5;
    TimingResult r;
    Status s = MeasureInto(launch, o, /*allow_cupti=*/false, r);
    if (!s.ok()) {
      blocking_.Release();
      Cu().cuStreamSynchronize(stream_.get());
      return s;
    }
    overhead_ms_ = r.stats.median_ms;
    return Status::Ok();
  }

  static Status Validate(const TimingOptions& o) {
    if (o.min_samples < 1) return Status::Rejected("timing.min_samples must be >= 1", "timing.min_samples");
    if (o.max_samples < o.min_samples)
      return Status::Rejected("timing.max_samples must be >= timing.min_samples", "timing.max_samples");
    if (!(o.noise_target >= 0)) return Status::Rejected("timing.noise_target must be >= 0", "timing.noise_target");
    if (!(o.time_budget_ms >= 0)) return Status::Rejected("timing.time_budget_ms must be >= 0", "timing.time_budget_ms");
    if (!(o.warmup_ms >= 0)) return Status::Rejected("timing.warmup_ms must be >= 0", "timing.warmup_ms");
    return Status::Ok();
  }

  std::optional<GpuTelemetry> ReadTelemetry() {
    auto nvml = Nvml();
    if (!nvml.ok()) return std::nullopt;
    auto t = (*nvml)->Read(gpu_.uuid);
    if (!t.ok()) return std::nullopt;
    return *t;
  }

  // Reads the whole flush buffer (helper_kernels.cc, assay_l2_flush): L2 is
  // left holding clean lines of it only, so the next sample starts cold and
  // pays no write-back for the flush.
  Status EnqueueFlush(int /*i*/) {
    CUdeviceptr buf = flush_.get();
    unsigned long long n = flush_.size() / 16;
    CUdeviceptr sink = flush_.get();  // written only if the impossible sum appears
    void* params[] = {&buf, &n, &sink};
    const unsigned blocks = static_cast<unsigned>(std::max(1, gpu_.sm_count) * 4);
    return Check(Cu().cuLaunchKernel(helpers_.l2_flush, blocks, 1, 1, 512, 1, 1, 0, stream_.get(), params, nullptr),
                 "cuLaunchKernel(L2 flush)");
  }

  Status Record(CUevent e) { return Check(Cu().cuEventRecord(e, stream_.get()), "cuEventRecord"); }

  Result<double> Elapsed(int pair) {
    float ms = 0;
    if (Status s = Check(Cu().cuEventElapsedTime(&ms, starts_[pair].get(), stops_[pair].get()), "cuEventElapsedTime");
        !s.ok())
      return s;
    return static_cast<double>(ms);
  }

  Status Sync() { return Check(Cu().cuStreamSynchronize(stream_.get()), "cuStreamSynchronize"); }

  // Captures `launch` into a graph on our stream. A failure inside the capture
  // still ends it, so the stream leaves capture mode.
  Status Capture(const LaunchFn& launch, CapturedGraph& g) {
    ASSAY_RETURN_IF_ERROR(
        Check(Cu().cuStreamBeginCapture(stream_.get(), CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), "cuStreamBeginCapture"));
    Status ls = launch(stream_.get());
    CUresult er = Cu().cuStreamEndCapture(stream_.get(), &g.graph);
    if (!ls.ok()) return ls;
    if (er != CUDA_SUCCESS) return CuStatus(ErrorClass::kLaunchError, er, "cuStreamEndCapture (launch not capturable)");
    if (CUresult r = Cu().cuGraphInstantiateWithFlags(&g.exec, g.graph, 0); r != CUDA_SUCCESS)
      return CuStatus(ErrorClass::kLaunchError, r, "cuGraphInstantiateWithFlags");
    return Status::Ok();
  }

  // Time-based warm-up, one synchronised run at a time; also estimates the
  // device time of one sample (flush included when `cold`).
  Status Warmup(const LaunchFn& run, bool cold, const TimingOptions& o, TimingResult& r, double* per_sample_ms) {
    std::vector<double> kernel_ms, flush_ms;
    const auto t0 = std::chrono::steady_clock::now();
    do {
      if (cold) {
        ASSAY_RETURN_IF_ERROR(Record(starts_[0].get()));
        ASSAY_RETURN_IF_ERROR(EnqueueFlush(r.warmup_runs));
        ASSAY_RETURN_IF_ERROR(Record(stops_[0].get()));
      }
      ASSAY_RETURN_IF_ERROR(Record(starts_[1].get()));
      ASSAY_RETURN_IF_ERROR(run(stream_.get()));
      ASSAY_RETURN_IF_ERROR(Record(stops_[1].get()));
      ASSAY_RETURN_IF_ERROR(Sync());
      auto k = Elapsed(1);
      if (!k.ok()) return k.status();
      kernel_ms.push_back(*k);
      if (cold) {
        auto f = Elapsed(0);
        if (!f.ok()) return f.status();
        flush_ms.push_back(*f);
      }
      ++r.warmup_runs;
    } while (WallMs(t0) < o.warmup_ms);
    r.warmup_ms = WallMs(t0);
    // The median of the later half: the first runs carry lazy module loading.
    auto tail = [](const std::vector<double>& v) {
      return Median(std::span<const double>(v).subspan(v.size() / 2));
    };
    *per_sample_ms = tail(kernel_ms) + (cold ? tail(flush_ms) : 0.0);
    return Status::Ok();
  }

  // One batch of `n` samples queued behind the blocking kernel; appends the
  // event-timed samples to *event_ms.
  Status RunBatch(const LaunchFn& run, bool cold, int n, TimingResult& r, std::vector<double>* event_ms) {
    ASSAY_RETURN_IF_ERROR(blocking_.Enqueue(stream_.get(), kBlockingTimeoutMs));
    for (int i = 0; i < n; ++i) {
      if (cold) ASSAY_RETURN_IF_ERROR(EnqueueFlush(i));
      ASSAY_RETURN_IF_ERROR(Record(starts_[i].get()));
      ASSAY_RETURN_IF_ERROR(run(stream_.get()));
      ASSAY_RETURN_IF_ERROR(Record(stops_[i].get()));
    }
    blocking_.Release();
    ASSAY_RETURN_IF_ERROR(Sync());
    if (blocking_.TimedOut()) ++r.blocking_timeouts;
    for (int i = 0; i < n; ++i) {
      auto ms = Elapsed(i);
      if (!ms.ok()) return ms.status();
      event_ms->push_back(*ms);
    }
    ++r.batches;
    return Status::Ok();
  }

  // One synchronised run of the launch alone (no flush, no events) with CUPTI
  // recording: which kernels one launch runs. Ok with *error set when CUPTI
  // could not say; a failing launch is the measurement's error.
  Status ProbeSignature(const LaunchFn& run, CuptiTracer& tracer, std::vector<std::string>* signature,
                        std::string* error) {
    const uint64_t since = tracer.Now();
    ASSAY_RETURN_IF_ERROR(run(stream_.get()));
    ASSAY_RETURN_IF_ERROR(Sync());
    std::vector<KernelSpan> records;
    if (Status c = tracer.Collect(since, 1, HelperKernelNames(), &records); !c.ok()) {
      *error = c.message();
      return Status::Ok();
    }
    *signature = LaunchSignature(records, HelperKernelNames());
    if (signature->empty()) *error = "CUPTI recorded no kernel for one launch";
    return Status::Ok();
  }

  // Samples the statistics use: the non-throttled ones when at least
  // min_samples of them remain, else all.
  static std::vector<double> UsedSamples(const std::vector<double>& samples, const std::vector<bool>& throttled,
                                         int min_samples, bool* dropped) {
    std::vector<double> clean;
    for (size_t i = 0; i < samples.size(); ++i)
      if (!throttled[i]) clean.push_back(samples[i]);
    *dropped = clean.size() < samples.size() && static_cast<int>(clean.size()) >= min_samples;
    return *dropped ? clean : samples;
  }

  // `allow_cupti`: false for the timer's own event-overhead measurement.
  Status MeasureInto(const LaunchFn& launch, const TimingOptions& o, bool allow_cupti, TimingResult& r) {
    std::vector<std::string> notes;
    std::optional<GpuTelemetry> before = ReadTelemetry();
    r.has_telemetry = before.has_value();
    if (before) r.telemetry_before = *before;
    else notes.push_back("NVML telemetry unavailable: throttling not checked");

    const bool cold = o.mode == TimingMode::kCold || (o.mode == TimingMode::kGraph && o.graph_cold);
    if (cold) {
      r.l2_flush_bytes = static_cast<double>(flush_.size());
      if (gpu_.max_persisting_l2_bytes > 0) {
        if (CUresult e = Cu().cuCtxResetPersistingL2Cache(); e != CUDA_SUCCESS)
          notes.push_back("cuCtxResetPersistingL2Cache failed: " + CuResultName(e));
      }
    }

    // CUPTI records from before the warm-up, so the warm-up also absorbs
    // CUPTI's first-launch costs.
    CuptiTracer* tracer = nullptr;
    if (allow_cupti && o.cupti) {
      if (tracer_ == nullptr) {
        notes.push_back("CUPTI unavailable (" + tracer_error_ + "): CUDA-event timing");
      } else if (Status e = tracer_->Enable(); !e.ok()) {
        notes.push_back("CUPTI unavailable (" + e.message() + "): CUDA-event timing");
      } else {
        tracer = tracer_;
      }
    }
    TracingScope tracing(tracer);

    CapturedGraph graph;
    LaunchFn run = launch;
    if (o.mode == TimingMode::kGraph) {
      ASSAY_RETURN_IF_ERROR(Capture(launch, graph));
      run = [exec = graph.exec](CUstream s) {
        return Check(Cu().cuGraphLaunch(exec, s), "cuGraphLaunch");
      };
    }

    double per_sample_ms = 0;
    ASSAY_RETURN_IF_ERROR(Warmup(run, cold, o, r, &per_sample_ms));
    std::vector<std::string> signature;
    if (tracer) {
      std::string why;
      ASSAY_RETURN_IF_ERROR(ProbeSignature(run, *tracer, &signature, &why));
      if (!why.empty()) {
        notes.push_back("CUPTI timing not used (" + why + "): CUDA-event timing");
        tracer = nullptr;
      }
    }
    // Both clocks for every sample; r.samples_ms is the one reported.
    std::vector<double> event_ms, cupti_ms;

    const StopRule rule{o.min_samples, o.max_samples, o.noise_target, o.time_budget_ms};
    std::optional<GpuTelemetry> prev = before;
    const auto t0 = std::chrono::steady_clock::now();
    StopDecision decision = StopDecision::kContinue;
    bool dropped = false;
    while (decision == StopDecision::kContinue) {
      const int taken = static_cast<int>(r.samples_ms.size());
      const int n = PlanBatch(rule, per_sample_ms, taken, WallMs(t0));
      const uint64_t since = tracer ? tracer->Now() : 0;
      const size_t batch_begin = event_ms.size();
      ASSAY_RETURN_IF_ERROR(RunBatch(run, cold, n, r, &event_ms));
      if (tracer) {
        std::vector<KernelSpan> records;
        Status c = tracer->Collect(since, static_cast<size_t>(n) * signature.size(), HelperKernelNames(), &records);
        Result<std::vector<double>> m =
            c.ok() ? MatchBatch(std::move(records), signature, HelperKernelNames(),
                                std::span<const double>(event_ms).subspan(batch_begin))
                   : Result<std::vector<double>>(c);
        if (m.ok()) {
          cupti_ms.insert(cupti_ms.end(), m->begin(), m->end());
        } else {
          notes.push_back("CUPTI records did not match the samples (batch " + std::to_string(r.batches) + ": " +
                          m.status().message() + "): CUDA-event timing");
          tracer = nullptr;
        }
      }
      r.samples_ms = tracer ? cupti_ms : event_ms;
      // A batch counts as throttled when the reading just before it was queued
      // or the one just after it finished reports a throttle reason.
      std::optional<GpuTelemetry> after = r.has_telemetry ? ReadTelemetry() : std::nullopt;
      const bool throttled = Throttled(prev) || Throttled(after);
      r.throttled.insert(r.throttled.end(), n, throttled);
      if (after) prev = after;
      std::vector<double> used = UsedSamples(r.samples_ms, r.throttled, o.min_samples, &dropped);
      r.stats = ComputeStats(used);
      decision = DecideStop(rule, r.stats.samples, static_cast<int>(r.samples_ms.size()), r.stats.noise, WallMs(t0));
    }
    r.sampling_ms = WallMs(t0);
    bool event_dropped = false;
    r.event_median_ms = Median(UsedSamples(event_ms, r.throttled, o.min_samples, &event_dropped));
    r.stats.converged = decision == StopDecision::kConverged;
    if (tracer && ClocksDisagree(r.stats.median_ms, r.event_median_ms, r.event_overhead_ms)) {
      // The events saw GPU work that the kernel records do not cover (e.g.
      // work a kernel hands to device-launched grids): the events, which
      // bracket everything on the stream, are the honest figure.
      notes.push_back("CUPTI kernels cover less than the events (" + std::to_string(r.stats.median_ms) + " vs " +
                      std::to_string(r.event_median_ms) + " ms): CUDA-event timing");
      r.clocks_disagree = true;
      tracer = nullptr;
      r.samples_ms = event_ms;
      r.stats = ComputeStats(UsedSamples(r.samples_ms, r.throttled, o.min_samples, &dropped));
      r.stats.converged = r.stats.noise <= o.noise_target;
    }
    r.source = tracer ? "cupti" : "cuda_event";
    r.kernels_per_sample = tracer ? static_cast<int>(signature.size()) : 0;
    r.stop_reason = std::string(StopDecisionName(decision));
    r.throttled_samples = static_cast<int>(std::count(r.throttled.begin(), r.throttled.end(), true));

    if (std::optional<GpuTelemetry> after = ReadTelemetry()) r.telemetry_after = *after;
    if (r.throttled_samples > 0) {
      notes.push_back(std::to_string(r.throttled_samples) + " throttled samples " +
                      (dropped ? "dropped from the statistics"
                               : "kept in the statistics (fewer than min_samples were not throttled)"));
    }
    if (r.blocking_timeouts > 0)
      notes.push_back(std::to_string(r.blocking_timeouts) +
                      " batches outran the blocking kernel's timeout: host launch latency may be in their samples");
    if (!r.stats.converged)
      notes.push_back("noise target not met (" + r.stop_reason + ")");
    for (size_t i = 0; i < notes.size(); ++i) r.notes += (i ? "; " : "") + notes[i];
    return Status::Ok();
  }

  GpuInfo gpu_;
  HelperKernels helpers_;
  Stream stream_;
  DeviceBuffer flush_;
  BlockingKernel blocking_;
  std::vector<Event> starts_, stops_;  // the ring: one pair per sample of a batch
  CuptiTracer* tracer_;                // the process's tracer; null when CUPTI cannot be used
  std::string tracer_error_;           // why tracer_ is null
  std::optional<double> overhead_ms_;  // MeasureOverheadOnce
};

}  // namespace

std::string_view TimingModeName(TimingMode m) {
  switch (m) {
    case TimingMode::kCold: return "cold";
    case TimingMode::kHot: return "hot";
    case TimingMode::kGraph: return "graph";
  }
  return "?";
}

Result<TimingMode> ParseTimingMode(std::string_view name) {
  if (name == "cold") return TimingMode::kCold;
  if (name == "hot") return TimingMode::kHot;
  if (name == "graph") return TimingMode::kGraph;
  return Status::Rejected("timing mode must be cold, hot or graph, not '" + std::string(name) + "'", "timing.mode");
}

Result<std::unique_ptr<KernelTimer>> KernelTimer::Create(const GpuInfo& gpu) {
  return Create(gpu, DefaultMeasureCacheDir());
}

Result<std::unique_ptr<KernelTimer>> KernelTimer::Create(const GpuInfo& gpu, const std::filesystem::path& cache_dir) {
  auto drv = CudaDriver();
  if (!drv.ok()) return drv.status();
  auto helpers = LoadHelperKernels(gpu, cache_dir);
  if (!helpers.ok()) return helpers.status();
  auto stream = Stream::Create();
  if (!stream.ok()) return stream.status();
  // Twice the L2, so every line a kernel left behind is evicted whatever the
  // replacement policy does with the first pass. 32 MiB when the driver reports
  // no L2 size.
  const size_t flush_bytes = gpu.l2_bytes > 0 ? static_cast<size_t>(2 * gpu.l2_bytes) : (32u << 20);
  auto flush = DeviceBuffer::Create(flush_bytes);
  if (!flush.ok()) return flush.status();
  auto blocking = BlockingKernel::Create(helpers->blocking);
  if (!blocking.ok()) return blocking.status();
  std::vector<Event> starts, stops;
  for (int i = 0; i < kMaxBatch; ++i) {
    auto a = Event::Create();
    if (!a.ok()) return a.status();
    auto b = Event::Create();
    if (!b.ok()) return b.status();
    starts.push_back(std::move(*a));
    stops.push_back(std::move(*b));
  }
  // CUPTI is optional: without it samples come from CUDA events (noted in
  // every result). Loading it here puts its one-time start-up cost in Create.
  Result<CuptiTracer*> tracer = CuptiTracer::Get();
  return std::unique_ptr<KernelTimer>(std::make_unique<KernelTimerImpl>(
      gpu, std::move(*helpers), std::move(*stream), std::move(*flush), std::move(*blocking), std::move(starts),
      std::move(stops), tracer.ok() ? *tracer : nullptr, tracer.ok() ? std::string() : tracer.status().message()));
}

}  // namespace assay

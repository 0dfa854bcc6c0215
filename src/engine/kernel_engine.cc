// KernelEngine: the worker's warm context and the job flow of
// docs/correctness.md: plan, memory check, modules, correctness trials,
// inputs in, timing, the re-check on new inputs, outputs out, telemetry.
#include "engine/kernel_engine.h"

#include <sys/random.h>

#include <algorithm>
#include <chrono>
#include <optional>

#include "common/log.h"
#include "common/util.h"
#include "engine/correctness_check.h"
#include "engine/engine_timing.h"
#include "engine/helper_kernels.h"
#include "engine/job_plan.h"
#include "engine/kernel_launch.h"
#include "engine/transfers.h"
#include "gpu/cuda_driver.h"
#include "gpu/cuda_handles.h"
#include "gpu/nvml.h"
#include "measure/timer.h"
#include "spec/result.h"

namespace assay {
namespace {

const CudaDriverApi& Cu() { return **CudaDriver(); }

// Device memory kept free beyond the job's buffers: modules, the helpers'
// scratch, driver bookkeeping [bytes].
constexpr uint64_t kHeadroomBytes = uint64_t{256} << 20;

std::string GiB(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", static_cast<double>(bytes) / (1 << 30));
  return buf;
}

uint64_t SecretSeed() {
  uint64_t s = 0;
  if (getrandom(&s, sizeof s, 0) != static_cast<ssize_t>(sizeof s)) s = static_cast<uint64_t>(MonotonicMs()) * 0x9E3779B97F4A7C15ull;
  return s;
}

nlohmann::json LaunchJson(const ResolvedLaunch& l) {
  return {{"grid", {l.grid[0], l.grid[1], l.grid[2]}},
          {"block", {l.block[0], l.block[1], l.block[2]}},
          {"shared_mem_bytes", l.shared_mem_bytes}};
}

class KernelEngineImpl final : public KernelEngine {
 public:
  KernelEngineImpl(GpuInfo gpu, PrimaryContext ctx, Stream stream, HelperKernels helpers,
                   std::unique_ptr<KernelTimer> timer, std::optional<DevicePeaks> peaks, std::string peaks_note,
                   nlohmann::json gpu_json)
      : gpu_(std::move(gpu)), ctx_(std::move(ctx)), stream_(std::move(stream)), helpers_(std::move(helpers)),
        timer_(std::move(timer)), peaks_(peaks), peaks_note_(std::move(peaks_note)), gpu_json_(std::move(gpu_json)) {}

  KernelJobOutput Run(const KernelJobInput& input) override {
    KernelJobOutput out;
    out.result = nlohmann::json::object();
    out.result["gpu"] = gpu_json_;
    if (context_lost_) {
      out.status = Status::Infra("the GPU context was lost by an earlier job; this worker must be replaced");
      out.context_lost = true;
      return out;
    }
    if (Status s = ctx_.MakeCurrent(); !s.ok()) {
      out.status = s;
      return out;
    }
    nlohmann::json telemetry = nlohmann::json::object();
    if (auto nv = Nvml(); nv.ok())
      if (auto t = (*nv)->Read(gpu_.uuid); t.ok()) telemetry["before"] = ToJson(*t);
    std::set<std::string> warnings;
    out.status = RunJob(input, &out, &warnings);
    staging_.Trim();
    if (auto nv = Nvml(); nv.ok())
      if (auto t = (*nv)->Read(gpu_.uuid); t.ok()) telemetry["after"] = ToJson(*t);
    out.result["telemetry"] = std::move(telemetry);
    out.result["warnings"] = std::vector<std::string>(warnings.begin(), warnings.end());
    out.context_lost = context_lost_;
    if (!out.status.ok()) {
      log::Event("engine.job_failed")
          .Kv("job", input.job_id)
          .Kv("class", std::string(ErrorClassName(out.status.error_class())))
          .Kv("context_lost", context_lost_)
          .Info();
    }
    return out;
  }

 private:
  Status RunJob(const KernelJobInput& input, KernelJobOutput* out, std::set<std::string>* warnings) {
    auto plan_or = PlanJob(input);
    if (!plan_or.ok()) return plan_or.status();
    const JobPlan& plan = *plan_or;
    const JobSpec& spec = plan.spec;
    nlohmann::json& result = out->result;
    result["launch"] = LaunchJson(plan.launch);
    result["launch"]["entry"] = spec.entry;

    // Memory: everything the job allocates, against what the device has free now.
    size_t free_bytes = 0, total_bytes = 0;
    if (CUresult r = Cu().cuMemGetInfo(&free_bytes, &total_bytes); r != CUDA_SUCCESS)
      return KernelFailure(r, "the GPU", "cuMemGetInfo", &context_lost_);
    result["launch"]["device_bytes"] = plan.device_bytes;
    if (plan.device_bytes + kHeadroomBytes > free_bytes)
      return Status::Rejected("the job needs " + GiB(plan.device_bytes) + " GiB of device memory (its tensors" +
                              std::string(plan.reference_kernel ? " and the reference's copies" : "") +
                              "), the GPU has " + GiB(free_bytes) + " GiB free");

    // Modules and launches.
    auto cand_mod = Module::Load(input.module_image);
    if (!cand_mod.ok()) return cand_mod.status();
    auto cand_fn = cand_mod->Function(spec.entry);
    if (!cand_fn.ok()) return cand_fn.status();
    auto cand = KernelLaunch::Prepare(*cand_fn, spec, plan.launch, "kernel '" + spec.entry + "'");
    if (!cand.ok()) return cand.status();
    std::optional<Module> ref_mod;
    std::optional<KernelLaunch> ref;
    if (plan.reference_kernel) {
      const std::string& entry = spec.reference->kernel->entry.empty() ? spec.entry : spec.reference->kernel->entry;
      auto m = Module::Load(input.reference_image);
      if (!m.ok()) return Status(m.status().error_class(), "reference kernel: " + m.status().message());
      ref_mod = std::move(*m);
      auto f = ref_mod->Function(entry);
      if (!f.ok()) return Status(f.status().error_class(), "reference kernel: " + f.status().message());
      auto k = KernelLaunch::Prepare(*f, spec, *plan.ref_launch, "reference kernel '" + entry + "'");
      if (!k.ok()) return k.status();
      ref = std::move(*k);
    }

    auto buffers = AllocateJobBuffers(plan);
    if (!buffers.ok()) return buffers.status();
    cand->SetTensors(buffers->cand_by_arg);
    if (ref) ref->SetTensors(buffers->ref_by_arg);

    // The run phase: inputs in, trials, timing, the re-check, outputs out.
    // Its wall time is the result's transfers.total_ms.
    const auto run_start = std::chrono::steady_clock::now();
    nlohmann::json transfers = {{"h2d", nullptr}, {"d2h", nullptr}};
    Status s = RunPhase(plan, *cand, ref ? &*ref : nullptr, &*buffers, out, &transfers, warnings);
    transfers["total_ms"] =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - run_start).count();
    result["transfers"] = std::move(transfers);
    return s;
  }

  Status RunPhase(const JobPlan& plan, const KernelLaunch& cand, const KernelLaunch* ref, JobBuffers* buffers,
                  KernelJobOutput* out, nlohmann::json* transfers, std::set<std::string>* warnings) {
    const JobSpec& spec = plan.spec;
    nlohmann::json& result = out->result;
    // One staging block serves both directions: outputs are read back only
    // after the last check has copied its inputs from it.
    void* staging = staging_.Get(std::max(UploadBytes(plan), OutputBytes(plan)));
    std::vector<const void*> upload_sources;
    auto h2d = UploadInputs(plan, *buffers, staging, stream_.get(), &upload_sources, &context_lost_);
    if (!h2d.ok()) return h2d.status();
    (*transfers)["h2d"] = ToJson(*h2d);

    CheckEnv env;
    env.plan = &plan;
    env.helpers = &helpers_;
    env.stream = stream_.get();
    env.candidate = &cand;
    env.reference = ref;
    env.buffers = buffers;
    env.upload_sources = &upload_sources;
    env.context_lost = &context_lost_;

    // Seeds: trial k uses base + k; the re-check after timing base + trials.
    const CorrectnessSpec cspec = spec.correctness.value_or(CorrectnessSpec{});
    const bool secret = !cspec.seed.has_value();
    const uint64_t base = secret ? SecretSeed() : *cspec.seed;
    const int trials = std::max(1, cspec.trials);
    nlohmann::json correctness = {
        {"passed", false},
        {"trials", trials},
        {"reference", plan.reference_kernel ? "kernel" : plan.reference_expected ? "expected" : "none"},
        {"seed_secret", secret}};
    if (!plan.reference_kernel && !plan.reference_expected)
      warnings->insert("no reference: only unwritten outputs and writes to inputs are checked");
    nlohmann::json checks = nlohmann::json::array();
    auto finish_correctness = [&] {
      correctness["checks"] = checks;
      result["correctness"] = correctness;
    };
    auto run_check = [&](uint64_t seed, const std::string& label) -> Status {
      CheckOutcome c = RunCheck(env, seed, !secret, label);
      warnings->insert(c.warnings.begin(), c.warnings.end());
      checks.push_back(std::move(c.report));
      return c.status;
    };
    for (int k = 0; k < trials; ++k) {
      if (Status s = run_check(base + static_cast<uint64_t>(k), "trial " + std::to_string(k)); !s.ok()) {
        finish_correctness();
        return s;
      }
    }

    const TimingSpec tspec = spec.timing.value_or(TimingSpec{});
    if (tspec.enabled) {
      TimingReport t = TimeKernel(*timer_, cand, plan, tspec, peaks_, gpu_, &context_lost_);
      if (!t.status.ok()) {
        finish_correctness();
        return t.status;
      }
      result["timing"] = std::move(t.timing);
      result["throughput"] = std::move(t.throughput);
      if (!peaks_note_.empty()) result["throughput"]["note"] = peaks_note_;
      warnings->insert(t.warnings.begin(), t.warnings.end());
      // Re-check on new inputs: a kernel that caches answers across calls fails here.
      if (cspec.check_after_timing) {
        if (Status s = run_check(base + static_cast<uint64_t>(trials), "after timing"); !s.ok()) {
          finish_correctness();
          return Status(s.error_class(), "after timing: " + s.message());
        }
      }
    }
    correctness["passed"] = true;
    finish_correctness();

    auto d2h = DownloadOutputs(plan, *buffers, staging, stream_.get(), &out->outputs_npy, &context_lost_);
    if (!d2h.ok()) return d2h.status();
    (*transfers)["d2h"] = ToJson(*d2h);
    return Status::Ok();
  }

  GpuInfo gpu_;
  PrimaryContext ctx_;
  Stream stream_;
  HelperKernels helpers_;
  std::unique_ptr<KernelTimer> timer_;
  StagingArea staging_;  // pinned host memory for transfers, kept warm across jobs
  std::optional<DevicePeaks> peaks_;
  std::string peaks_note_;
  nlohmann::json gpu_json_;
  bool context_lost_ = false;
};

}  // namespace

Result<std::unique_ptr<KernelEngine>> KernelEngine::Create(const GpuInfo& gpu, const std::filesystem::path& work_dir) {
  auto ctx = PrimaryContext::Create(gpu.index);
  if (!ctx.ok()) return ctx.status();
  auto stream = Stream::Create();
  if (!stream.ok()) return stream.status();
  auto helpers = HelperKernels::Create(gpu, work_dir / "engine-cache");
  if (!helpers.ok()) return helpers.status();
  auto timer = KernelTimer::Create(gpu);
  if (!timer.ok()) return timer.status();
  std::optional<DevicePeaks> peaks;
  std::string note;
  if (auto p = MeasureDevicePeaks(gpu); p.ok()) peaks = *p;
  else note = "device peaks unavailable: " + p.status().message();
  nlohmann::json gpu_json = ToJson(gpu);
  GpuInventory inv = ListGpus();
  gpu_json["driver_version"] = inv.driver_version;
  gpu_json["cuda_driver_version"] = inv.cuda_driver_version;
  return std::unique_ptr<KernelEngine>(std::make_unique<KernelEngineImpl>(gpu, std::move(*ctx), std::move(*stream),
                                                            std::move(*helpers), std::move(*timer), peaks,
                                                            std::move(note), std::move(gpu_json)));
}

}  // namespace assay

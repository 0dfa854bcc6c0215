#include "worker/kernel_runner.h"

#include <memory>

#include "common/log.h"
#include "common/util.h"
#include "engine/kernel_engine.h"
#include "gpu/devices.h"

namespace assay {
namespace {

// The engine of this worker process: one GPU, one warm context.
struct EngineSlot {
  std::unique_ptr<KernelEngine> engine;
  Status failure;  // why it could not be created (sticky: the worker is then replaced)
};

EngineSlot& Slot(const RunContext& ctx) {
  static EngineSlot slot;
  if (slot.engine || !slot.failure.ok()) return slot;
  GpuInventory inv = ListGpus();
  const GpuInfo* gpu = nullptr;
  for (const auto& g : inv.gpus)
    if (g.index == ctx.device) gpu = &g;
  if (!gpu) {
    slot.failure = Status::Infra("worker has no GPU " + std::to_string(ctx.device) + ": " + inv.status.message());
    return slot;
  }
  auto engine = KernelEngine::Create(*gpu, ctx.work_dir / "engine");
  if (!engine.ok()) {
    slot.failure = Status::Infra("cannot start the kernel engine: " + engine.status().message());
    log::Event("worker.engine_failed").Kv("error", slot.failure.message()).Error();
    return slot;
  }
  slot.engine = std::move(engine).value();
  return slot;
}

}  // namespace

WorkOutcome RunKernelJob(const RunContext& ctx) {
  WorkOutcome out;
  if (ctx.device < 0) {
    out.status = Status::Rejected("this worker has no GPU; kind '" + ctx.spec->value("kind", "") + "' needs one",
                                  "kind");
    return out;
  }
  EngineSlot& slot = Slot(ctx);
  if (!slot.engine) {
    out.status = slot.failure;
    out.exit_worker = true;  // a fresh worker may do better
    return out;
  }
  KernelJobInput in;
  in.job_id = ctx.job_id;
  in.spec = *ctx.spec;
  auto module = ReadFile(ctx.artifact);
  if (!module.ok()) {
    out.status = Status::Infra("cannot read the module: " + module.status().message());
    return out;
  }
  in.module_image = std::move(module).value();
  if (!ctx.reference_artifact.empty()) {
    auto ref = ReadFile(ctx.reference_artifact);
    if (!ref.ok()) {
      out.status = Status::Infra("cannot read the reference module: " + ref.status().message());
      return out;
    }
    in.reference_image = std::move(ref).value();
  }
  for (const auto& [hash, path] : ctx.blob_files) {
    auto data = ReadFile(path);
    if (!data.ok()) {
      out.status = Status::Infra("cannot read uploaded data " + hash + ": " + data.status().message());
      return out;
    }
    in.blobs[hash] = std::move(data).value();
  }
  ctx.progress("running", nlohmann::json::object());
  KernelJobOutput r = slot.engine->Run(in);
  out.status = r.status;
  out.result = std::move(r.result);
  out.blobs = std::move(r.outputs_npy);
  out.exit_worker = r.context_lost;
  return out;
}

}  // namespace assay

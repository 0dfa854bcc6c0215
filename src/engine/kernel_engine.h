// Runs kernel jobs (kinds cuda, cubin, ptx, fatbin) on one GPU: loads the
// module, allocates the argument contract, generates inputs on the device from
// a seed (or from uploaded blobs), checks correctness against a reference under
// the anti-cheat rules of PRODUCT.md, times the kernel (measure/timer.h), and
// returns the result sections and requested outputs.
//
// One KernelEngine per worker process; it holds the warm context.
// Thread-safety: not thread-safe; the worker calls it from one thread.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "gpu/devices.h"

namespace assay {

struct KernelJobInput {
  std::string job_id;
  nlohmann::json spec;                 // normalized job spec (docs/job-spec.md)
  std::string module_image;            // candidate: cubin / PTX / fatbin bytes
  std::string reference_image;         // reference kernel's module, when the reference is a kernel
  // Uploaded data the spec refers to (inputs, expected outputs): blob hash -> bytes.
  std::map<std::string, std::string> blobs;
};

struct KernelJobOutput {
  Status status;                       // OK, or the job's failure class
  nlohmann::json result;               // sections: correctness, timing, gpu, telemetry, launch, throughput,
                                       // transfers
  std::map<std::string, std::string> outputs_npy;  // spec.outputs: arg name -> .npy bytes
  // A sticky CUDA error (illegal address, trap, ...) corrupted the context: the
  // worker must report this job and then exit so a fresh one takes over.
  bool context_lost = false;
};

class KernelEngine {
 public:
  // Retains the device's primary context, compiles the engine's own helper
  // kernels (input generators, poison, checksums, comparison) for the device's
  // arch with NVRTC (cached under work_dir), creates the timer.
  static Result<std::unique_ptr<KernelEngine>> Create(const GpuInfo& gpu, const std::filesystem::path& work_dir);
  virtual ~KernelEngine() = default;
  virtual KernelJobOutput Run(const KernelJobInput& input) = 0;
};

}  // namespace assay

// Everything the engine decides about a job before touching the GPU: the
// parsed spec, each tensor's resolved shape and size, uploaded data validated
// against the contract, the launch sizes, and the device memory the job needs.
// A plan that fails is a `rejected` job naming the argument.
// Thread-safety: plain values; the plan holds views into KernelJobInput::blobs,
// which must outlive it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "engine/kernel_engine.h"
#include "spec/job_spec.h"

namespace assay {

struct TensorPlan {
  size_t arg = 0;                  // index into spec.args
  std::vector<int64_t> shape;
  uint64_t count = 0;              // elements
  uint64_t bytes = 0;              // count * dtype size
  std::optional<std::string_view> upload;    // in/inout with a blob init: the element bytes
  std::optional<std::string_view> expected;  // out/inout with expected data: the element bytes
};

struct JobPlan {
  JobSpec spec;
  std::vector<TensorPlan> tensors;  // in argument order, tensors only
  ResolvedLaunch launch;
  std::optional<ResolvedLaunch> ref_launch;  // set when the reference is a kernel
  bool reference_kernel = false;
  bool reference_expected = false;
  uint64_t candidate_bytes = 0;     // all tensors once
  uint64_t device_bytes = 0;        // candidate + reference copies or expected data
  const ArgSpec& arg(const TensorPlan& t) const { return spec.args[t.arg]; }
};

// Parses input.spec (the server applied its size limits on submission; here
// only the device's memory limits apply), resolves shapes and launch sizes,
// and validates every uploaded tensor.
Result<JobPlan> PlanJob(const KernelJobInput& input);

// The element bytes of an uploaded tensor for argument `arg_name`, checked
// against the contract's dtype and shape. `what` is "input" or "expected output".
Result<std::string_view> LoadBlobTensor(const BlobRef& ref, const std::map<std::string, std::string>& blobs,
                                        const std::string& arg_name, std::string_view what, DType dtype,
                                        const std::vector<int64_t>& shape);

std::string ShapeString(const std::vector<int64_t>& shape);  // "[2, 3]"

}  // namespace assay

#include "engine/job_plan.h"

#include <nlohmann/json.hpp>

#include "engine/npy.h"
#include "engine/safetensors.h"

namespace assay {
namespace {

bool IsKernelKind(JobKind k) {
  return k == JobKind::kCuda || k == JobKind::kCubin || k == JobKind::kPtx || k == JobKind::kFatbin;
}

Status CheckDtypeShape(const std::string& who, DType want, const std::vector<int64_t>& want_shape, DType got,
                       const std::vector<int64_t>& got_shape) {
  if (got != want)
    return Status::Rejected(who + " has dtype " + std::string(DTypeName(got)) + "; the contract says " +
                            std::string(DTypeName(want)));
  if (got_shape != want_shape)
    return Status::Rejected(who + " has shape " + ShapeString(got_shape) + "; the contract says " +
                            ShapeString(want_shape));
  return Status::Ok();
}

}  // namespace

std::string ShapeString(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

Result<std::string_view> LoadBlobTensor(const BlobRef& ref, const std::map<std::string, std::string>& blobs,
                                        const std::string& arg_name, std::string_view what, DType dtype,
                                        const std::vector<int64_t>& shape) {
  const std::string who = std::string(what) + " '" + arg_name + "'";
  auto it = blobs.find(ref.hash);
  if (it == blobs.end()) return Status::Rejected(who + ": blob " + ref.hash + " was not provided");
  const std::string& bytes = it->second;
  auto prefix = [&](const Status& s) { return Status::Rejected(who + ": " + s.message()); };
  if (ref.format == "npy") {
    auto a = ParseNpy(bytes);
    if (!a.ok()) return prefix(a.status());
    ASSAY_RETURN_IF_ERROR(CheckDtypeShape(who, dtype, shape, a->dtype, a->shape));
    return a->data;
  }
  if (ref.format == "safetensors") {
    // No tensor named: the argument's name if the file has it, else the only tensor.
    auto t = ParseSafetensors(bytes, ref.tensor.empty() ? arg_name : ref.tensor);
    if (!t.ok() && ref.tensor.empty()) t = ParseSafetensors(bytes, "");
    if (!t.ok()) return prefix(t.status());
    ASSAY_RETURN_IF_ERROR(CheckDtypeShape(who, dtype, shape, t->dtype, t->shape));
    return t->data;
  }
  if (ref.format == "raw") {
    uint64_t need = static_cast<uint64_t>(DTypeSize(dtype));
    for (int64_t d : shape) need *= static_cast<uint64_t>(d);
    if (bytes.size() != need)
      return Status::Rejected(who + ": raw data is " + std::to_string(bytes.size()) + " bytes; " +
                              ShapeString(shape) + " " + std::string(DTypeName(dtype)) + " needs " +
                              std::to_string(need));
    return std::string_view(bytes);
  }
  return Status::Rejected(who + ": unknown blob format '" + ref.format + "'");
}

Result<JobPlan> PlanJob(const KernelJobInput& input) {
  SpecLimits limits;
  limits.max_spec_bytes = SIZE_MAX;
  limits.max_elements_per_tensor = INT64_MAX;
  limits.max_total_bytes = INT64_MAX;
  // Through the text form, so numbers have the types a parsed document has
  // (the spec parser reads a seed of 42 built in C++ as signed and refuses it).
  auto parsed = ParseJobSpec(input.spec.dump(), limits);
  if (!parsed.ok()) return parsed.status();
  JobPlan plan;
  plan.spec = std::move(*parsed);
  const JobSpec& spec = plan.spec;
  if (!IsKernelKind(spec.kind))
    return Status::Rejected("the kernel engine runs kinds cuda, cubin, ptx and fatbin, not '" +
                            std::string(JobKindName(spec.kind)) + "'", "kind");
  if (!spec.launch) return Status::Rejected("a kernel job needs 'launch'", "launch");
  if (spec.entry.empty()) return Status::Rejected("a kernel job needs 'entry'", "entry");
  if (input.module_image.empty()) return Status::Rejected("no module image was given for the kernel");
  auto launch = ResolveLaunch(spec, *spec.launch);
  if (!launch.ok()) return Status::Rejected(launch.status().message(), "launch");
  plan.launch = *launch;

  if (spec.reference && spec.reference->kernel) {
    const KernelSpec& rk = *spec.reference->kernel;
    if (!IsKernelKind(rk.kind))
      return Status::Rejected("the kernel engine checks against reference kernels of kinds cuda, cubin, ptx "
                              "and fatbin, not '" + std::string(JobKindName(rk.kind)) + "'", "reference.kind");
    if (input.reference_image.empty()) return Status::Rejected("no module image was given for the reference kernel");
    auto rl = ResolveLaunch(spec, rk.launch ? *rk.launch : *spec.launch);
    if (!rl.ok()) return Status::Rejected(rl.status().message(), "reference.launch");
    plan.ref_launch = *rl;
    plan.reference_kernel = true;
  } else if (spec.reference && !spec.reference->expected.empty()) {
    plan.reference_expected = true;
  }

  for (size_t i = 0; i < spec.args.size(); ++i) {
    const ArgSpec& a = spec.args[i];
    if (!a.is_tensor()) continue;
    const std::string field = "args[" + std::to_string(i) + "]";
    auto shape = ResolveShape(spec, a);
    if (!shape.ok()) return Status::Rejected("argument '" + a.name + "': " + shape.status().message(), field + ".shape");
    TensorPlan t;
    t.arg = i;
    t.shape = *shape;
    t.count = 1;
    for (int64_t d : t.shape) {
      if (d < 0) return Status::Rejected("argument '" + a.name + "' has a negative dimension", field + ".shape");
      if (d != 0 && t.count > (uint64_t{1} << 50) / static_cast<uint64_t>(d))
        return Status::Rejected("argument '" + a.name + "' is too large", field + ".shape");
      t.count *= static_cast<uint64_t>(d);
    }
    t.bytes = t.count * static_cast<uint64_t>(DTypeSize(a.dtype));
    if (a.role != ArgRole::kOut && a.init && a.init->kind == InitSpec::Kind::kBlob) {
      auto data = LoadBlobTensor(a.init->blob, input.blobs, a.name, "input", a.dtype, t.shape);
      if (!data.ok()) return Status::Rejected(data.status().message(), field + ".init");
      t.upload = *data;
    }
    if (plan.reference_expected && a.role != ArgRole::kIn) {
      auto e = spec.reference->expected.find(a.name);
      if (e != spec.reference->expected.end()) {
        auto data = LoadBlobTensor(e->second, input.blobs, a.name, "expected output", a.dtype, t.shape);
        if (!data.ok()) return Status::Rejected(data.status().message(), "reference.expected." + a.name);
        t.expected = *data;
      }
    }
    plan.candidate_bytes += t.bytes;
    if (plan.reference_kernel) plan.device_bytes += t.bytes;
    if (t.expected) plan.device_bytes += t.bytes;
    plan.tensors.push_back(std::move(t));
  }
  plan.device_bytes += plan.candidate_bytes;
  return plan;
}

}  // namespace assay

#include "spec/capabilities.h"

#include <algorithm>
#include <cctype>
#include <string>

namespace assay {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

Status CheckKind(JobKind kind, const Capabilities& caps, const std::string& field) {
  std::string name(JobKindName(kind));
  if (!caps.supported.count(kind)) {
    if (IsPythonKind(kind)) {
      std::string why = caps.python_note.empty() ? "no worker offers it" : caps.python_note;
      return Status::Rejected("kind '" + name + "' needs a worker with Python and " +
                                  (kind == JobKind::kTriton ? "Triton" : "PyTorch") + "; none here has it (" +
                                  why + ")",
                              field);
    }
    return Status::Rejected("kind '" + name + "' is not supported yet by this server", field);
  }
  if (KindNeedsGpu(kind) && !caps.has_gpu && !caps.cpu_kinds.count(kind))
    return Status::Rejected("this server has no GPU; kind '" + name + "' needs one", field);
  return Status::Ok();
}

}  // namespace

bool IsPythonKind(JobKind kind) {
  return kind == JobKind::kTorch || kind == JobKind::kTorchCuda || kind == JobKind::kTriton ||
         kind == JobKind::kKernelbench;
}

bool IsModuleKind(JobKind kind) {
  return kind == JobKind::kCuda || kind == JobKind::kCubin || kind == JobKind::kPtx || kind == JobKind::kFatbin;
}

bool KindNeedsGpu(JobKind kind) {
  return kind != JobKind::kCompile && kind != JobKind::kCudaProgram;
}

Status CheckSupported(const JobSpec& spec, const Capabilities& caps) {
  ASSAY_RETURN_IF_ERROR(CheckKind(spec.kind, caps, "kind"));
  if (spec.reference && spec.reference->kernel) {
    JobKind ref = spec.reference->kernel->kind;
    // The kernel engine and the Python harness each keep their buffers to
    // themselves: a candidate can only be compared with a reference of its own engine.
    if (IsPythonKind(spec.kind) && IsModuleKind(ref))
      return Status::Rejected("a '" + std::string(JobKindName(spec.kind)) + "' candidate cannot be checked against a '" +
                                  std::string(JobKindName(ref)) +
                                  "' reference (the Python harness and the kernel engine do not share buffers): "
                                  "use a torch, torch_cuda or triton reference, or expected outputs",
                              "reference.kind");
    if (IsModuleKind(spec.kind) && IsPythonKind(ref))
      return Status::Rejected("a '" + std::string(JobKindName(spec.kind)) + "' kernel cannot be checked against a '" +
                                  std::string(JobKindName(ref)) +
                                  "' reference (the kernel engine does not run Python): use a cuda, cubin, ptx "
                                  "or fatbin reference, or expected outputs",
                              "reference.kind");
    ASSAY_RETURN_IF_ERROR(CheckKind(ref, caps, "reference.kind"));
  }
  if (!spec.gpu_type.empty()) {
    std::string want = Lower(spec.gpu_type);
    bool found = std::any_of(caps.gpu_names.begin(), caps.gpu_names.end(), [&](const std::string& n) {
      return Lower(n).find(want) != std::string::npos;
    });
    if (!found) {
      std::string have;
      for (const std::string& n : caps.gpu_names) have += (have.empty() ? "" : ", ") + n;
      return Status::Rejected("no GPU here matches gpu.type '" + spec.gpu_type + "' (" +
                                  (have.empty() ? std::string("this server has no GPU")
                                                : "this server has: " + have) +
                                  ")",
                              "gpu.type");
    }
  }
  return Status::Ok();
}

}  // namespace assay

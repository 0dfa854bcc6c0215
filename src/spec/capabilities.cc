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
  if (!caps.supported.count(kind))
    return Status::Rejected("kind '" + name + "' is not supported yet by this server", field);
  if (KindNeedsGpu(kind) && !caps.has_gpu)
    return Status::Rejected("this server has no GPU; kind '" + name + "' needs one", field);
  return Status::Ok();
}

}  // namespace

bool KindNeedsGpu(JobKind kind) {
  return kind != JobKind::kCompile && kind != JobKind::kCudaProgram;
}

Status CheckSupported(const JobSpec& spec, const Capabilities& caps) {
  ASSAY_RETURN_IF_ERROR(CheckKind(spec.kind, caps, "kind"));
  if (spec.reference && spec.reference->kernel)
    ASSAY_RETURN_IF_ERROR(CheckKind(spec.reference->kernel->kind, caps, "reference.kind"));
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

#include "spec/result.h"

#include <string>

#include "common/util.h"

namespace assay {

nlohmann::json MakeResultSkeleton(std::string_view job_id, JobKind kind) {
  return {
      {"schema_version", kResultSchemaVersion},
      {"job_id", std::string(job_id)},
      {"kind", std::string(JobKindName(kind))},
      {"state", std::string(JobStateName(JobState::kQueued))},
      {"error", nullptr},
      {"timestamps", nlohmann::json::object()},
      {"compile", nullptr},
      {"program", nullptr},
      {"correctness", nullptr},
      {"timing", nullptr},
      {"telemetry", nullptr},
      {"gpu", nullptr},
      {"outputs", nlohmann::json::object()},
  };
}

void SetError(nlohmann::json& result, const Status& status, nlohmann::json detail) {
  if (status.ok()) {
    result["error"] = nullptr;
    return;
  }
  nlohmann::json e = {{"class", std::string(ErrorClassName(status.error_class()))},
                      {"message", SanitizeUtf8(status.message())}};
  if (!status.field().empty()) e["field"] = SanitizeUtf8(status.field());
  e["detail"] = std::move(detail);
  result["error"] = std::move(e);
}

void SetState(nlohmann::json& result, JobState state, int64_t unix_ms) {
  std::string name(JobStateName(state));
  result["state"] = name;
  result["timestamps"][name] = FormatUnixMs(unix_ms);
}

}  // namespace assay

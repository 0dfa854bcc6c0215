#include "common/status.h"

#include <array>

namespace assay {
namespace {
struct Name {
  ErrorClass c;
  std::string_view name;
};
constexpr std::array<Name, 11> kNames = {{
    {ErrorClass::kOk, "ok"},
    {ErrorClass::kRejected, "rejected"},
    {ErrorClass::kCompileError, "compile_error"},
    {ErrorClass::kLaunchError, "launch_error"},
    {ErrorClass::kRuntimeError, "runtime_error"},
    {ErrorClass::kWrongResult, "wrong_result"},
    {ErrorClass::kTimeout, "timeout"},
    {ErrorClass::kCancelled, "cancelled"},
    {ErrorClass::kInfraError, "infra_error"},
    {ErrorClass::kNotFound, "not_found"},
    {ErrorClass::kUnauthorized, "unauthorized"},
}};
}  // namespace

std::string_view ErrorClassName(ErrorClass c) {
  for (const auto& n : kNames)
    if (n.c == c) return n.name;
  return "infra_error";
}

std::optional<ErrorClass> ErrorClassFromName(std::string_view name) {
  for (const auto& n : kNames)
    if (n.name == name) return n.c;
  return std::nullopt;
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  std::string s(ErrorClassName(class_));
  s += ": ";
  s += message_;
  if (!field_.empty()) s += " (field " + field_ + ")";
  return s;
}

}  // namespace assay

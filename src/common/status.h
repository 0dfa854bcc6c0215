// Errors as values. Every failure Assay reports carries one of the failure
// classes of the job lifecycle (docs/job-spec.md), so a user's bug never looks
// like an outage and an outage never looks like a user's bug.
//
// Thread-safety: Status and Result are plain values; safe to copy between threads.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace assay {

// The failure classes of PRODUCT.md. kOk is not a failure.
enum class ErrorClass {
  kOk,
  kRejected,      // bad request: schema, limits, unsupported kind
  kCompileError,  // the user's source did not compile
  kLaunchError,   // launch config or module load refused by the driver
  kRuntimeError,  // illegal address, trap, crash, non-zero exit
  kWrongResult,   // ran, but outputs do not match the reference
  kTimeout,       // wall-clock limit reached
  kCancelled,     // cancelled by a user
  kInfraError,    // our fault; retried
  kNotFound,      // API only: no such job/blob/key (HTTP 404)
  kUnauthorized,  // API only: missing or bad key (HTTP 401)
};

// Wire name ("compile_error", ...). Stable: part of the result schema.
std::string_view ErrorClassName(ErrorClass c);
// Inverse of ErrorClassName; nullopt for an unknown name.
std::optional<ErrorClass> ErrorClassFromName(std::string_view name);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  static Status Ok() { return Status(); }
  static Status Rejected(std::string msg, std::string field = {}) {
    return Status(ErrorClass::kRejected, std::move(msg), std::move(field));
  }
  static Status CompileError(std::string msg) { return Status(ErrorClass::kCompileError, std::move(msg)); }
  static Status LaunchError(std::string msg) { return Status(ErrorClass::kLaunchError, std::move(msg)); }
  static Status RuntimeError(std::string msg) { return Status(ErrorClass::kRuntimeError, std::move(msg)); }
  static Status WrongResult(std::string msg) { return Status(ErrorClass::kWrongResult, std::move(msg)); }
  static Status Timeout(std::string msg) { return Status(ErrorClass::kTimeout, std::move(msg)); }
  static Status Cancelled(std::string msg) { return Status(ErrorClass::kCancelled, std::move(msg)); }
  static Status Infra(std::string msg) { return Status(ErrorClass::kInfraError, std::move(msg)); }
  static Status NotFound(std::string msg) { return Status(ErrorClass::kNotFound, std::move(msg)); }
  static Status Unauthorized(std::string msg) { return Status(ErrorClass::kUnauthorized, std::move(msg)); }

  Status(ErrorClass c, std::string msg, std::string field = {})
      : class_(c), message_(std::move(msg)), field_(std::move(field)) {}

  bool ok() const { return class_ == ErrorClass::kOk; }
  ErrorClass error_class() const { return class_; }
  const std::string& message() const { return message_; }
  // For kRejected: the JSON path of the offending field ("args[2].dtype"), or empty.
  const std::string& field() const { return field_; }
  // "compile_error: <message>"
  std::string ToString() const;

 private:
  ErrorClass class_ = ErrorClass::kOk;
  std::string message_;
  std::string field_;
};

// A value or a failed Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {}  // NOLINT: must not be ok()

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace assay

// Early return for Status-returning expressions.
#define ASSAY_RETURN_IF_ERROR(expr)          \
  do {                                       \
    ::assay::Status assay_status_ = (expr);  \
    if (!assay_status_.ok()) return assay_status_; \
  } while (0)

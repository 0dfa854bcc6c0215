// Structured logging. One line per event, logfmt style: `event=job.state job=j_ab12 state=running`.
// Thread-safety: all functions are safe to call from any thread.
#pragma once

#include <fmt/format.h>

#include <string>
#include <string_view>

namespace assay::log {

enum class Level { kDebug, kInfo, kWarn, kError };

// Sets the minimum level and whether lines are JSON objects instead of logfmt.
void Configure(Level min_level, bool json);
Level ParseLevel(std::string_view name);  // "debug" | "info" | "warn" | "error"

// Builds one structured line: Event("job.state").Kv("job", id).Kv("state", s).Info();
class Event {
 public:
  explicit Event(std::string_view name);
  template <typename T>
  Event& Kv(std::string_view key, const T& value) {
    return Add(key, fmt::format("{}", value));
  }
  Event& Add(std::string_view key, std::string value);
  void Debug();
  void Info();
  void Warn();
  void Error();

 private:
  void Emit(Level level);
  std::string name_;
  std::string logfmt_;
  std::string json_;
};

}  // namespace assay::log

#include "common/log.h"

#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>

namespace assay::log {
namespace {
std::atomic<int> g_min_level{static_cast<int>(Level::kInfo)};
std::atomic<bool> g_json{false};
std::mutex g_mu;  // keeps lines whole on stderr

const char* LevelName(Level l) {
  switch (l) {
    case Level::kDebug: return "debug";
    case Level::kInfo: return "info";
    case Level::kWarn: return "warn";
    case Level::kError: return "error";
  }
  return "info";
}

bool NeedsQuotes(std::string_view v) {
  if (v.empty()) return true;
  for (char c : v)
    if (c == ' ' || c == '"' || c == '=' || c == '\n' || c == '\t') return true;
  return false;
}
}  // namespace

void Configure(Level min_level, bool json) {
  g_min_level = static_cast<int>(min_level);
  g_json = json;
}

Level ParseLevel(std::string_view name) {
  if (name == "debug") return Level::kDebug;
  if (name == "warn") return Level::kWarn;
  if (name == "error") return Level::kError;
  return Level::kInfo;
}

Event::Event(std::string_view name) : name_(name) {}

Event& Event::Add(std::string_view key, std::string value) {
  logfmt_ += ' ';
  logfmt_ += key;
  logfmt_ += '=';
  if (NeedsQuotes(value)) {
    logfmt_ += nlohmann::json(value).dump();
  } else {
    logfmt_ += value;
  }
  json_ += ',';
  json_ += nlohmann::json(std::string(key)).dump();
  json_ += ':';
  json_ += nlohmann::json(value).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return *this;
}

void Event::Debug() { Emit(Level::kDebug); }
void Event::Info() { Emit(Level::kInfo); }
void Event::Warn() { Emit(Level::kWarn); }
void Event::Error() { Emit(Level::kError); }

void Event::Emit(Level level) {
  if (static_cast<int>(level) < g_min_level.load()) return;
  auto now = std::chrono::system_clock::now();
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
  std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char ts[64];
  std::snprintf(ts, sizeof ts, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms % 1000));
  std::string line;
  if (g_json.load()) {
    line = fmt::format(R"({{"ts":"{}","level":"{}","event":{}{}}})", ts, LevelName(level),
                       nlohmann::json(name_).dump(), json_);
  } else {
    line = fmt::format("ts={} level={} event={}{}", ts, LevelName(level), name_, logfmt_);
  }
  std::lock_guard<std::mutex> lock(g_mu);
  std::fprintf(stderr, "%s\n", line.c_str());
}

}  // namespace assay::log

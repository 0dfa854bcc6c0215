#include "cli/wait.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <ostream>
#include <thread>

#include <nlohmann/json.hpp>

#include "cli/format.h"
#include "common/util.h"
#include "spec/job_state.h"

namespace assay::cli {
namespace {
constexpr int64_t kFirstPollMs = 100;
constexpr int64_t kMaxPollMs = 2000;
// Transient transport failures tolerated in a row before giving up (a server
// restart takes a few seconds).
constexpr int kMaxConsecutiveFailures = 5;

struct PollSpec {
  std::string path;                                              // GET this
  std::function<bool(const nlohmann::json&)> done;               // stop when true
  std::function<std::string(const nlohmann::json&, double)> line; // progress line
  std::function<std::string(const nlohmann::json&)> key;         // what counts as a change
};

Result<nlohmann::json> Poll(ApiClient& client, const PollSpec& p, std::ostream& err, bool tty) {
  const int64_t start = MonotonicMs();
  int64_t poll_ms = kFirstPollMs;
  int failures = 0;
  std::string last_shown;
  while (true) {
    auto doc = client.GetJson(p.path);
    if (!doc.ok()) {
      if (doc.status().error_class() != ErrorClass::kInfraError || ++failures > kMaxConsecutiveFailures) {
        if (tty && !last_shown.empty()) err << "\r\033[K" << std::flush;
        return doc.status();
      }
    } else {
      failures = 0;
      if (p.done(*doc)) {
        if (tty && !last_shown.empty()) err << "\r\033[K" << std::flush;
        return doc;
      }
      double elapsed = static_cast<double>(MonotonicMs() - start) / 1000.0;
      std::string line = p.line(*doc, elapsed);
      // Compare without the clock so plain output only changes with the state.
      std::string key = p.key(*doc);
      if (tty) {
        err << "\r\033[K" << line << std::flush;
      } else if (key != last_shown) {
        err << line << "\n" << std::flush;
      }
      if (key != last_shown) poll_ms = kFirstPollMs;
      last_shown = key;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(poll_ms));
    poll_ms = std::min(kMaxPollMs, poll_ms * 3 / 2);
  }
}

}  // namespace

Result<nlohmann::json> WaitForJob(ApiClient& client, const std::string& id, std::ostream& err, bool tty) {
  PollSpec p;
  p.path = "/v1/jobs/" + id;
  p.done = [](const nlohmann::json& job) {
    auto state = JobStateFromName(job.value("state", std::string()));
    return state && IsTerminal(*state);
  };
  p.line = [](const nlohmann::json& job, double elapsed) { return FormatProgress(job, elapsed); };
  p.key = [](const nlohmann::json& job) {
    return job.value("state", std::string()) + "/" + (job.contains("queue_position") ? job["queue_position"].dump() : "");
  };
  return Poll(client, p, err, tty);
}

Result<nlohmann::json> WaitForBatch(ApiClient& client, const std::string& id, std::ostream& err, bool tty) {
  PollSpec p;
  p.path = "/v1/batches/" + id;
  p.done = [](const nlohmann::json& b) {
    return b.contains("summary") && b["summary"].value("all_finished", false);
  };
  p.line = [](const nlohmann::json& b, double elapsed) { return FormatBatchProgress(b, elapsed); };
  p.key = [](const nlohmann::json& b) { return b.contains("summary") ? b["summary"].value("by_state", nlohmann::json()).dump() : ""; };
  return Poll(client, p, err, tty);
}

}  // namespace assay::cli

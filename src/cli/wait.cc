#include "cli/wait.h"

#include <algorithm>
#include <chrono>
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
}  // namespace

Result<nlohmann::json> WaitForJob(ApiClient& client, const std::string& id, std::ostream& err, bool tty) {
  const int64_t start = MonotonicMs();
  int64_t poll_ms = kFirstPollMs;
  int failures = 0;
  std::string last_shown;
  while (true) {
    auto job = client.GetJson("/v1/jobs/" + id);
    if (!job.ok()) {
      if (job.status().error_class() != ErrorClass::kInfraError || ++failures > kMaxConsecutiveFailures) {
        if (tty && !last_shown.empty()) err << "\r\033[K" << std::flush;
        return job.status();
      }
    } else {
      failures = 0;
      auto state = JobStateFromName(job->value("state", std::string()));
      if (state && IsTerminal(*state)) {
        if (tty && !last_shown.empty()) err << "\r\033[K" << std::flush;
        return job;
      }
      double elapsed = static_cast<double>(MonotonicMs() - start) / 1000.0;
      std::string line = FormatProgress(*job, elapsed);
      // Compare without the clock so plain output only changes with the state.
      std::string key = job->value("state", std::string()) + "/" +
                        (job->contains("queue_position") ? (*job)["queue_position"].dump() : "");
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

}  // namespace assay::cli

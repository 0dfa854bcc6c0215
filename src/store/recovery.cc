// Start-up recovery (RecoverInterruptedJobs, declared in store.h). Written
// against the Store interface only, so every implementation shares it.
#include <fmt/format.h>

#include "common/log.h"
#include "store/store.h"

namespace assay {

Result<std::vector<JobRecord>> RecoverInterruptedJobs(Store& store, int max_attempts) {
  Result<std::vector<JobRecord>> interrupted = store.JobsInStates({JobState::kCompiling, JobState::kRunning});
  if (!interrupted.ok()) return interrupted.status();
  for (const JobRecord& job : *interrupted) {
    TransitionUpdate up;
    JobState to = JobState::kQueued;
    if (job.attempts < max_attempts) {
      up.message = "requeued after server restart";
      up.count_attempt = true;
    } else {
      to = JobState::kFailed;
      up.error_class = std::string(ErrorClassName(ErrorClass::kInfraError));
      up.error_message = fmt::format(
          "the job was interrupted {} times (server restarts or infrastructure failures); giving up "
          "after {} attempts",
          job.attempts + 1, max_attempts);
      up.message = up.error_message;
    }
    Result<JobRecord> moved = store.Transition(job.id, to, up);
    // Rejected: the job moved on since we listed it (nothing else should run
    // during start-up, but it is harmless); anything else is a store failure.
    if (!moved.ok() && moved.status().error_class() != ErrorClass::kRejected) return moved.status();
    log::Event("store.recover")
        .Kv("job", job.id)
        .Kv("from", JobStateName(job.state))
        .Kv("to", JobStateName(to))
        .Kv("attempts", job.attempts)
        .Warn();
  }
  return store.JobsInStates({JobState::kQueued});
}

}  // namespace assay

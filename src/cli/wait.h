// Waiting for a job to end, for `assay run` and `assay result`.
//
// Polls GET /v1/jobs/{id} with back-off (100 ms growing to 2 s, reset on a
// state change) rather than holding an SSE stream: polling survives proxies,
// server restarts and the server's stream cap with no reconnect logic, and
// costs one small request per interval.
// Thread-safety: one call per ApiClient at a time.
#pragma once

#include <iosfwd>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "cli/client.h"

namespace assay::cli {

// Returns the job document once its state is terminal. While waiting, shows
// the state, queue position and elapsed time on `err`: one line redrawn in
// place when `tty`, otherwise a new line on each change of state or position.
Result<nlohmann::json> WaitForJob(ApiClient& client, const std::string& id, std::ostream& err, bool tty);

// The same for a batch: polls GET /v1/batches/{id} until summary.all_finished;
// progress shows how many candidates finished and how many run or wait.
Result<nlohmann::json> WaitForBatch(ApiClient& client, const std::string& id, std::ostream& err, bool tty);

}  // namespace assay::cli

// The client commands of `assay` (docs/cli.md): one function per command,
// taking an options struct and the streams to write to, returning the exit
// code. Output for people goes to `out`; progress and errors to `err`.
//
// Exit codes (stable; scripts depend on them):
//   0 success (the job is done)
//   1 the job failed because of the user's code: compile_error, launch_error,
//     runtime_error, wrong_result, timeout
//   2 usage error, or the request was rejected (rejected, unauthorized, not_found)
//   3 infrastructure error: server unreachable, infra_error
//   4 the job was cancelled
//
// Thread-safety: commands are independent; each makes its own ApiClient.
#pragma once

#include <iosfwd>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "cli/spec_builder.h"
#include "common/status.h"

namespace assay::cli {

enum ExitCode : int { kExitOk = 0, kExitJobFailed = 1, kExitUsage = 2, kExitInfra = 3, kExitCancelled = 4 };

// The exit code for a failed request or command.
int ExitCodeFor(const Status& status);
// The exit code for a finished job document (state + error class).
int ExitCodeForJob(const nlohmann::json& job);
// Prints "error: <class>: <message>" (and the field) to err; returns ExitCodeFor.
int ReportError(const Status& status, std::ostream& err);

struct CommonOptions {
  std::string server;   // --server; empty: $ASSAY_SERVER or http://127.0.0.1:8080
  bool json = false;    // --json: machine-readable output on stdout
  bool tty = false;     // stderr is a terminal: progress is redrawn in place
};

struct RunOptions {
  CommonOptions common;
  SpecOptions spec;
  bool print_spec = false;  // --dry-run: print the spec that would be sent, send nothing
};

struct JobOptions {
  CommonOptions common;
  std::string id;
};

struct ListOptions {
  CommonOptions common;
  std::string state;    // only jobs in this state
  int limit = 20;       // 1..1000
  std::string before;   // paging cursor (a job id)
};

// `assay batch`: submits a batch (or, with `id`, follows an existing one),
// waits for every job and prints a table (candidate, verdict, runtime,
// speedup) or, with --json, the GET /v1/batches/{id} document.
struct BatchOptions {
  CommonOptions common;
  BatchRequestOptions request;
  std::string id;        // --id: follow this batch instead of submitting one
  bool no_wait = false;  // --no-wait: print the batch id (or the submit answer) and exit
};

// `assay eval`: a seed-002 request (POST /v1/eval?wait=0), then waits like
// `run` and prints the seed-shaped answer (GET /v1/eval/{id}).
struct EvalOptions {
  CommonOptions common;
  EvalRequestOptions request;
  bool no_wait = false;
};

// Builds the spec, submits it, waits for the end, prints the result.
int RunCommand(const RunOptions& options, std::ostream& out, std::ostream& err);
// Builds the spec and submits it; prints the job id (or the job JSON).
int SubmitCommand(const RunOptions& options, std::ostream& out, std::ostream& err);
// Prints the job's state (one GET, no waiting).
int StatusCommand(const JobOptions& options, std::ostream& out, std::ostream& err);
// Waits for the job to end, then prints its result.
int ResultCommand(const JobOptions& options, std::ostream& out, std::ostream& err);
// Cancels a job, or every unfinished job of a batch (an id "b_...").
int CancelCommand(const JobOptions& options, std::ostream& out, std::ostream& err);
// Exit code 0 when every candidate is done; else 3 if any failed for an
// infrastructure reason, else 1 if any failed because of its code (a
// failure, a timeout), else 2 if any was rejected, else 4 (cancelled).
int BatchCommand(const BatchOptions& options, std::ostream& out, std::ostream& err);
// Exit codes as `run`.
int EvalCommand(const EvalOptions& options, std::ostream& out, std::ostream& err);
// The exit code of a finished batch document (GET /v1/batches/{id}).
int ExitCodeForBatch(const nlohmann::json& batch);
int ListCommand(const ListOptions& options, std::ostream& out, std::ostream& err);
// GPUs of the server.
int GpusCommand(const CommonOptions& options, std::ostream& out, std::ostream& err);
// Prints a GPU inventory (this machine's, or a server's) as a table or JSON;
// exit 0 when GPUs are listed, 3 when none are.
int PrintGpus(const nlohmann::json& inventory, bool json, std::ostream& out);

}  // namespace assay::cli

// The `assay` binary: server (serve, and the hidden worker / internal-compile
// children it starts), local tools (compile, keys, gpus --local) and the API
// client commands. docs/cli.md documents every command, flag and exit code.
#include <csignal>
#include <unistd.h>

#include <iostream>

#include <CLI/CLI.hpp>

#include "cli/admin_commands.h"
#include "cli/commands.h"
#include "compile/compile_command.h"
#include "compile/compiler.h"
#include "sched/serve.h"
#include "worker/worker_client.h"

namespace {

using assay::cli::CommonOptions;

constexpr char kFooter[] = R"(
Environment:
  ASSAY_SERVER   server URL for client commands (default http://127.0.0.1:8080)
  ASSAY_API_KEY  API key sent to the server (create one with `assay keys create NAME`)

Exit codes:
  0  success (the job is done)
  1  the job failed because of its code: compile_error, launch_error,
     runtime_error, wrong_result, timeout
  2  usage error, or the request was rejected (bad spec, unknown job, bad key)
  3  infrastructure error: server unreachable, infra_error, no GPU
  4  the job was cancelled

See docs/cli.md for every command.)";

void AddSpecOptions(CLI::App* cmd, assay::cli::RunOptions& o) {
  cmd->add_option("FILE", o.spec.file, "Source file: a .cu with an `assay:` contract header or a main(), or any file with --kind/--spec");
  cmd->add_option("--spec", o.spec.spec_file, "A whole job spec (JSON, docs/job-spec.md); FILE then fills its source");
  cmd->add_option("--kind", o.spec.kind, "Job kind: compile, cuda, cubin, ptx, fatbin, cuda_program, triton, torch, torch_cuda, kernelbench");
  cmd->add_flag("--compile-only", o.spec.compile_only, "Only compile (kind compile): resource usage, no run, no GPU needed");
  cmd->add_option("--arch", o.spec.arch, "Target architecture, e.g. sm_90 (default: the GPU's)");
  cmd->add_option("--compiler", o.spec.compiler, "nvrtc or nvcc");
  cmd->add_option("--flag", o.spec.flags, "Extra compiler flag (repeatable; allow-listed by the server)");
  cmd->add_option("--name", o.spec.name, "A label for the job");
  cmd->add_option("--timeout", o.spec.timeout_s, "Wall-clock limit for the job [s]");
  cmd->add_option("--candidate", o.spec.candidate, "KernelBench: the candidate (defines ModelNew); FILE is the problem");
  cmd->add_option("--num-trials", o.spec.num_trials, "KernelBench: timed trials (default 100)");
  cmd->add_option("--reference", o.spec.reference, "torch, torch_cuda, triton jobs: a Python reference kernel file");
  cmd->add_option("--reference-kind", o.spec.reference_kind, "Kind of --reference: torch (default), torch_cuda or triton")
      ->check(CLI::IsMember({"torch", "torch_cuda", "triton"}));
}

}  // namespace

int main(int argc, char** argv) {
  // A server that drops a connection mid-upload must give an error, not kill the CLI.
  std::signal(SIGPIPE, SIG_IGN);
  // The compile child's arguments belong to the compile component, which parses
  // them itself (compile/compiler.h: ParseInternalCompileArgs).
  if (argc > 1 && std::string_view(argv[1]) == "internal-compile") {
    auto options = assay::ParseInternalCompileArgs(std::vector<std::string>(argv + 2, argv + argc));
    if (!options.ok()) {
      std::fprintf(stderr, "assay internal-compile: %s\n", options.status().ToString().c_str());
      return 2;
    }
    return assay::InternalCompileMain(*options);
  }
  CLI::App app{"Assay: run GPU kernels on real GPUs and get trustworthy correctness and timing."};
  app.set_version_flag("--version", ASSAY_VERSION);
  app.footer(kFooter);
  app.require_subcommand(1);
  app.fallthrough();  // global options may follow the subcommand

  CommonOptions common;
  common.tty = isatty(STDERR_FILENO) == 1;
  app.add_option("--server", common.server, "Server URL (default $ASSAY_SERVER or http://127.0.0.1:8080)");
  app.add_flag("--json", common.json, "Machine-readable JSON on stdout instead of tables");

  // serve ---------------------------------------------------------------------
  assay::ServeOptions serve;
  bool no_sandbox = false;
  auto* serve_cmd = app.add_subcommand("serve", "Run the server: store, scheduler, one worker per GPU, HTTP API");
  serve_cmd->add_option("--host", serve.host, "Address to listen on (0.0.0.0 exposes the server)")->capture_default_str();
  serve_cmd->add_option("--port", serve.port, "TCP port; 0 picks a free one")->capture_default_str();
  serve_cmd->add_option("--data-dir", serve.data_dir, "Store (assay.db), compile cache, work dirs")->capture_default_str();
  serve_cmd->add_flag("--no-auth", serve.no_auth, "Accept requests without an API key (loopback hosts only)");
  serve_cmd->add_option("--compile-threads", serve.compile_threads, "Compile pool size; 0 = CPU cores")->capture_default_str();
  serve_cmd->add_option("--max-attempts", serve.max_attempts, "Runs of a job after infrastructure failures")->capture_default_str();
  serve_cmd->add_option("--max-request-bytes", serve.max_request_bytes, "Largest request body [bytes]")->capture_default_str();
  serve_cmd->add_option("--max-sse-streams", serve.max_sse_streams, "Concurrent event streams")->capture_default_str();
  serve_cmd->add_flag("--no-sandbox", no_sandbox, "Run user programs without the sandbox (trusted code only)");
  serve_cmd->add_option("--port-file", serve.port_file, "Write the bound port here once listening");
  serve_cmd->add_option("--log-level", serve.log_level, "debug, info, warn or error")
      ->check(CLI::IsMember({"debug", "info", "warn", "error"}))->capture_default_str();
  serve_cmd->add_flag("--log-json", serve.log_json, "Log JSON lines instead of logfmt");
  serve_cmd->add_option("--python", serve.python,
                        "Interpreter for the Python kinds (default $ASSAY_PYTHON or python3; none = no Python kinds)");
  // Test-only: the Python kinds on the CPU (CI has no GPU). Not in --help.
  serve_cmd->add_option("--python-device", serve.python_device, "cuda, or cpu (tests only)")
      ->check(CLI::IsMember({"cuda", "cpu"}))->group("");
  serve_cmd->add_option("--python-standby", serve.python_standby,
                        "Python harness processes per GPU started ahead of the jobs (import torch, CUDA context) "
                        "while other jobs run; 0 = each job starts its own")
      ->check(CLI::Range(0, 8))->capture_default_str();

  // worker / internal-compile (children of serve; hidden) ---------------------
  int worker_device = -1;
  std::filesystem::path worker_dir;
  bool worker_no_sandbox = false;
  auto* worker_cmd = app.add_subcommand("worker", "Worker process (started by serve)");
  worker_cmd->group("");
  worker_cmd->add_option("--device", worker_device, "CUDA ordinal; -1 = no GPU");
  worker_cmd->add_option("--work-dir", worker_dir, "Per-job temp dirs are made here")->required();
  worker_cmd->add_flag("--no-sandbox", worker_no_sandbox, "Run user programs without the sandbox");
  assay::PythonWorkerOptions worker_python;
  worker_cmd->add_option("--python", worker_python.interpreter, "Interpreter for the Python kinds");
  worker_cmd->add_option("--python-device", worker_python.device, "cuda or cpu")
      ->check(CLI::IsMember({"cuda", "cpu"}));
  worker_cmd->add_option("--python-cache", worker_python.cache_dir, "torch_ext/ and triton/ caches");
  worker_cmd->add_option("--python-standby", worker_python.standby, "Harness processes started ahead of jobs")
      ->check(CLI::Range(0, 8));


  // compile --------------------------------------------------------------------
  assay::CompileCommandOptions compile;
  auto* compile_cmd = app.add_subcommand("compile", "Compile a .cu locally (no server, no GPU): cubin, resources, PTX/SASS");
  compile_cmd->add_option("FILE", compile.file, "CUDA C++ source")->required();
  compile_cmd->add_option("--arch", compile.arch, "Target architecture")->capture_default_str();
  compile_cmd->add_option("--compiler", compile.compiler, "nvrtc or nvcc")
      ->check(CLI::IsMember({"nvrtc", "nvcc"}))->capture_default_str();
  compile_cmd->add_option("--flag", compile.flags, "Extra compiler flag (repeatable; allow-listed)");
  compile_cmd->add_flag("--ptx", compile.ptx, "Print the PTX");
  compile_cmd->add_flag("--sass", compile.sass, "Print the SASS");
  compile_cmd->add_option("-o,--output", compile.output, "Cubin path (default FILE with .cubin)");
  compile_cmd->add_option("--cache-dir", compile.cache_dir, "Compile cache (default ~/.cache/assay/compile)");

  // keys -----------------------------------------------------------------------
  std::filesystem::path keys_dir = ".assay";
  std::string key_arg;
  auto* keys_cmd = app.add_subcommand("keys", "Manage API keys in the local store (run on the server host)");
  keys_cmd->require_subcommand(1);
  keys_cmd->add_option("--data-dir", keys_dir, "The server's data dir")->capture_default_str();
  auto* keys_create = keys_cmd->add_subcommand("create", "Create a key; its secret is printed once");
  keys_create->add_option("NAME", key_arg, "Who the key is for")->required();
  auto* keys_list = keys_cmd->add_subcommand("list", "List keys (never their secrets)");
  auto* keys_revoke = keys_cmd->add_subcommand("revoke", "Revoke a key");
  keys_revoke->add_option("ID", key_arg, "Key id (k_...)")->required();
  for (auto* sub : {keys_create, keys_list, keys_revoke}) sub->fallthrough();

  // gpus -----------------------------------------------------------------------
  bool gpus_local = false;
  auto* gpus_cmd = app.add_subcommand("gpus", "List GPUs of the server (or of this machine with --local)");
  gpus_cmd->add_flag("--local", gpus_local, "This machine's GPUs, without a server");

  // client commands ------------------------------------------------------------
  assay::cli::RunOptions run;
  auto* run_cmd = app.add_subcommand("run", "Submit a job, wait for it, print the result");
  AddSpecOptions(run_cmd, run);
  run_cmd->add_flag("--dry-run", run.print_spec, "Print the job spec that would be sent; send nothing");
  auto* submit_cmd = app.add_subcommand("submit", "Submit a job and print its id (no waiting)");
  AddSpecOptions(submit_cmd, run);

  assay::cli::JobOptions job;
  auto* status_cmd = app.add_subcommand("status", "Show a job's state");
  auto* result_cmd = app.add_subcommand("result", "Wait for a job to end and print its result");
  auto* cancel_cmd = app.add_subcommand("cancel", "Cancel a queued or running job");
  for (auto* sub : {status_cmd, result_cmd}) sub->add_option("ID", job.id, "Job id (j_...)")->required();
  cancel_cmd->add_option("ID", job.id, "Job id (j_...), or a batch id (b_...): its unfinished jobs")->required();

  assay::cli::BatchOptions batch;
  auto* batch_cmd = app.add_subcommand(
      "batch", "Submit a KernelBench problem and many candidates as one batch, wait, print a table");
  batch_cmd->add_option("FILE", batch.request.files,
                        "problem.py then candidate files; with --spec: candidate files only");
  batch_cmd->add_option("--spec", batch.request.spec_file, "Template job spec (JSON) every candidate fills in");
  batch_cmd->add_option("--name", batch.request.name, "A label for the batch");
  batch_cmd->add_option("--timeout", batch.request.timeout_s, "Wall-clock limit per job [s]");
  batch_cmd->add_option("--num-trials", batch.request.num_trials, "KernelBench: timed trials per candidate");
  batch_cmd->add_option("--id", batch.id, "Follow an existing batch (b_...) instead of submitting one");
  batch_cmd->add_flag("--no-wait", batch.no_wait, "Print the batch id and exit (with --id: its state now)");

  assay::cli::EvalOptions eval;
  auto* eval_cmd = app.add_subcommand(
      "eval", "Seed-002 style evaluation: a KernelBench reference against a candidate (POST /v1/eval)");
  eval_cmd->add_option("--ref", eval.request.ref, "Reference: a KernelBench problem (Model, get_inputs)")->required();
  eval_cmd->add_option("--custom", eval.request.custom, "Candidate: defines ModelNew")->required();
  eval_cmd->add_option("--ref-type", eval.request.ref_type, "kernel_type of the reference")
      ->check(CLI::IsMember({"torch", "torch_cuda", "triton"}))->capture_default_str();
  eval_cmd->add_option("--custom-type", eval.request.custom_type, "kernel_type of the candidate")
      ->check(CLI::IsMember({"torch", "torch_cuda", "triton"}))->capture_default_str();
  eval_cmd->add_option("--num-trials", eval.request.num_trials, "Timed trials (server default 100)");
  eval_cmd->add_option("--timeout", eval.request.timeout_s, "Wall-clock limit [s] (server default 120)");
  eval_cmd->add_flag("--legacy", eval.request.legacy, "Send the legacy {ref_code, custom_code} form");
  eval_cmd->add_flag("--no-wait", eval.no_wait, "Print the job id and exit");

  assay::cli::ListOptions list;
  auto* list_cmd = app.add_subcommand("list", "List your jobs, newest first");
  list_cmd->add_option("--state", list.state, "Only jobs in this state")
      ->check(CLI::IsMember({"queued", "compiling", "running", "done", "failed", "cancelled", "timed_out"}));
  list_cmd->add_option("--limit", list.limit, "Jobs per page (1..1000)")->capture_default_str();
  list_cmd->add_option("--before", list.before, "Paging cursor: jobs older than this id");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : assay::cli::kExitUsage;
  }

  std::ostream& out = std::cout;
  std::ostream& err = std::cerr;
  run.common = common;
  job.common = common;
  list.common = common;
  batch.common = common;
  eval.common = common;

  if (*serve_cmd) {
    serve.sandbox = !no_sandbox;
    return assay::ServeMain(serve);
  }
  if (*worker_cmd) return assay::WorkerMain(worker_device, worker_dir, !worker_no_sandbox, worker_python);
  if (*compile_cmd) {
    compile.json = common.json;
    return assay::RunCompileCommand(compile);
  }
  if (*keys_cmd) {
    if (*keys_create) return assay::cli::KeysCreateCommand(keys_dir, key_arg, common.json, out, err);
    if (*keys_list) return assay::cli::KeysListCommand(keys_dir, common.json, out, err);
    return assay::cli::KeysRevokeCommand(keys_dir, key_arg, out, err);
  }
  if (*gpus_cmd) {
    return gpus_local ? assay::cli::LocalGpusCommand(common.json, out) : assay::cli::GpusCommand(common, out, err);
  }
  if (*run_cmd) return assay::cli::RunCommand(run, out, err);
  if (*submit_cmd) return assay::cli::SubmitCommand(run, out, err);
  if (*status_cmd) return assay::cli::StatusCommand(job, out, err);
  if (*result_cmd) return assay::cli::ResultCommand(job, out, err);
  if (*cancel_cmd) return assay::cli::CancelCommand(job, out, err);
  if (*list_cmd) return assay::cli::ListCommand(list, out, err);
  if (*batch_cmd) return assay::cli::BatchCommand(batch, out, err);
  if (*eval_cmd) return assay::cli::EvalCommand(eval, out, err);
  return assay::cli::kExitUsage;
}

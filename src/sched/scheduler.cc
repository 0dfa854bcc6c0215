#include "sched/scheduler.h"

#include <algorithm>

#include "common/log.h"
#include "common/util.h"
#include "compile/compile_json.h"
#include "spec/capabilities.h"
#include "spec/job_state.h"
#include "spec/result.h"
#include "worker/python_request.h"

namespace assay {
namespace {

using nlohmann::json;

constexpr size_t kRunSecondsKept = 1000;

bool NeedsCompile(JobKind kind) {
  return kind == JobKind::kCompile || kind == JobKind::kCuda || kind == JobKind::kCudaProgram;
}

// The result's `compile` section (docs/result-schema.md).
json CompileSection(const CompileOutput& out) {
  json kernels = json::object();
  for (const auto& [name, usage] : out.kernels) kernels[name] = ResourceUsageToJson(usage);
  json j = {{"log", SanitizeUtf8(out.log)},      {"arch", out.arch},
            {"compiler", out.compiler},          {"toolkit_version", out.toolkit_version},
            {"cache_hit", out.cache_hit},        {"duration_ms", out.duration_ms},
            {"cache_key", out.cache_key},        {"kernels", kernels}};
  if (!out.ptx.empty()) j["ptx"] = SanitizeUtf8(out.ptx);
  if (!out.sass.empty()) j["sass"] = SanitizeUtf8(out.sass);
  return j;
}

// A transition that only records why.
TransitionUpdate Because(std::string message) {
  TransitionUpdate u;
  u.message = std::move(message);
  return u;
}

JobState TerminalStateFor(const Status& s) {
  if (s.ok()) return JobState::kDone;
  if (s.error_class() == ErrorClass::kTimeout) return JobState::kTimedOut;
  if (s.error_class() == ErrorClass::kCancelled) return JobState::kCancelled;
  return JobState::kFailed;
}

}  // namespace

Scheduler::Scheduler(Store& store, Compiler& compiler, std::vector<WorkerOptions> workers,
                     SchedulerOptions options, Listener on_change)
    : store_(store), compiler_(compiler), options_(std::move(options)), on_change_(std::move(on_change)) {
  for (auto& w : workers) {
    auto slot = std::make_unique<Slot>();
    slot->client = std::make_unique<WorkerClient>(std::move(w));
    slots_.push_back(std::move(slot));
  }
  if (!options_.python.interpreter.empty()) preparer_ = std::make_unique<PythonPreparer>(options_.python);
}

Scheduler::~Scheduler() { Stop(); }

void Scheduler::Start() {
  for (int i = 0; i < std::max(1, options_.compile_threads); ++i)
    compile_threads_.emplace_back([this] { CompileLoop(); });
  for (auto& slot : slots_) {
    Slot* s = slot.get();
    s->thread = std::thread([this, s] { SlotLoop(s); });
  }
}

void Scheduler::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ && compile_threads_.empty()) return;
    stopping_ = true;
    for (auto& slot : slots_)
      if (!slot->busy_job.empty()) slot->client->Cancel(slot->busy_job);
  }
  work_cv_.notify_all();
  for (auto& t : compile_threads_)
    if (t.joinable()) t.join();
  compile_threads_.clear();
  for (auto& slot : slots_)
    if (slot->thread.joinable()) slot->thread.join();
}

void Scheduler::Enqueue(const JobRecord& job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.Push(job.key_id, job.id);
    keys_[job.id] = job.key_id;
  }
  work_cv_.notify_all();
}

void Scheduler::OnCancelled(const std::string& job_id) {
  std::lock_guard<std::mutex> lock(mu_);
  queue_.Remove(job_id);
  keys_.erase(job_id);
  ready_.erase(std::remove_if(ready_.begin(), ready_.end(),
                              [&](const ReadyItem& r) { return r.job_id == job_id; }),
               ready_.end());
  for (auto& slot : slots_)
    if (slot->busy_job == job_id) slot->client->Cancel(job_id);
  if (auto it = preparing_.find(job_id); it != preparing_.end()) *it->second = true;
  // A job being compiled is dropped when its compile ends: its next Transition is refused.
}

std::vector<json> Scheduler::WorkerHellos(int64_t wait_ms) {
  std::unique_lock<std::mutex> lock(mu_);
  hello_cv_.wait_for(lock, std::chrono::milliseconds(wait_ms), [&] {
    return stopping_ || std::all_of(slots_.begin(), slots_.end(), [](const auto& s) { return s->started_once; });
  });
  std::vector<json> hellos;
  for (const auto& slot : slots_)
    if (slot->hello.is_object()) hellos.push_back(slot->hello);
  return hellos;
}

void Scheduler::RecordHello(Slot* slot, const Result<json>& hello) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    slot->started_once = true;
    if (hello.ok()) slot->hello = *hello;
  }
  hello_cv_.notify_all();
}

std::optional<int> Scheduler::QueuePosition(const std::string& job_id) {
  std::lock_guard<std::mutex> lock(mu_);
  return queue_.Position(job_id);
}

SchedulerStats Scheduler::Stats() {
  SchedulerStats s;
  std::lock_guard<std::mutex> lock(mu_);
  s.queued = queue_.size();
  s.ready = ready_.size();
  s.compiling = compiling_;
  for (auto& slot : slots_) {
    WorkerSlotStatus w;
    w.device = slot->client->options().device;
    w.alive = slot->client->alive();
    w.busy_job = slot->busy_job;
    w.restarts = slot->client->restarts();
    w.jobs_run = slot->jobs_run;
    s.workers.push_back(w);
  }
  s.compile_cache_hits = cache_hits_;
  s.compile_cache_misses = cache_misses_;
  s.retries = retries_;
  s.finished = finished_;
  s.run_seconds.assign(run_seconds_.begin(), run_seconds_.end());
  return s;
}

std::optional<JobRecord> Scheduler::Move(const std::string& job_id, JobState to, TransitionUpdate update) {
  auto rec = store_.Transition(job_id, to, update);
  if (!rec.ok()) {
    // Refused transitions are expected (the job was cancelled meanwhile); others are not.
    if (rec.status().error_class() != ErrorClass::kRejected)
      log::Event("job.transition_failed").Kv("job", job_id).Kv("to", JobStateName(to))
          .Kv("error", rec.status().ToString()).Error();
    return std::nullopt;
  }
  log::Event("job.state").Kv("job", job_id).Kv("state", JobStateName(to))
      .Kv("class", update.error_class).Info();
  if (on_change_) on_change_(*rec);
  return std::move(rec).value();
}

void Scheduler::CompileLoop() {
  for (;;) {
    std::string job_id;
    {
      std::unique_lock<std::mutex> lock(mu_);
      work_cv_.wait(lock, [&] { return stopping_ || (!queue_.empty() && ready_.size() < options_.max_ready); });
      if (stopping_) return;
      job_id = *queue_.Pop();
      keys_.erase(job_id);
      ++compiling_;
    }
    Prepare(job_id);
    {
      std::lock_guard<std::mutex> lock(mu_);
      --compiling_;
    }
    work_cv_.notify_all();
  }
}

// Takes one job out of the queue: compiles what needs compiling, gathers the
// data the worker needs, then finishes the job (compile-only) or queues it for a worker.
void Scheduler::Prepare(const std::string& job_id) {
  auto rec = store_.GetJob(job_id);
  if (!rec.ok() || rec->state != JobState::kQueued) return;  // cancelled while queued
  json result = MakeResultSkeleton(job_id, rec->kind);
  SetState(result, JobState::kQueued, rec->created_ms);
  auto spec = ParseJobSpec(rec->spec_json);
  if (!spec.ok()) {
    Finish(job_id, Status::Infra("stored spec no longer parses: " + spec.status().ToString()), result,
           rec->attempts);
    return;
  }
  if (IsPythonKind(rec->kind)) {
    PreparePython(job_id, *rec, *spec, std::move(result));
    return;
  }
  ReadyItem item;
  item.job_id = job_id;
  item.timeout_ms = static_cast<int64_t>(spec->timeout_s * 1000);

  const bool compiles = NeedsCompile(rec->kind) ||
                        (spec->reference && spec->reference->kernel && NeedsCompile(spec->reference->kernel->kind));
  if (compiles) {
    if (!Move(job_id, JobState::kCompiling, Because("compiling"))) return;
    SetState(result, JobState::kCompiling, NowUnixMs());
  }
  auto module = BuildModule(*spec, rec->kind, &result["compile"]);
  if (!module.ok()) {
    Finish(job_id, module.status(), result, rec->attempts);
    return;
  }
  if (rec->kind == JobKind::kCompile) {
    // The module is the product of a compile-only job: keep it downloadable.
    if (auto cubin = ReadFile(*module); cubin.ok()) {
      if (auto hash = store_.PutBlob(*cubin); hash.ok()) result["compile"]["cubin_blob"] = *hash;
    }
    Finish(job_id, Status::Ok(), result, rec->attempts);
    return;
  }
  item.artifact = *module;
  if (spec->reference && spec->reference->kernel) {
    auto ref = BuildModule(*spec->reference->kernel, spec->reference->kernel->kind, &result["reference_compile"]);
    if (result["reference_compile"].is_null()) result.erase("reference_compile");
    if (!ref.ok()) {
      Status s = ref.status();
      // The reference is the user's too, but say which of the two failed.
      Finish(job_id, Status(s.error_class(), "reference: " + s.message(), s.field()), result, rec->attempts);
      return;
    }
    item.reference_artifact = *ref;
  }
  // Uploaded inputs and expected outputs travel to the worker as files.
  std::vector<std::string> hashes;
  for (const auto& a : spec->args)
    if (a.init && a.init->kind == InitSpec::Kind::kBlob) hashes.push_back(a.init->blob.hash);
  if (spec->reference)
    for (const auto& [name, ref] : spec->reference->expected) hashes.push_back(ref.hash);
  for (const auto& h : hashes) {
    auto path = MaterializeBlob(h);
    if (!path.ok()) {
      Finish(job_id, path.status(), result, rec->attempts);
      return;
    }
    item.blob_files[h] = *path;
  }
  item.spec = json::parse(rec->spec_json, nullptr, false);
  item.result = std::move(result);
  {
    std::lock_guard<std::mutex> lock(mu_);
    ready_.push_back(std::move(item));
  }
  work_cv_.notify_all();
}

void Scheduler::PreparePython(const std::string& job_id, const JobRecord& rec, const JobSpec& spec, json result) {
  ReadyItem item;
  item.job_id = job_id;
  item.timeout_ms = static_cast<int64_t>(spec.timeout_s * 1000);
  // Sources and data travel to the worker (and the prepare) as files.
  std::vector<std::string> hashes;
  auto add_source = [&](const SourceSpec& s) {
    if (s.form == SourceSpec::Form::kBlob) hashes.push_back(s.blob);
  };
  if (spec.kind != JobKind::kKernelbench) add_source(spec.source);
  if (spec.problem) add_source(*spec.problem);
  if (spec.candidate) add_source(*spec.candidate);
  for (const auto& a : spec.args)
    if (a.init && a.init->kind == InitSpec::Kind::kBlob) hashes.push_back(a.init->blob.hash);
  if (spec.reference) {
    if (spec.reference->kernel) add_source(spec.reference->kernel->source);
    for (const auto& [name, ref] : spec.reference->expected) hashes.push_back(ref.hash);
  }
  for (const auto& h : hashes) {
    auto path = MaterializeBlob(h);
    if (!path.ok()) {
      Finish(job_id, path.status(), result, rec.attempts);
      return;
    }
    item.blob_files[h] = *path;
  }
  auto source = PythonCandidateSource(spec, item.blob_files);
  if (!source.ok()) {
    Finish(job_id, source.status(), result, rec.attempts);
    return;
  }
  if (preparer_ && NeedsPythonPrepare(spec.kind, *source)) {
    if (!Move(job_id, JobState::kCompiling, Because("preparing (building the candidate's extensions)"))) return;
    SetState(result, JobState::kCompiling, NowUnixMs());
    // The extension key holds the interpreter's versions, as the workers' probe reported them.
    json probe;
    for (const json& hello : WorkerHellos(options_.python_probe_wait_ms)) {
      const json& py = hello.contains("python") ? hello["python"] : json();
      if (py.is_object() && py.value("ok", false)) {
        probe = py["probe"];
        break;
      }
    }
    auto cancel = std::make_shared<std::atomic<bool>>(false);
    {
      std::lock_guard<std::mutex> lock(mu_);
      preparing_[job_id] = cancel;
    }
    PythonPrepareOutput p = preparer_->Prepare(job_id, spec, item.blob_files, probe, cancel.get());
    {
      std::lock_guard<std::mutex> lock(mu_);
      preparing_.erase(job_id);
    }
    (p.compile["cache_hit"].get<bool>() ? cache_hits_ : cache_misses_)++;
    result["compile"] = std::move(p.compile);
    if (!p.status.ok()) {
      if (p.status.error_class() == ErrorClass::kCompileError)
        result["error"] = {{"detail", {{"log", result["compile"]["log"]}}}};
      Finish(job_id, p.status, std::move(result), rec.attempts);
      return;
    }
  }
  item.spec = json::parse(rec.spec_json, nullptr, false);
  item.result = std::move(result);
  {
    std::lock_guard<std::mutex> lock(mu_);
    ready_.push_back(std::move(item));
  }
  work_cv_.notify_all();
}

Result<std::filesystem::path> Scheduler::BuildModule(const KernelSpec& kernel, JobKind job_kind, json* section) {
  std::string bytes;
  if (kernel.source.form == SourceSpec::Form::kBlob) {
    auto blob = store_.GetBlob(kernel.source.blob);
    if (!blob.ok()) return Status::Rejected("source blob: " + blob.status().message(), "source.blob");
    bytes = std::move(blob).value();
  } else {
    bytes = kernel.source.data;
  }
  if (!NeedsCompile(kernel.kind)) {
    // cubin / ptx / fatbin: the module is the upload itself.
    auto path = options_.files_dir / ("module-" + Sha256Hex(bytes));
    if (!std::filesystem::exists(path)) ASSAY_RETURN_IF_ERROR(WriteFileAtomic(path, bytes));
    return path;
  }
  CompileRequest req;
  req.source = std::move(bytes);
  if (!kernel.source.filename.empty()) req.filename = kernel.source.filename;
  CompileSpec c = kernel.compile.value_or(CompileSpec{});
  req.compiler = c.compiler;
  req.arch = c.arch.empty() ? options_.default_arch : c.arch;
  req.flags = c.flags;
  req.want_ptx = c.ptx;
  req.want_sass = c.sass;
  if (job_kind == JobKind::kCudaProgram) {
    req.output = CompileOutputKind::kExecutable;
    req.compiler = "nvcc";
  }
  CompileOutput out = compiler_.CompileIsolated(req, options_.self_exe);
  (out.cache_hit ? cache_hits_ : cache_misses_)++;
  *section = CompileSection(out);
  if (!out.status.ok()) return out.status;
  return out.artifact;
}

Result<std::filesystem::path> Scheduler::MaterializeBlob(const std::string& hash) {
  auto path = options_.files_dir / ("blob-" + hash);
  if (std::filesystem::exists(path)) return path;
  auto data = store_.GetBlob(hash);
  if (!data.ok()) {
    if (data.status().error_class() == ErrorClass::kNotFound)
      return Status::Rejected("blob " + hash + " was never uploaded", "args");
    return data.status();
  }
  ASSAY_RETURN_IF_ERROR(WriteFileAtomic(path, *data));
  return path;
}

void Scheduler::SlotLoop(Slot* slot) {
  auto hello = slot->client->EnsureStarted();
  if (!hello.ok())
    log::Event("worker.start_failed").Kv("device", slot->client->options().device)
        .Kv("error", hello.status().ToString()).Error();
  RecordHello(slot, hello);
  for (;;) {
    ReadyItem item;
    {
      std::unique_lock<std::mutex> lock(mu_);
      work_cv_.wait(lock, [&] { return stopping_ || !ready_.empty(); });
      if (stopping_) return;
      item = std::move(ready_.front());
      ready_.pop_front();
      slot->busy_job = item.job_id;
    }
    work_cv_.notify_all();  // room in ready_: compiles may continue
    RunOnWorker(slot, std::move(item));
    // A replaced worker says hello again (the next job would start it anyway).
    bool stopping;
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping = stopping_;
    }
    if (!stopping && !slot->client->alive()) RecordHello(slot, slot->client->EnsureStarted());
    std::lock_guard<std::mutex> lock(mu_);
    slot->busy_job.clear();
    ++slot->jobs_run;
  }
}

void Scheduler::RunOnWorker(Slot* slot, ReadyItem item) {
  SetState(item.result, JobState::kRunning, NowUnixMs());
  TransitionUpdate running = Because("running on device " + std::to_string(slot->client->options().device));
  running.result_json = item.result.dump();
  auto rec = Move(item.job_id, JobState::kRunning, std::move(running));
  if (!rec) return;  // cancelled before it started
  WorkItem work;
  work.job_id = item.job_id;
  work.spec = item.spec;
  work.artifact = item.artifact;
  work.reference_artifact = item.reference_artifact;
  work.blob_files = item.blob_files;
  work.timeout_ms = item.timeout_ms;
  int64_t t0 = MonotonicMs();
  WorkOutcome outcome = slot->client->Run(work);
  double secs = (MonotonicMs() - t0) / 1000.0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    run_seconds_.push_back(secs);
    if (run_seconds_.size() > kRunSecondsKept) run_seconds_.pop_front();
  }
  json result = std::move(item.result);
  if (outcome.result.is_object())
    for (auto& [k, v] : outcome.result.items()) result[k] = v;
  // Outputs the job asked for become downloadable blobs.
  for (const auto& [name, bytes] : outcome.blobs) {
    auto hash = store_.PutBlob(bytes);
    if (hash.ok())
      result["outputs"][name] = {{"blob", *hash}, {"format", "npy"}, {"bytes", bytes.size()}};
    else
      result["outputs"][name] = {{"error", hash.status().message()}};
  }
  Finish(item.job_id, outcome.status, std::move(result), rec->attempts);
}

void Scheduler::Finish(const std::string& job_id, const Status& status, json result, int attempts) {
  if (status.error_class() == ErrorClass::kInfraError && attempts + 1 < options_.max_attempts) {
    // Our fault: try again, with the reason on record.
    ++retries_;
    TransitionUpdate retry = Because("retrying after infrastructure error: " + status.message());
    retry.count_attempt = true;
    auto rec = Move(job_id, JobState::kQueued, std::move(retry));
    if (rec) Enqueue(*rec);
    return;
  }
  JobState to = TerminalStateFor(status);
  SetState(result, to, NowUnixMs());
  if (status.ok()) {
    result["error"] = nullptr;
  } else {
    // A stage may have left the error's detail (a compile log, a traceback).
    json detail = result.contains("error") && result["error"].is_object() ? result["error"].value("detail", json())
                                                                          : json();
    SetError(result, status, std::move(detail));
  }
  TransitionUpdate update;
  update.message = status.ok() ? "done" : status.ToString();
  update.result_json = result.dump(-1, ' ', false, json::error_handler_t::replace);
  if (!status.ok()) {
    update.error_class = std::string(ErrorClassName(status.error_class()));
    update.error_message = status.message();
  }
  if (Move(job_id, to, std::move(update))) CountFinished(to, status);
}

void Scheduler::CountFinished(JobState state, const Status& status) {
  std::string key(JobStateName(state));
  if (!status.ok()) key += ":" + std::string(ErrorClassName(status.error_class()));
  std::lock_guard<std::mutex> lock(mu_);
  ++finished_[key];
}

}  // namespace assay

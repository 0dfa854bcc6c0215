#include "sched/job_service_impl.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "common/log.h"
#include "common/util.h"
#include "gpu/nvml.h"
#include "spec/job_spec.h"
#include "spec/result.h"

namespace assay {

using nlohmann::json;

namespace {

// How long a submit of a Python kind waits for the workers' first hello
// (their interpreter probe takes seconds) right after the server started.
constexpr int64_t kWorkerHelloWaitMs = 120'000;

bool UsesPython(const JobSpec& spec) {
  return IsPythonKind(spec.kind) || (spec.reference && spec.reference->kernel && IsPythonKind(spec.reference->kernel->kind));
}

}  // namespace

void AddWorkerCapabilities(const std::vector<json>& hellos, Capabilities* caps) {
  std::string note;
  for (const json& h : hellos) {
    const json& py = h.contains("python") ? h["python"] : json();
    if (!py.is_object()) continue;
    bool cpu = py.value("device", "") == "cpu";
    if (py.contains("kinds") && py["kinds"].is_array()) {
      for (const json& k : py["kinds"]) {
        auto kind = k.is_string() ? JobKindFromName(k.get<std::string>()) : std::nullopt;
        if (!kind || !IsPythonKind(*kind)) continue;
        caps->supported.insert(*kind);
        if (cpu) caps->cpu_kinds.insert(*kind);
      }
    }
    if (note.empty() && py.contains("error") && py["error"].is_string()) note = py["error"].get<std::string>();
    // torch imports, triton does not: the only kind missing is triton.
    if (note.empty() && py.value("ok", false) && !caps->supported.count(JobKind::kTriton))
      note = "triton does not import in " + py.value("interpreter", std::string("the interpreter"));
  }
  if (hellos.empty()) note = "no worker has started";
  else if (note.empty() && !std::any_of(hellos.begin(), hellos.end(), [](const json& h) { return h.contains("python"); }))
    note = "the server runs no Python interpreter";
  caps->python_note = note;
}

JobServiceImpl::JobServiceImpl(Store& store, GpuInventory gpus, Capabilities caps, SpecLimits limits)
    : store_(store), gpus_(std::move(gpus)), caps_(std::move(caps)), limits_(limits), started_ms_(NowUnixMs()) {}

void JobServiceImpl::OnTransition(const JobRecord&) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++generation_;
  }
  cv_.notify_all();
}

Capabilities JobServiceImpl::CapabilitiesFor(const JobSpec& spec) {
  Capabilities caps = caps_;
  // The Python kinds are offered by the workers (their hello says whether the
  // interpreter imports torch), not by the server itself.
  if (UsesPython(spec) && scheduler_) AddWorkerCapabilities(scheduler_->WorkerHellos(kWorkerHelloWaitMs), &caps);
  return caps;
}

Result<JobRecord> JobServiceImpl::Submit(const std::string& key_id, std::string_view body) {
  auto spec = ParseJobSpec(body, limits_);
  if (!spec.ok()) {
    ++rejected_;
    return spec.status();
  }
  if (Status s = CheckSupported(*spec, CapabilitiesFor(*spec)); !s.ok()) {
    ++rejected_;
    return s;
  }
  JobRecord job;
  job.id = RandomId("j_");
  job.key_id = key_id;
  job.name = spec->name;
  job.kind = spec->kind;
  job.state = JobState::kQueued;
  job.spec_json = ToJson(*spec).dump();
  job.created_ms = job.updated_ms = NowUnixMs();
  ASSAY_RETURN_IF_ERROR(store_.CreateJob(job));
  ++submitted_;
  log::Event("job.submitted").Kv("job", job.id).Kv("kind", JobKindName(job.kind)).Kv("key", key_id).Info();
  OnTransition(job);
  if (scheduler_) scheduler_->Enqueue(job);
  return job;
}

Result<BatchRecord> JobServiceImpl::SubmitBatch(const std::string& key_id, const std::string& name,
                                                const std::vector<BatchItem>& items, size_t* failed_index) {
  if (items.empty()) return Status::Rejected("a batch needs at least one candidate", "candidates");
  if (items.size() > limits_.max_batch_candidates)
    return Status::Rejected("a batch has at most " + std::to_string(limits_.max_batch_candidates) + " candidates",
                            "candidates");
  BatchRecord batch;
  batch.id = RandomId("b_");
  batch.key_id = key_id;
  batch.name = name;
  batch.created_ms = NowUnixMs();
  // Validate everything before storing anything.
  for (size_t i = 0; i < items.size(); ++i) {
    auto spec = ParseJobSpec(items[i].spec_body, limits_);
    Status s = spec.ok() ? CheckSupported(*spec, CapabilitiesFor(*spec)) : spec.status();
    if (!s.ok()) {
      ++rejected_;
      if (failed_index) *failed_index = i;
      return s;
    }
    BatchMember m;
    m.name = items[i].name;
    m.job.id = RandomId("j_");
    m.job.key_id = key_id;
    m.job.name = spec->name;
    m.job.kind = spec->kind;
    m.job.state = JobState::kQueued;
    m.job.spec_json = ToJson(*spec).dump();
    m.job.created_ms = m.job.updated_ms = batch.created_ms;
    batch.members.push_back(std::move(m));
  }
  ASSAY_RETURN_IF_ERROR(store_.CreateBatch(batch));
  submitted_ += static_cast<int64_t>(batch.members.size());
  log::Event("batch.submitted").Kv("batch", batch.id).Kv("jobs", batch.members.size()).Kv("key", key_id).Info();
  OnTransition(batch.members.front().job);  // wakes every waiter once
  if (scheduler_)
    for (const BatchMember& m : batch.members) scheduler_->Enqueue(m.job);
  return batch;
}

Result<BatchRecord> JobServiceImpl::GetBatch(const std::string& id) { return store_.GetBatch(id); }

Result<JobRecord> JobServiceImpl::Get(const std::string& id) { return store_.GetJob(id); }

Result<std::vector<JobRecord>> JobServiceImpl::List(const JobFilter& filter) { return store_.ListJobs(filter); }

Result<JobRecord> JobServiceImpl::Cancel(const std::string& id) {
  auto cur = store_.GetJob(id);
  if (!cur.ok()) return cur.status();
  if (IsTerminal(cur->state))
    return Status::Rejected("job " + id + " already ended (" + std::string(JobStateName(cur->state)) + ")");
  TransitionUpdate u;
  u.message = "cancelled by request";
  u.error_class = "cancelled";
  u.error_message = "cancelled by request";
  json result = cur->result_json.empty() ? json() : json::parse(cur->result_json, nullptr, false);
  if (!result.is_object()) {
    result = MakeResultSkeleton(id, cur->kind);
    SetState(result, JobState::kQueued, cur->created_ms);
  }
  SetState(result, JobState::kCancelled, NowUnixMs());
  SetError(result, Status::Cancelled("cancelled by request"));
  u.result_json = result.dump();
  auto rec = store_.Transition(id, JobState::kCancelled, u);
  if (!rec.ok()) return rec.status();
  log::Event("job.state").Kv("job", id).Kv("state", "cancelled").Info();
  if (scheduler_) scheduler_->OnCancelled(id);
  OnTransition(*rec);
  return rec;
}

Result<std::vector<JobEvent>> JobServiceImpl::Events(const std::string& id, int64_t after_seq) {
  return store_.Events(id, after_seq);
}

bool JobServiceImpl::WaitForEvents(const std::string& id, int64_t after_seq, int64_t timeout_ms) {
  uint64_t gen;
  {
    std::lock_guard<std::mutex> lock(mu_);
    gen = generation_;
  }
  if (auto ev = store_.Events(id, after_seq); ev.ok() && !ev->empty()) return true;
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] { return generation_ != gen; });
}

std::optional<int> JobServiceImpl::QueuePosition(const std::string& id) {
  return scheduler_ ? scheduler_->QueuePosition(id) : std::nullopt;
}

json JobServiceImpl::JobJson(const JobRecord& job) {
  json j = {{"id", job.id},
            {"name", job.name},
            {"kind", JobKindName(job.kind)},
            {"state", JobStateName(job.state)},
            {"attempts", job.attempts},
            {"created_at", FormatUnixMs(job.created_ms)},
            {"updated_at", FormatUnixMs(job.updated_ms)}};
  auto pos = job.state == JobState::kQueued ? QueuePosition(job.id) : std::nullopt;
  j["queue_position"] = pos ? json(*pos) : json(nullptr);
  if (!job.error_class.empty())
    j["error"] = {{"class", job.error_class}, {"message", job.error_message}};
  else
    j["error"] = nullptr;
  json result = job.result_json.empty() ? json(nullptr) : json::parse(job.result_json, nullptr, false);
  j["result"] = result.is_discarded() ? json(nullptr) : result;
  return j;
}

json JobServiceImpl::Gpus() {
  json j = ToJson(gpus_);
  if (auto nvml = Nvml(); nvml.ok()) {
    for (auto& g : j["gpus"]) {
      if (auto t = (*nvml)->Read(g.value("uuid", "")); t.ok()) g["telemetry"] = ToJson(*t);
    }
  }
  if (scheduler_) {
    json workers = json::array();
    for (const auto& w : scheduler_->Stats().workers)
      workers.push_back({{"device", w.device}, {"alive", w.alive}, {"busy_job", w.busy_job},
                         {"restarts", w.restarts}, {"jobs_run", w.jobs_run}});
    j["workers"] = workers;
  }
  return j;
}

json JobServiceImpl::Stats() {
  json j;
  j["uptime_s"] = (NowUnixMs() - started_ms_) / 1000;
  j["submitted"] = submitted_.load();
  j["rejected"] = rejected_.load();
  if (auto st = store_.Stats(); st.ok()) {
    json by_state = json::object();
    for (auto& [state, n] : st->jobs_by_state) by_state[std::string(JobStateName(state))] = n;
    j["jobs_by_state"] = by_state;
    j["blobs"] = {{"count", st->blobs}, {"raw_bytes", st->blob_bytes_raw}, {"stored_bytes", st->blob_bytes_stored}};
  }
  if (scheduler_) {
    SchedulerStats s = scheduler_->Stats();
    j["queue"] = {{"queued", s.queued}, {"compiling", s.compiling}, {"ready", s.ready}};
    j["compile_cache"] = {{"hits", s.compile_cache_hits}, {"misses", s.compile_cache_misses}};
    j["retries"] = s.retries;
    j["finished"] = s.finished;
    int busy = static_cast<int>(std::count_if(s.workers.begin(), s.workers.end(),
                                              [](const auto& w) { return !w.busy_job.empty(); }));
    j["workers"] = {{"total", s.workers.size()}, {"busy", busy}};
  }
  j["gpus"] = gpus_.gpus.size();
  return j;
}

std::string JobServiceImpl::Metrics() {
  std::string out;
  auto metric = [&out](const char* name, const char* type, const char* help) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
  };
  metric("assay_jobs_submitted_total", "counter", "Jobs accepted since start.");
  out += fmt::format("assay_jobs_submitted_total {}\n", submitted_.load());
  metric("assay_jobs_rejected_total", "counter", "Submissions rejected by validation since start.");
  out += fmt::format("assay_jobs_rejected_total {}\n", rejected_.load());
  if (auto st = store_.Stats(); st.ok()) {
    metric("assay_jobs", "gauge", "Stored jobs by state.");
    for (auto& [state, n] : st->jobs_by_state)
      out += fmt::format("assay_jobs{{state=\"{}\"}} {}\n", JobStateName(state), n);
    metric("assay_blob_bytes", "gauge", "Blob bytes (raw and as stored).");
    out += fmt::format("assay_blob_bytes{{form=\"raw\"}} {}\nassay_blob_bytes{{form=\"stored\"}} {}\n",
                       st->blob_bytes_raw, st->blob_bytes_stored);
  }
  if (scheduler_) {
    SchedulerStats s = scheduler_->Stats();
    metric("assay_queue_depth", "gauge", "Jobs waiting, by stage.");
    out += fmt::format("assay_queue_depth{{stage=\"queued\"}} {}\nassay_queue_depth{{stage=\"compiling\"}} {}\n"
                       "assay_queue_depth{{stage=\"ready\"}} {}\n",
                       s.queued, s.compiling, s.ready);
    metric("assay_jobs_finished_total", "counter", "Jobs finished since start, by state and class.");
    for (auto& [k, n] : s.finished) {
      auto colon = k.find(':');
      std::string state = k.substr(0, colon);
      std::string cls = colon == std::string::npos ? "" : k.substr(colon + 1);
      out += fmt::format("assay_jobs_finished_total{{state=\"{}\",class=\"{}\"}} {}\n", state, cls, n);
    }
    metric("assay_compile_cache_total", "counter", "Compile cache lookups by outcome.");
    out += fmt::format("assay_compile_cache_total{{outcome=\"hit\"}} {}\nassay_compile_cache_total{{outcome=\"miss\"}} {}\n",
                       s.compile_cache_hits, s.compile_cache_misses);
    metric("assay_job_retries_total", "counter", "Jobs requeued after infrastructure errors.");
    out += fmt::format("assay_job_retries_total {}\n", s.retries);
    metric("assay_workers", "gauge", "Workers by state.");
    int busy = 0, alive = 0;
    int64_t restarts = 0;
    for (const auto& w : s.workers) {
      busy += !w.busy_job.empty();
      alive += w.alive;
      restarts += w.restarts;
    }
    out += fmt::format("assay_workers{{state=\"total\"}} {}\nassay_workers{{state=\"alive\"}} {}\n"
                       "assay_workers{{state=\"busy\"}} {}\n",
                       s.workers.size(), alive, busy);
    metric("assay_worker_restarts_total", "counter", "Workers replaced after a kill or crash.");
    out += fmt::format("assay_worker_restarts_total {}\n", restarts);
    metric("assay_job_run_seconds", "histogram", "Run-phase wall time of recent jobs.");
    static const double kBounds[] = {0.01, 0.05, 0.1, 0.5, 1, 5, 10, 60, 300};
    double sum = 0;
    for (double v : s.run_seconds) sum += v;
    for (double b : kBounds) {
      auto n = std::count_if(s.run_seconds.begin(), s.run_seconds.end(), [b](double v) { return v <= b; });
      out += fmt::format("assay_job_run_seconds_bucket{{le=\"{}\"}} {}\n", b, n);
    }
    out += fmt::format("assay_job_run_seconds_bucket{{le=\"+Inf\"}} {}\n", s.run_seconds.size());
    out += fmt::format("assay_job_run_seconds_sum {}\nassay_job_run_seconds_count {}\n", sum, s.run_seconds.size());
  }
  metric("assay_gpus", "gauge", "GPUs visible to this server.");
  out += fmt::format("assay_gpus {}\n", gpus_.gpus.size());
  return out;
}

json JobServiceImpl::Health() {
  json j = {{"status", "ok"}, {"version", "0.1.0"}, {"gpus", gpus_.gpus.size()}};
  if (gpus_.gpus.empty()) j["gpu_note"] = gpus_.status.ok() ? "no GPU" : gpus_.status.message();
  if (scheduler_) {
    auto s = scheduler_->Stats();
    int alive = static_cast<int>(std::count_if(s.workers.begin(), s.workers.end(), [](auto& w) { return w.alive; }));
    j["workers_alive"] = alive;
    j["queue_depth"] = s.queued + s.ready;
  }
  return j;
}

Result<std::string> JobServiceImpl::PutBlob(std::string_view data) { return store_.PutBlob(data); }
Result<std::string> JobServiceImpl::GetBlob(const std::string& hash) { return store_.GetBlob(hash); }
Result<bool> JobServiceImpl::HasBlob(const std::string& hash) { return store_.HasBlob(hash); }
Result<std::string> JobServiceImpl::Authenticate(const std::string& secret) { return store_.Authenticate(secret); }

}  // namespace assay

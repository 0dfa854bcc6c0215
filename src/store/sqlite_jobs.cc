// SqliteStore: jobs and their events.
#include <fmt/format.h>

#include <algorithm>

#include "common/util.h"
#include "store/sqlite_store.h"

namespace assay {
namespace {

constexpr const char* kJobColumns =
    "id, key_id, name, kind, state, spec_json, result_json, error_class, error_message, attempts,"
    " created_ms, updated_ms";

Result<JobRecord> RowToJob(const Stmt& q) {
  JobRecord j;
  j.id = q.Text(0);
  j.key_id = q.Text(1);
  j.name = q.Text(2);
  std::string kind = q.Text(3);
  std::string state = q.Text(4);
  std::optional<JobKind> k = JobKindFromName(kind);
  std::optional<JobState> s = JobStateFromName(state);
  if (!k || !s) {
    return Status::Infra(fmt::format("store: job {} has unknown kind '{}' or state '{}'", j.id, kind, state));
  }
  j.kind = *k;
  j.state = *s;
  j.spec_json = q.Text(5);
  j.result_json = q.Text(6);
  j.error_class = q.Text(7);
  j.error_message = q.Text(8);
  j.attempts = static_cast<int>(q.Int(9));
  j.created_ms = q.Int(10);
  j.updated_ms = q.Int(11);
  return j;
}

// Rows of `q` (already bound) as jobs.
Result<std::vector<JobRecord>> CollectJobs(Stmt& q) {
  std::vector<JobRecord> out;
  for (;;) {
    Result<bool> row = q.Step();
    if (!row.ok()) return row.status();
    if (!*row) return out;
    Result<JobRecord> j = RowToJob(q);
    if (!j.ok()) return j.status();
    out.push_back(std::move(j).value());
  }
}

Result<JobRecord> ReadJob(SqliteConnection& conn, const std::string& id) {
  Result<Stmt> q = conn.Prepare(fmt::format("SELECT {} FROM jobs WHERE id = ?1", kJobColumns));
  if (!q.ok()) return q.status();
  q->Bind(1, id);
  Result<bool> row = q->Step();
  if (!row.ok()) return row.status();
  if (!*row) return Status::NotFound(fmt::format("no job {}", id));
  return RowToJob(*q);
}

Status InsertEvent(SqliteConnection& conn, const std::string& job_id, JobState state, int64_t at_ms,
                   const std::string& message) {
  Result<Stmt> ins = conn.Prepare(
      "INSERT INTO job_events (job_id, seq, state, at_ms, message)"
      " VALUES (?1, (SELECT coalesce(max(seq), 0) + 1 FROM job_events WHERE job_id = ?1), ?2, ?3, ?4)");
  if (!ins.ok()) return ins.status();
  return ins->Bind(1, job_id).Bind(2, JobStateName(state)).Bind(3, at_ms).Bind(4, message).Run();
}

// Inserts one queued job and its first event. REQUIRES: a write transaction on conn.
Status InsertJob(SqliteConnection& conn, const JobRecord& job) {
  if (job.id.empty()) return Status::Rejected("job id is empty", "id");
  int64_t created = job.created_ms > 0 ? job.created_ms : NowUnixMs();
  {
    Result<Stmt> exists = conn.Prepare("SELECT 1 FROM jobs WHERE id = ?1");
    if (!exists.ok()) return exists.status();
    Result<bool> row = exists->Bind(1, job.id).Step();
    if (!row.ok()) return row.status();
    if (*row) return Status::Rejected(fmt::format("job {} already exists", job.id), "id");
  }
  Result<Stmt> ins = conn.Prepare(fmt::format(
      "INSERT INTO jobs ({}) VALUES (?1, ?2, ?3, ?4, 'queued', ?5, ?6, ?7, ?8, ?9, ?10, ?10)", kJobColumns));
  if (!ins.ok()) return ins.status();
  ins->Bind(1, job.id).Bind(2, job.key_id).Bind(3, job.name).Bind(4, JobKindName(job.kind));
  ins->Bind(5, job.spec_json).Bind(6, job.result_json).Bind(7, job.error_class);
  ins->Bind(8, job.error_message).Bind(9, int64_t{job.attempts}).Bind(10, created);
  ASSAY_RETURN_IF_ERROR(ins->Run());
  return InsertEvent(conn, job.id, JobState::kQueued, created, "accepted");
}

}  // namespace

Status SqliteStore::CreateJob(const JobRecord& job) {
  if (job.id.empty()) return Status::Rejected("job id is empty", "id");
  std::lock_guard<std::mutex> lock(writer_mu_);
  Result<Transaction> tx = Transaction::Begin(writer_);
  if (!tx.ok()) return tx.status();
  ASSAY_RETURN_IF_ERROR(InsertJob(writer_, job));
  return tx->Commit();
}

Status SqliteStore::CreateBatch(const BatchRecord& batch) {
  if (batch.id.empty()) return Status::Rejected("batch id is empty", "id");
  if (batch.members.empty()) return Status::Rejected("a batch needs at least one job", "members");
  int64_t created = batch.created_ms > 0 ? batch.created_ms : NowUnixMs();
  std::lock_guard<std::mutex> lock(writer_mu_);
  // One transaction: a failure part-way (a duplicate id, a full disk) rolls
  // every job back, so a batch is never half stored.
  Result<Transaction> tx = Transaction::Begin(writer_);
  if (!tx.ok()) return tx.status();
  {
    Result<Stmt> ins = writer_.Prepare(
        "INSERT INTO batches (id, key_id, name, created_ms) VALUES (?1, ?2, ?3, ?4)"
        " ON CONFLICT (id) DO NOTHING");
    if (!ins.ok()) return ins.status();
    ASSAY_RETURN_IF_ERROR(ins->Bind(1, batch.id).Bind(2, batch.key_id).Bind(3, batch.name).Bind(4, created).Run());
    if (writer_.changes() == 0) return Status::Rejected(fmt::format("batch {} already exists", batch.id), "id");
  }
  for (size_t i = 0; i < batch.members.size(); ++i) {
    const BatchMember& m = batch.members[i];
    JobRecord job = m.job;
    if (job.created_ms <= 0) job.created_ms = created;
    ASSAY_RETURN_IF_ERROR(InsertJob(writer_, job));
    Result<Stmt> member = writer_.Prepare(
        "INSERT INTO batch_jobs (batch_id, idx, name, job_id) VALUES (?1, ?2, ?3, ?4)");
    if (!member.ok()) return member.status();
    ASSAY_RETURN_IF_ERROR(member->Bind(1, batch.id).Bind(2, static_cast<int64_t>(i)).Bind(3, m.name)
                              .Bind(4, job.id).Run());
  }
  return tx->Commit();
}

Result<BatchRecord> SqliteStore::GetBatch(const std::string& id) {
  Result<Reader> r = AcquireReader();
  if (!r.ok()) return r.status();
  // One snapshot for the batch row and its jobs.
  ASSAY_RETURN_IF_ERROR((*r)->Exec("BEGIN"));
  BatchRecord b;
  {
    Result<Stmt> q = (*r)->Prepare("SELECT id, key_id, name, created_ms FROM batches WHERE id = ?1");
    if (!q.ok()) return q.status();
    Result<bool> row = q->Bind(1, id).Step();
    if (!row.ok()) return row.status();
    if (!*row) return Status::NotFound(fmt::format("no batch {}", id));
    b.id = q->Text(0);
    b.key_id = q->Text(1);
    b.name = q->Text(2);
    b.created_ms = q->Int(3);
  }
  std::string columns;
  for (std::string_view c : {"id", "key_id", "name", "kind", "state", "spec_json", "result_json", "error_class",
                             "error_message", "attempts", "created_ms", "updated_ms"})
    columns += fmt::format("{}jobs.{}", columns.empty() ? "" : ", ", c);
  Result<Stmt> q = (*r)->Prepare(fmt::format(
      "SELECT {}, batch_jobs.name FROM batch_jobs JOIN jobs ON jobs.id = batch_jobs.job_id"
      " WHERE batch_jobs.batch_id = ?1 ORDER BY batch_jobs.idx",
      columns));
  if (!q.ok()) return q.status();
  q->Bind(1, id);
  for (;;) {
    Result<bool> row = q->Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    Result<JobRecord> job = RowToJob(*q);
    if (!job.ok()) return job.status();
    b.members.push_back(BatchMember{q->Text(12), std::move(job).value()});
  }
  ASSAY_RETURN_IF_ERROR((*r)->Exec("COMMIT"));
  return b;
}

Result<JobRecord> SqliteStore::GetJob(const std::string& id) {
  Result<Reader> r = AcquireReader();
  if (!r.ok()) return r.status();
  return ReadJob(**r, id);
}

Result<std::vector<JobRecord>> SqliteStore::ListJobs(const JobFilter& filter) {
  Result<Reader> r = AcquireReader();
  if (!r.ok()) return r.status();
  // One snapshot for the cursor look-up and the page.
  ASSAY_RETURN_IF_ERROR((*r)->Exec("BEGIN"));
  int64_t cursor_created = 0;
  if (!filter.before_id.empty()) {
    Result<Stmt> c = (*r)->Prepare("SELECT created_ms FROM jobs WHERE id = ?1");
    if (!c.ok()) return c.status();
    Result<bool> row = c->Bind(1, filter.before_id).Step();
    if (!row.ok()) return row.status();
    if (!*row) return Status::Rejected(fmt::format("unknown paging cursor {}", filter.before_id), "before_id");
    cursor_created = c->Int(0);
  }
  // The WHERE clause varies with the filter (at most 8 variants, each cached
  // per connection) so SQLite can pick the matching index.
  std::string sql = fmt::format("SELECT {} FROM jobs WHERE 1", kJobColumns);
  if (filter.state) sql += " AND state = ?1";
  if (!filter.key_id.empty()) sql += " AND key_id = ?2";
  if (!filter.before_id.empty()) sql += " AND (created_ms < ?3 OR (created_ms = ?3 AND id < ?4))";
  sql += " ORDER BY created_ms DESC, id DESC LIMIT ?5";
  Result<Stmt> q = (*r)->Prepare(sql);
  if (!q.ok()) return q.status();
  if (filter.state) q->Bind(1, JobStateName(*filter.state));
  if (!filter.key_id.empty()) q->Bind(2, filter.key_id);
  if (!filter.before_id.empty()) q->Bind(3, cursor_created).Bind(4, filter.before_id);
  q->Bind(5, int64_t{std::clamp(filter.limit, 1, 1000)});
  Result<std::vector<JobRecord>> jobs = CollectJobs(*q);
  if (!jobs.ok()) return jobs.status();
  ASSAY_RETURN_IF_ERROR((*r)->Exec("COMMIT"));
  return jobs;
}

Result<JobRecord> SqliteStore::Transition(const std::string& id, JobState to, const TransitionUpdate& update) {
  std::lock_guard<std::mutex> lock(writer_mu_);
  Result<Transaction> tx = Transaction::Begin(writer_);
  if (!tx.ok()) return tx.status();
  Result<JobRecord> job = ReadJob(writer_, id);
  if (!job.ok()) return job.status();
  if (!CanTransition(job->state, to)) {
    return Status::Rejected(fmt::format("job {} cannot go from {} to {}", id, JobStateName(job->state),
                                        JobStateName(to)));
  }
  // Never earlier than the previous transition, so events stay in time order
  // even if the wall clock steps back.
  int64_t now = std::max(NowUnixMs(), job->updated_ms);
  job->state = to;
  job->updated_ms = now;
  if (update.result_json) job->result_json = *update.result_json;
  if (!update.error_class.empty()) job->error_class = update.error_class;
  if (!update.error_message.empty()) job->error_message = update.error_message;
  if (update.count_attempt) ++job->attempts;
  {
    Result<Stmt> up = writer_.Prepare(
        "UPDATE jobs SET state = ?2, updated_ms = ?3, result_json = ?4, error_class = ?5,"
        " error_message = ?6, attempts = ?7 WHERE id = ?1");
    if (!up.ok()) return up.status();
    up->Bind(1, id).Bind(2, JobStateName(to)).Bind(3, now).Bind(4, job->result_json);
    up->Bind(5, job->error_class).Bind(6, job->error_message).Bind(7, int64_t{job->attempts});
    ASSAY_RETURN_IF_ERROR(up->Run());
  }
  ASSAY_RETURN_IF_ERROR(InsertEvent(writer_, id, to, now, update.message));
  ASSAY_RETURN_IF_ERROR(tx->Commit());
  return job;
}

Result<std::vector<JobEvent>> SqliteStore::Events(const std::string& id, int64_t after_seq) {
  Result<Reader> r = AcquireReader();
  if (!r.ok()) return r.status();
  std::vector<JobEvent> out;
  {
    Result<Stmt> q = (*r)->Prepare(
        "SELECT seq, state, at_ms, message FROM job_events WHERE job_id = ?1 AND seq > ?2 ORDER BY seq");
    if (!q.ok()) return q.status();
    q->Bind(1, id).Bind(2, after_seq);
    for (;;) {
      Result<bool> row = q->Step();
      if (!row.ok()) return row.status();
      if (!*row) break;
      JobEvent e;
      e.job_id = id;
      e.seq = q->Int(0);
      std::optional<JobState> s = JobStateFromName(q->Text(1));
      if (!s) return Status::Infra(fmt::format("store: event {}#{} has unknown state", id, e.seq));
      e.state = *s;
      e.at_ms = q->Int(2);
      e.message = q->Text(3);
      out.push_back(std::move(e));
    }
  }
  if (out.empty()) {
    // Distinguish "nothing new" from "no such job".
    Result<JobRecord> job = ReadJob(**r, id);
    if (!job.ok()) return job.status();
  }
  return out;
}

Result<std::vector<JobRecord>> SqliteStore::JobsInStates(const std::vector<JobState>& states) {
  if (states.empty()) return std::vector<JobRecord>{};
  Result<Reader> r = AcquireReader();
  if (!r.ok()) return r.status();
  std::string in;
  for (size_t i = 0; i < states.size(); ++i) in += fmt::format("{}?{}", i ? ", " : "", i + 1);
  Result<Stmt> q = (*r)->Prepare(
      fmt::format("SELECT {} FROM jobs WHERE state IN ({}) ORDER BY created_ms, id", kJobColumns, in));
  if (!q.ok()) return q.status();
  for (size_t i = 0; i < states.size(); ++i) q->Bind(static_cast<int>(i + 1), JobStateName(states[i]));
  return CollectJobs(*q);
}

}  // namespace assay

// Shared by the API tests: an in-memory JobService standing in for the
// scheduler (tests drive job states by hand), and a fixture that starts the
// real ApiServer on 127.0.0.1 (ephemeral port) and talks to it over HTTP.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "api/http.h"
#include "api/server.h"
#include "common/util.h"
#include "sched/job_service.h"
#include "spec/job_spec.h"

namespace assay::api_test {

using nlohmann::json;
constexpr char kGoodKey[] = "assay_good_secret";    // key id k_test
constexpr char kOtherKey[] = "assay_other_secret";  // key id k_other

class MemoryJobService : public JobService {
 public:
  Result<JobRecord> Submit(const std::string& key_id, std::string_view body) override {
    json spec = json::parse(body, nullptr, false);
    if (!spec.is_object()) return Status::Rejected("spec must be an object");
    auto kind = JobKindFromName(spec.value("kind", std::string()));
    if (!kind) return Status::Rejected("unknown kind", "kind");
    std::lock_guard lock(mu_);
    JobRecord r;
    r.id = RandomId("j_");
    r.key_id = key_id;
    r.kind = *kind;
    r.spec_json = spec.dump();
    r.name = spec.value("name", std::string());
    r.created_ms = ++clock_;
    r.updated_ms = r.created_ms;
    order_.push_back(r.id);
    jobs_[r.id] = r;
    events_[r.id].push_back(JobEvent{r.id, 1, JobState::kQueued, NowUnixMs(), "submitted"});
    return r;
  }
  // Validates every spec with the real parser (so error paths are the
  // server's) before storing any, like JobServiceImpl.
  Result<BatchRecord> SubmitBatch(const std::string& key_id, const std::string& name,
                                  const std::vector<BatchItem>& items, size_t* failed_index) override {
    for (size_t i = 0; i < items.size(); ++i) {
      auto spec = ParseJobSpec(items[i].spec_body);
      if (!spec.ok()) {
        if (failed_index) *failed_index = i;
        return spec.status();
      }
    }
    BatchRecord b;
    b.id = RandomId("b_");
    b.key_id = key_id;
    b.name = name;
    b.created_ms = NowUnixMs();
    for (const BatchItem& item : items) {
      auto job = Submit(key_id, item.spec_body);
      if (!job.ok()) return job.status();
      b.members.push_back(BatchMember{item.name, *job});
    }
    std::lock_guard lock(mu_);
    batches_[b.id] = b;
    return b;
  }
  Result<BatchRecord> GetBatch(const std::string& id) override {
    std::lock_guard lock(mu_);
    auto it = batches_.find(id);
    if (it == batches_.end()) return Status::NotFound("no batch " + id);
    BatchRecord b = it->second;
    for (BatchMember& m : b.members) m.job = jobs_[m.job.id];
    return b;
  }
  size_t JobCount() {
    std::lock_guard lock(mu_);
    return jobs_.size();
  }
  Result<JobRecord> Get(const std::string& id) override {
    std::lock_guard lock(mu_);
    auto it = jobs_.find(id);
    if (it == jobs_.end()) return Status::NotFound("no job " + id);
    return it->second;
  }
  Result<std::vector<JobRecord>> List(const JobFilter& f) override {
    std::lock_guard lock(mu_);
    std::vector<JobRecord> out;
    bool past_cursor = f.before_id.empty();
    for (auto it = order_.rbegin(); it != order_.rend(); ++it) {
      if (!past_cursor) {
        past_cursor = *it == f.before_id;
        continue;
      }
      const JobRecord& r = jobs_[*it];
      if (f.state && r.state != *f.state) continue;
      if (!f.key_id.empty() && r.key_id != f.key_id) continue;
      if (static_cast<int>(out.size()) == f.limit) break;
      out.push_back(r);
    }
    return out;
  }
  Result<JobRecord> Cancel(const std::string& id) override {
    return Transition(id, JobState::kCancelled, "cancelled by user");
  }
  Result<std::vector<JobEvent>> Events(const std::string& id, int64_t after) override {
    std::lock_guard lock(mu_);
    auto it = events_.find(id);
    if (it == events_.end()) return Status::NotFound("no job " + id);
    std::vector<JobEvent> out;
    for (const auto& e : it->second)
      if (e.seq > after) out.push_back(e);
    return out;
  }
  bool WaitForEvents(const std::string& id, int64_t after, int64_t timeout_ms) override {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] {
      auto it = events_.find(id);
      return it != events_.end() && !it->second.empty() && it->second.back().seq > after;
    });
  }
  std::optional<int> QueuePosition(const std::string& id) override {
    std::lock_guard lock(mu_);
    int pos = 0;
    for (const auto& jid : order_) {
      if (jobs_[jid].state != JobState::kQueued) continue;
      ++pos;
      if (jid == id) return pos;
    }
    return std::nullopt;
  }
  json JobJson(const JobRecord& r) override {
    json j = {{"id", r.id}, {"state", JobStateName(r.state)}, {"kind", JobKindName(r.kind)}, {"key_id", r.key_id},
              {"name", r.name}};
    if (!r.result_json.empty()) j["result"] = json::parse(r.result_json);
    if (!r.error_class.empty()) j["error"] = {{"class", r.error_class}, {"message", r.error_message}};
    return j;
  }
  json Gpus() override {
    return {{"gpus", json::array({{{"index", 0}, {"name", "Test GPU"}, {"compute_capability", "9.0"},
                                   {"total_memory_bytes", int64_t{80} << 30}, {"sm_count", 132}}})}};
  }
  json Stats() override { return {{"jobs", static_cast<int>(jobs_.size())}}; }
  std::string Metrics() override { return "assay_jobs_total 0\n"; }
  json Health() override { return {{"status", "ok"}}; }
  Result<std::string> PutBlob(std::string_view data) override {
    std::lock_guard lock(mu_);
    std::string h = Sha256Hex(data);
    blobs_[h] = std::string(data);
    return h;
  }
  Result<std::string> GetBlob(const std::string& hash) override {
    std::lock_guard lock(mu_);
    auto it = blobs_.find(hash);
    if (it == blobs_.end()) return Status::NotFound("no blob " + hash);
    return it->second;
  }
  Result<bool> HasBlob(const std::string& hash) override {
    std::lock_guard lock(mu_);
    return blobs_.count(hash) > 0;
  }
  Result<std::string> Authenticate(const std::string& secret) override {
    if (secret == kGoodKey) return std::string("k_test");
    if (secret == kOtherKey) return std::string("k_other");
    return Status::Unauthorized("bad key");
  }

  // Test driver: moves a job and wakes stream watchers.
  Result<JobRecord> Transition(const std::string& id, JobState to, const std::string& message,
                               const std::string& result = {}, const std::string& error_class = {}) {
    std::lock_guard lock(mu_);
    auto it = jobs_.find(id);
    if (it == jobs_.end()) return Status::NotFound("no job " + id);
    if (!CanTransition(it->second.state, to)) return Status::Rejected("job already ended");
    it->second.state = to;
    if (!result.empty()) it->second.result_json = result;
    if (!error_class.empty()) it->second.error_class = error_class, it->second.error_message = message;
    auto& ev = events_[id];
    ev.push_back(JobEvent{id, static_cast<int64_t>(ev.size()) + 1, to, NowUnixMs(), message});
    cv_.notify_all();
    return it->second;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int64_t clock_ = 0;
  std::vector<std::string> order_;
  std::map<std::string, JobRecord> jobs_;
  std::map<std::string, std::vector<JobEvent>> events_;
  std::map<std::string, std::string> blobs_;
  std::map<std::string, BatchRecord> batches_;
};

struct SseFrame {
  std::string event;
  int64_t id = 0;
  json data;
};

inline std::vector<SseFrame> ParseSse(const std::string& text) {
  std::vector<SseFrame> out;
  size_t pos = 0;
  while (true) {
    size_t end = text.find("\n\n", pos);
    if (end == std::string::npos) break;
    std::string block = text.substr(pos, end - pos);
    pos = end + 2;
    SseFrame f;
    size_t lp = 0;
    while (lp <= block.size()) {
      size_t le = block.find('\n', lp);
      if (le == std::string::npos) le = block.size();
      std::string line = block.substr(lp, le - lp);
      lp = le + 1;
      if (line.rfind("event: ", 0) == 0) f.event = line.substr(7);
      if (line.rfind("id: ", 0) == 0) f.id = std::stoll(line.substr(4));
      if (line.rfind("data: ", 0) == 0) f.data = json::parse(line.substr(6));
    }
    if (!f.event.empty()) out.push_back(std::move(f));
  }
  return out;
}

class ApiServerTest : public ::testing::Test {
 protected:
  void Start(ApiOptions options = {}) {
    options.host = "127.0.0.1";
    options.port = 0;
    server_ = std::make_unique<ApiServer>(service_, options);
    auto port = server_->Bind();
    ASSERT_TRUE(port.ok()) << port.status().ToString();
    port_ = *port;
    thread_ = std::thread([this] { server_->Serve(); });
  }
  void TearDown() override {
    if (server_) server_->Stop();
    if (thread_.joinable()) thread_.join();
  }
  httplib::Client Client(bool with_key = true) {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(10, 0);
    if (with_key) c.set_bearer_token_auth(kGoodKey);
    return c;
  }
  std::string SubmitOk(const std::string& body = R"({"kind": "cuda_program"})") {
    auto res = Client().Post("/v1/jobs", body, "application/json");
    EXPECT_TRUE(res);
    if (!res) return "";
    EXPECT_EQ(res->status, 201) << res->body;
    return json::parse(res->body)["id"].get<std::string>();
  }
  static json Body(const httplib::Result& res) { return json::parse(res->body); }

  // Reads one event stream to its end on a thread.
  struct Stream {
    std::thread thread;
    std::string text;
    std::mutex mu;
    std::atomic<bool> started{false};
    int status = 0;
    std::string Text() {
      std::lock_guard lock(mu);
      return text;
    }
  };
  void OpenStream(Stream& s, const std::string& id, httplib::Headers headers = {}) {
    s.thread = std::thread([this, &s, id, headers] {
      auto c = Client();
      auto res = c.Get(("/v1/jobs/" + id + "/events").c_str(), headers,
                       [&](const char* data, size_t len) {
                         std::lock_guard lock(s.mu);
                         s.text.append(data, len);
                         s.started = true;
                         return true;
                       });
      s.status = res ? res->status : -1;
      s.started = true;
    });
  }

  MemoryJobService service_;
  std::unique_ptr<ApiServer> server_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace assay::api_test

#include "api/event_stream.h"

#include <algorithm>
#include <memory>

#include <nlohmann/json.hpp>

#include "common/util.h"
#include "sched/job_service.h"

namespace assay::api {
namespace {

// WaitForEvents is called in slices this long [ms], so a stream notices
// shutdown and its keep-alive deadline promptly.
constexpr int64_t kWaitSliceMs = 250;

struct StreamState {
  std::string job_id;
  int64_t last_seq = 0;
  int64_t last_write_ms = 0;  // monotonic
  bool ended = false;
  bool first_call = true;
};

std::string Frame(std::string_view event, int64_t id, const nlohmann::json& data) {
  std::string out = "event: ";
  out += event;
  out += '\n';
  if (id > 0) out += "id: " + std::to_string(id) + "\n";
  // dump() never emits a raw newline, so one `data:` line carries the document.
  out += "data: " + data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n\n";
  return out;
}

bool Write(httplib::DataSink& sink, StreamState& st, const std::string& text) {
  st.last_write_ms = MonotonicMs();
  return sink.write(text.data(), text.size());
}

// Ends the stream with `event: end` and the job's document.
bool WriteEnd(JobService& service, httplib::DataSink& sink, StreamState& st) {
  st.ended = true;
  auto job = service.Get(st.job_id);
  nlohmann::json data = job.ok() ? service.JobJson(*job) : nlohmann::json{{"id", st.job_id}};
  bool ok = Write(sink, st, Frame("end", 0, data));
  sink.done();
  return ok;
}

}  // namespace

bool EventStreamGate::TryAcquire() {
  if (open_.fetch_add(1) >= max_) {
    open_.fetch_sub(1);
    return false;
  }
  return true;
}

void EventStreamGate::Release() { open_.fetch_sub(1); }

nlohmann::json EventJson(const JobEvent& e) {
  return {{"seq", e.seq},
          {"state", std::string(JobStateName(e.state))},
          {"at", FormatUnixMs(e.at_ms)},
          {"at_ms", e.at_ms},
          {"message", e.message}};
}

void StartEventStream(JobService& service, EventStreamGate& gate, const std::string& job_id,
                      int64_t after_seq, int64_t keepalive_ms, httplib::Response& res) {
  auto st = std::make_shared<StreamState>();
  st->job_id = job_id;
  st->last_seq = std::max<int64_t>(0, after_seq);
  st->last_write_ms = MonotonicMs();
  res.set_header("Cache-Control", "no-store");
  // Tells nginx-style proxies not to buffer the stream.
  res.set_header("X-Accel-Buffering", "no");
  res.set_chunked_content_provider(
      "text/event-stream",
      // Called again and again on this connection's thread until it returns
      // false (client gone: abort) or calls sink.done().
      [&service, &gate, st, keepalive_ms](size_t /*offset*/, httplib::DataSink& sink) -> bool {
        if (st->ended) {
          sink.done();
          return true;
        }
        if (gate.stopping()) {
          st->ended = true;
          sink.done();
          return true;
        }
        auto events = service.Events(st->job_id, st->last_seq);
        if (!events.ok()) {
          st->ended = true;
          bool ok = Write(sink, *st, Frame("error", 0, nlohmann::json{{"error", {
              {"class", std::string(ErrorClassName(events.status().error_class()))},
              {"message", events.status().message()}}}}));
          sink.done();
          return ok;
        }
        if (!events->empty()) {
          st->first_call = false;
          bool terminal = false;
          for (const JobEvent& e : *events) {
            if (!Write(sink, *st, Frame("state", e.seq, EventJson(e)))) return false;
            st->last_seq = e.seq;
            terminal = terminal || IsTerminal(e.state);
          }
          return terminal ? WriteEnd(service, sink, *st) : true;
        }
        if (st->first_call) {
          st->first_call = false;
          // A client resuming after the terminal event would otherwise wait forever.
          auto job = service.Get(st->job_id);
          if (job.ok() && IsTerminal(job->state)) return WriteEnd(service, sink, *st);
        }
        int64_t idle = MonotonicMs() - st->last_write_ms;
        if (idle >= keepalive_ms) return Write(sink, *st, ": keepalive\n\n");
        service.WaitForEvents(st->job_id, st->last_seq, std::min(kWaitSliceMs, keepalive_ms - idle));
        return true;
      },
      [&gate](bool /*success*/) { gate.Release(); });
}

}  // namespace assay::api

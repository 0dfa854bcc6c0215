#include "sched/python_prepare.h"

#include <fmt/format.h>

#include "common/log.h"
#include "common/util.h"
#include "proc/sandbox.h"
#include "worker/python_runner.h"

namespace assay {
namespace {

using nlohmann::json;

// Written into the key's directory after a successful prepare.
constexpr const char* kMarkerFile = "assay_prepared.json";
constexpr size_t kMaxLogBytes = 256 << 10;

std::string DetailText(const json& status) {
  auto d = status.find("detail");
  if (d == status.end() || d->is_null()) return "";
  return d->is_string() ? d->get<std::string>() : d->dump(2);
}

// The build log: the harness's own message first, then what the build printed.
std::string BuildLog(const HarnessOutput& h) {
  std::string log;
  if (const json* st = h.result.is_object() && h.result.contains("status") ? &h.result["status"] : nullptr;
      st && st->is_object()) {
    if (auto m = st->find("message"); m != st->end() && m->is_string() && !m->get<std::string>().empty())
      log += m->get<std::string>() + "\n";
    if (std::string d = DetailText(*st); !d.empty()) log += d + "\n";
  }
  if (!h.process.stdout_data.empty()) log += h.process.stdout_data;
  if (!h.process.stderr_data.empty()) log += (log.empty() || log.back() == '\n' ? "" : "\n") + h.process.stderr_data;
  if (log.size() > kMaxLogBytes) log = "[...]\n" + log.substr(log.size() - kMaxLogBytes);
  return SanitizeUtf8(log);
}

Status PrepareStatus(const HarnessOutput& h, int64_t timeout_ms) {
  const ProcessResult& p = h.process;
  if (p.cancelled) return Status::Cancelled("cancelled while preparing");
  if (p.timed_out)
    return Status::Timeout("building the candidate's extensions timed out after " +
                           fmt::format("{:g}", timeout_ms / 1000.0) + " s");
  // The candidate's top level runs in the prepare: its crash is its own.
  if (p.signal != 0) return Status::CompileError("the Python process was killed by " + SignalName(p.signal) +
                                                 " while importing the candidate");
  if (p.exit_code != 0)
    return Status::CompileError("the Python process exited with code " + std::to_string(p.exit_code) +
                                " while importing the candidate");
  if (!h.result.is_object()) return Status::Infra("the harness's prepare left no usable result: " + h.result_error);
  const json& st = h.result.contains("status") ? h.result["status"] : json();
  std::string cls = st.is_object() ? st.value("class", "") : "";
  std::string message = st.is_object() && st.contains("message") && st["message"].is_string()
                            ? st["message"].get<std::string>()
                            : "";
  auto c = ErrorClassFromName(cls);
  if (!c || *c == ErrorClass::kNotFound || *c == ErrorClass::kUnauthorized)
    return Status::Infra("the harness's prepare reported an unknown status class '" + TruncateUtf8(cls, 64) + "'");
  if (*c == ErrorClass::kOk) return Status::Ok();
  if (message.empty()) message = "preparing the candidate failed";
  return Status(*c, TruncateUtf8(message, 2000));
}

}  // namespace

std::filesystem::path PythonPreparer::ExtensionDir(std::string_view candidate_source, const json& probe) const {
  return options_.cache_dir / "torch_ext" / PythonExtensionKey(candidate_source, probe, options_.arch_list);
}

std::shared_ptr<std::mutex> PythonPreparer::InFlightLock(const std::string& key) {
  std::lock_guard<std::mutex> lock(inflight_mu_);
  for (auto it = inflight_.begin(); it != inflight_.end();)  // forget finished flights
    it = it->second.expired() ? inflight_.erase(it) : std::next(it);
  std::shared_ptr<std::mutex> m = inflight_[key].lock();
  if (!m) {
    m = std::make_shared<std::mutex>();
    inflight_[key] = m;
  }
  return m;
}

PythonPrepareOutput PythonPreparer::Prepare(const std::string& job_id, const JobSpec& spec,
                                            const BlobFiles& blob_files, const json& probe,
                                            const std::atomic<bool>* cancel) {
  PythonPrepareOutput out;
  auto source = PythonCandidateSource(spec, blob_files);
  if (!source.ok()) {
    out.status = source.status();
    return out;
  }
  const auto ext_dir = ExtensionDir(*source, probe);
  const std::string key = ext_dir.filename().string();
  out.compile = {{"cache_hit", false}, {"duration_ms", 0.0}, {"log", ""}, {"cache_key", key},
                 {"arch", options_.arch_list}, {"extensions", json::array()}};

  std::shared_ptr<std::mutex> flight = InFlightLock(key);
  std::lock_guard<std::mutex> flight_lock(*flight);
  if (auto marker = ReadFile(ext_dir / kMarkerFile, 1 << 20); marker.ok()) {
    json m = json::parse(*marker, nullptr, false);
    if (m.is_object() && m.value("v", 0) == 1) {
      out.compile["cache_hit"] = true;
      if (m.contains("extensions") && m["extensions"].is_array()) out.compile["extensions"] = m["extensions"];
      if (m.contains("log") && m["log"].is_string()) out.compile["log"] = m["log"];
      return out;
    }
  }

  const auto triton_dir = options_.cache_dir / "triton";
  std::error_code ec;
  std::filesystem::create_directories(ext_dir, ec);
  if (!ec) std::filesystem::create_directories(triton_dir, ec);
  if (!ec) std::filesystem::create_directories(options_.work_dir, ec);
  if (ec) {
    out.status = Status::Infra("cannot make the Python cache directories: " + ec.message());
    return out;
  }
  auto dir = TempDir::Create("prepare_" + job_id + "_", options_.work_dir);
  if (!dir.ok()) {
    out.status = dir.status();
    return out;
  }
  PythonRequestOptions ro;
  ro.mode = "prepare";
  ro.device = options_.device;
  ro.extension_cache = ext_dir;
  if (auto req = WritePythonJob(spec, dir->path(), blob_files, ro); !req.ok()) {
    out.status = req.status();
    return out;
  }
  const char* path = getenv("PATH");
  HarnessInvocation inv;
  inv.interpreter = FindExecutable(options_.interpreter.string(), path ? path : "/usr/bin:/bin");
  if (inv.interpreter.empty()) {
    out.status = Status::Infra("no Python interpreter '" + options_.interpreter.string() + "' on PATH");
    return out;
  }
  inv.harness = options_.harness;
  inv.dir = dir->path();
  inv.mode = "prepare";
  // No GPU: building needs none, and the GPU belongs to the workers.
  inv.env["CUDA_VISIBLE_DEVICES"] = "";
  inv.env["TORCH_EXTENSIONS_DIR"] = ext_dir.string();
  inv.env["TRITON_CACHE_DIR"] = triton_dir.string();
  if (!options_.arch_list.empty()) inv.env["TORCH_CUDA_ARCH_LIST"] = options_.arch_list;
  inv.writable_dirs = {ext_dir, triton_dir};
  inv.timeout_ms = options_.timeout_ms;
  inv.cancel = cancel;
  inv.nice = kBackgroundNice;  // the standby harnesses feeding the GPU come first
  inv.sandbox = options_.sandbox;
  const int64_t t0 = MonotonicMs();
  auto r = RunHarness(inv);
  const double duration_ms = static_cast<double>(MonotonicMs() - t0);
  if (!r.ok()) {
    out.status = r.status();
    return out;
  }
  out.status = PrepareStatus(*r, options_.timeout_ms);
  out.compile["duration_ms"] = duration_ms;
  out.compile["log"] = BuildLog(*r);
  if (r->result.is_object() && r->result.contains("prepare") && r->result["prepare"].is_object()) {
    const json& p = r->result["prepare"];
    if (p.contains("extensions") && p["extensions"].is_array()) out.compile["extensions"] = p["extensions"];
    // Code that needs a GPU at import is built by the worker instead.
    if (p.contains("deferred") && p["deferred"].is_boolean()) out.compile["deferred"] = p["deferred"];
  }
  if (r->result.is_object() && r->result.contains("warnings") && r->result["warnings"].is_array())
    out.compile["warnings"] = r->result["warnings"];
  log::Event("python.prepare").Kv("job", job_id).Kv("key", key.substr(0, 12))
      .Kv("class", ErrorClassName(out.status.error_class())).Kv("ms", duration_ms).Info();
  if (out.status.ok()) {
    json marker = {{"v", 1}, {"job", job_id}, {"duration_ms", duration_ms},
                   {"extensions", out.compile["extensions"]}, {"log", out.compile["log"]}};
    if (Status s = WriteFileAtomic(ext_dir / kMarkerFile, marker.dump()); !s.ok())
      log::Event("python.prepare_marker_failed").Kv("key", key).Kv("error", s.message()).Warn();
  }
  return out;
}

}  // namespace assay

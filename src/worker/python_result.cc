#include "worker/python_result.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/util.h"
#include "engine/npy.h"
#include "proc/unique_fd.h"
#include "spec/json_reader.h"
#include "worker/protocol.h"

namespace assay {
namespace {

using nlohmann::json;

constexpr int kMaxResultDepth = 64;
constexpr size_t kStderrTailBytes = 4096;
constexpr size_t kTopNames = 5;

std::string Seconds(int64_t ms) { return fmt::format("{:g}", ms / 1000.0); }

const json* Member(const json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  return it == j.end() ? nullptr : &*it;
}
const json* ObjectMember(const json& j, const char* key) {
  const json* m = Member(j, key);
  return m && m->is_object() ? m : nullptr;
}
std::string StringMember(const json& j, const char* key) {
  const json* m = Member(j, key);
  return m && m->is_string() ? m->get<std::string>() : std::string();
}
std::optional<double> NumberMember(const json& j, const char* key) {
  const json* m = Member(j, key);
  if (!m || !m->is_number()) return std::nullopt;
  return m->get<double>();
}

// The last `max` bytes of s, starting at a line boundary when one is near.
std::string Tail(const std::string& s, size_t max) {
  if (s.size() <= max) return s;
  std::string t = s.substr(s.size() - max);
  auto nl = t.find('\n');
  if (nl != std::string::npos && nl + 1 < t.size() && nl < max / 2) t = t.substr(nl + 1);
  return t;
}

std::string LastLine(const std::string& s) {
  size_t end = s.find_last_not_of(" \t\r\n");
  if (end == std::string::npos) return "";
  size_t begin = s.rfind('\n', end);
  begin = begin == std::string::npos ? 0 : begin + 1;
  return TruncateUtf8(s.substr(begin, end - begin + 1), 500);
}

json ProcessSection(const ProcessResult& p) {
  return {{"exit_code", p.signal == 0 ? json(p.exit_code) : json(nullptr)},
          {"signal", p.signal == 0 ? json(nullptr) : json(p.signal)},
          {"signal_name", p.signal == 0 ? json(nullptr) : json(SignalName(p.signal))},
          {"stdout", SanitizeUtf8(p.stdout_data)},
          {"stderr", SanitizeUtf8(p.stderr_data)},
          {"stdout_bytes", p.stdout_bytes},
          {"stdout_truncated", p.stdout_truncated},
          {"stderr_bytes", p.stderr_bytes},
          {"stderr_truncated", p.stderr_truncated},
          {"duration_ms", p.duration_ms}};
}

// The harness's verdict. Classes it may not claim (not_found, ...) or does not
// know are its own fault: infra_error.
Status HarnessStatus(const json& doc, json* detail) {
  const json* st = ObjectMember(doc, "status");
  if (!st) return Status::Infra("the harness's result has no status");
  std::string cls = StringMember(*st, "class");
  std::string message = StringMember(*st, "message");
  auto c = ErrorClassFromName(cls);
  if (const json* d = Member(*st, "detail"); d && !d->is_null()) {
    // A string is the traceback's tail (the compiler's log for compile_error).
    if (d->is_string())
      *detail = {{c == ErrorClass::kCompileError ? "log" : "traceback", *d}};
    else
      *detail = *d;
  }
  // Other fields of the status (cuda_error, ...) are detail too.
  for (const auto& [k, v] : st->items()) {
    if (k == "class" || k == "message" || k == "detail" || k == "phase") continue;
    if (!detail->is_object()) *detail = detail->is_null() ? json::object() : json{{"detail", *detail}};
    (*detail)[k] = v;
  }
  if (!c || *c == ErrorClass::kNotFound || *c == ErrorClass::kUnauthorized)
    return Status::Infra("the harness reported an unknown status class '" + TruncateUtf8(cls, 64) + "'");
  if (*c == ErrorClass::kOk) return Status::Ok();
  if (message.empty()) message = std::string(ErrorClassName(*c));
  return Status(*c, TruncateUtf8(message, 2000), *c == ErrorClass::kRejected ? StringMember(*st, "field") : "");
}

// `timing.candidate` flattened (median_ms, ... at the top, as for cuda jobs),
// plus `reference` and `source`.
json FlattenTiming(const json& timing) {
  const json* cand = ObjectMember(timing, "candidate");
  json t = cand ? *cand : json::object();
  if (const json* ref = ObjectMember(timing, "reference")) t["reference"] = *ref;
  if (const json* speedup = Member(timing, "speedup")) t["speedup"] = *speedup;
  std::string clock = cand ? StringMember(*cand, "clock") : "";
  t["source"] = clock.empty() ? "cuda_event" : clock;
  return t;
}

// Reads the outputs the spec asked for, from the paths the harness gave, into
// .npy blobs. Only regular files directly inside DIR/out are taken, read
// without following links.
void CollectOutputs(const HarnessRun& run, const json& doc, WorkOutcome* out, json* warnings) {
  const json* paths = ObjectMember(doc, "outputs");
  size_t budget = kMaxFramePayloadBytes;
  for (const std::string& name : run.outputs) {
    std::string path = paths ? StringMember(*paths, name.c_str()) : "";
    if (path.empty()) {
      warnings->push_back("output '" + name + "' was not returned");
      continue;
    }
    const std::filesystem::path p(path);
    if (p.parent_path().lexically_normal() != (run.dir / "out").lexically_normal()) {
      warnings->push_back("output '" + name + "' is not a file in the job's output directory; not returned");
      continue;
    }
    auto bytes = ReadJobFile(run.dir, {"out", p.filename().string()}, budget);
    if (!bytes.ok()) {
      warnings->push_back("output '" + name + "' not returned: " + bytes.status().message());
      continue;
    }
    if (auto npy = ParseNpy(*bytes); !npy.ok()) {
      warnings->push_back("output '" + name + "' is not a valid .npy file: " + npy.status().message());
      continue;
    }
    budget -= bytes->size();
    out->blobs[name] = std::move(bytes).value();
  }
}

}  // namespace

Result<std::string> ReadJobFile(const std::filesystem::path& dir, const std::vector<std::string>& components,
                                size_t max_bytes) {
  UniqueFd fd(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) return Status::Infra("cannot open the job directory: " + std::string(strerror(errno)));
  for (size_t i = 0; i < components.size(); ++i) {
    const std::string& c = components[i];
    if (c.empty() || c == "." || c == ".." || c.find('/') != std::string::npos)
      return Status::Rejected("'" + c + "' is not a plain file name");
    const bool last = i + 1 == components.size();
    UniqueFd next(openat(fd.get(), c.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | (last ? 0 : O_DIRECTORY)));
    if (!next.valid()) {
      if (errno == ENOENT) return Status::NotFound(c + " does not exist");
      return Status::Rejected(c + " cannot be opened (" + strerror(errno) + "; a link is refused)");
    }
    fd = std::move(next);
  }
  struct stat st;
  if (fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return Status::Rejected("not a regular file");
  if (static_cast<uint64_t>(st.st_size) > max_bytes)
    return Status::Rejected("larger than " + std::to_string(max_bytes) + " bytes");
  std::string data(static_cast<size_t>(st.st_size), '\0');
  size_t got = 0;
  while (got < data.size()) {
    ssize_t n = read(fd.get(), data.data() + got, data.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  data.resize(got);
  return data;
}

std::pair<std::string, std::string> MarksOf(const json& section, bool reference) {
  std::pair<std::string, std::string> m = reference ? std::pair<std::string, std::string>{"ref.begin", "ref.end"}
                                                    : std::pair<std::string, std::string>{"cand.begin", "cand.end"};
  const json* marks = Member(section, "marks");
  if (marks && marks->is_array() && marks->size() == 2 && (*marks)[0].is_string() && (*marks)[1].is_string()) {
    m.first = (*marks)[0].get<std::string>();
    m.second = (*marks)[1].get<std::string>();
  }
  return m;
}

json ParseHarnessResult(const std::optional<std::string>& text, std::string* error) {
  if (!text) {
    *error = "no result.json";
    return nullptr;
  }
  if (text->size() > kMaxHarnessResultBytes) {
    *error = "result.json is larger than " + std::to_string(kMaxHarnessResultBytes) + " bytes";
    return nullptr;
  }
  if (!spec_internal::JsonDepthWithin(*text, kMaxResultDepth)) {
    *error = "result.json is nested too deeply";
    return nullptr;
  }
  json doc = json::parse(*text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) {
    *error = "result.json is not a JSON object";
    return nullptr;
  }
  if (const json* v = Member(doc, "v"); !v || !v->is_number_integer() || v->get<int64_t>() != 1) {
    *error = "result.json has no \"v\": 1";
    return nullptr;
  }
  return doc;
}

json CuptiTimingJson(const PhaseClock& clock) {
  const PhaseSummary& s = clock.summary;
  const double n = static_cast<double>(std::max<int64_t>(clock.samples, 1));
  json names = json::array(), top = json::array();
  for (size_t i = 0; i < s.top.size() && i < kTopNames; ++i) {
    names.push_back(s.top[i].name);
    top.push_back({{"name", s.top[i].name}, {"launches", s.top[i].launches}, {"total_ms", s.top[i].total_ms}});
  }
  return {{"kernel_sum_ms", s.kernel_sum_ms / n},
          {"kernel_busy_ms", s.kernel_busy_ms / n},
          {"kernels_per_call", static_cast<double>(s.kernels) / n},
          {"names", std::move(names)},
          {"top", std::move(top)},
          {"samples", clock.samples},
          {"kernels", s.kernels},
          {"excluded_kernels", s.excluded_kernels},
          {"span_ms", s.span_ms},
          {"complete", s.complete},
          {"records_dropped", s.records_dropped},
          {"records_truncated", s.records_truncated},
          {"marks_dropped", s.marks_dropped}};
}

bool MentionsHelperKernel(std::string_view source) {
  return source.find(kL2FlushKernelName) != std::string_view::npos ||
         source.find(kBlockingKernelName) != std::string_view::npos;
}

bool ApplyTwoClocks(const PhaseClock& clock, json* timing, json* warnings, json* kernelbench,
                    bool helper_name_in_source) {
  if (!clock.summary.begin_found || !clock.summary.end_found || clock.samples <= 0) return false;
  json c = CuptiTimingJson(clock);
  const double busy = c["kernel_busy_ms"].get<double>();
  (*timing)["cupti"] = std::move(c);
  auto median = NumberMember(*timing, "median_ms");
  if (!median) return false;
  // Kernels inside the phase that are not the candidate's make the two clocks
  // incomparable: a fallback L2 flush by torch (an ordinary fill kernel), or
  // batches dropped after a blocking-kernel timeout (run, but not sampled).
  std::string why_not;
  if (std::string flush = StringMember(*timing, "l2_flush"); !flush.empty() && flush != kL2FlushKernelName)
    why_not = "the L2 flush ran as an ordinary kernel (" + flush + ") inside the phase";
  if (auto t = NumberMember(*timing, "blocking_timeouts"); t && *t > 0) why_not = "batches were dropped";
  if (helper_name_in_source) {
    why_not = "the code names a kernel like the harness's helpers, which the sums leave out";
    warnings->push_back("the candidate's code mentions " + std::string(kL2FlushKernelName) + " or " +
                        kBlockingKernelName + ": the CUPTI cross-check of its time is off");
  }
  if (!why_not.empty()) {
    (*timing)["cupti"]["compared"] = false;
    (*timing)["cupti"]["note"] = "not compared with the events: " + why_not;
    return false;
  }
  (*timing)["cupti"]["compared"] = true;
  const double threshold = *median * kDisagreementRatio + kDisagreementSlackMs;
  if (!(busy > threshold)) return false;
  (*timing)["disagreement"] = {
      {"event_median_ms", *median},
      {"kernel_busy_ms", busy},
      {"kernel_sum_ms", (*timing)["cupti"]["kernel_sum_ms"]},
      {"threshold_ms", threshold},
      {"rule", fmt::format("kernel_busy_ms > event median x {:.2f} + {:g} ms", kDisagreementRatio,
                           kDisagreementSlackMs)}};
  (*timing)["event_median_ms"] = *median;
  (*timing)["median_ms"] = busy;
  (*timing)["source"] = "cupti";
  warnings->push_back(fmt::format(
      "the CUDA events measured {:.6g} ms per call, but the candidate's kernels kept the GPU busy for {:.6g} ms "
      "per call (work the events did not see: another stream, a patched timer); timing.median_ms is the CUPTI "
      "busy time",
      *median, busy));
  if (kernelbench && kernelbench->is_object()) {
    if (auto rt = NumberMember(*kernelbench, "runtime")) {
      (*kernelbench)["event_runtime"] = *rt;
      (*kernelbench)["runtime"] = busy;
      auto ref = NumberMember(*kernelbench, "ref_runtime");
      if (ref && *ref > 0 && busy > 0) (*kernelbench)["speedup"] = *ref / busy;
    }
  }
  return true;
}

Status CheckTimedCallsDidWork(const PhaseClock& clock) {
  const PhaseSummary& s = clock.summary;
  if (!s.begin_found || !s.end_found || !s.complete || s.records_dropped > 0 || s.records_truncated ||
      clock.samples <= 0)
    return Status::Ok();  // no trustworthy record: nothing to conclude
  const double per_call = static_cast<double>(s.kernels) / static_cast<double>(clock.samples);
  if (per_call >= kMinKernelsPerTimedCall) return Status::Ok();
  return Status::WrongResult(fmt::format(
      "the candidate launched {:.2f} GPU kernels per timed call ({} kernels in {} calls): its timed calls did no GPU "
      "work, so they returned results computed earlier (a cache across calls); every call must compute",
      per_call, s.kernels, clock.samples));
}

WorkOutcome MapHarnessRun(const HarnessRun& run) {
  WorkOutcome out;
  out.result = json::object();
  const ProcessResult& p = run.process;
  json python = ProcessSection(p);
  json warnings = json::array();
  json error_detail = nullptr;
  const json& doc = run.result;

  if (p.cancelled) {
    out.status = Status::Cancelled("cancelled while the Python harness was running");
  } else if (p.timed_out) {
    out.status = Status::Timeout("Python job timed out after " + Seconds(run.timeout_ms) + " s");
  } else if (p.signal != 0) {
    out.status = Status::RuntimeError("the Python process was killed by " + SignalName(p.signal));
    error_detail = {{"stderr_tail", SanitizeUtf8(Tail(p.stderr_data, kStderrTailBytes))}};
  } else if (p.exit_code != 0) {
    std::string last = SanitizeUtf8(LastLine(p.stderr_data));
    out.status = Status::RuntimeError("the Python process exited with code " + std::to_string(p.exit_code) +
                                      (last.empty() ? std::string() : ": " + last));
    error_detail = {{"stderr_tail", SanitizeUtf8(Tail(p.stderr_data, kStderrTailBytes))}};
  } else if (doc.is_null()) {
    out.status = Status::Infra("the Python harness exited without a usable result: " +
                               (run.result_error.empty() ? std::string("no result.json") : run.result_error));
    error_detail = {{"stderr_tail", SanitizeUtf8(Tail(p.stderr_data, kStderrTailBytes))}};
  } else {
    out.status = HarnessStatus(doc, &error_detail);
  }

  if (doc.is_object() && !p.cancelled && !p.timed_out && p.signal == 0 && p.exit_code == 0) {
    if (const json* v = ObjectMember(doc, "versions")) python["versions"] = *v;
    if (auto ms = NumberMember(doc, "load_ms")) python["load_ms"] = *ms;
    if (const json* c = Member(doc, "compiled"); c && c->is_boolean()) python["compiled"] = *c;
    if (const json* st = ObjectMember(doc, "status")) python["phase"] = StringMember(*st, "phase");
    if (const json* pr = ObjectMember(doc, "process")) python["process"] = *pr;
    if (const json* e = Member(doc, "extensions"); e && e->is_array()) python["extensions"] = *e;
    if (const json* c = ObjectMember(doc, "correctness")) out.result["correctness"] = *c;
    json kernelbench = ObjectMember(doc, "kernelbench") ? doc["kernelbench"] : json(nullptr);
    if (const json* w = Member(doc, "warnings"); w && w->is_array())
      for (const json& s : *w)
        if (s.is_string()) warnings.push_back(s);
    if (const json* t = ObjectMember(doc, "timing"); t && ObjectMember(*t, "candidate")) {
      json timing = FlattenTiming(*t);
      if (run.candidate_clock) {
        ApplyTwoClocks(*run.candidate_clock, &timing, &warnings, &kernelbench, run.helper_name_in_source);
        // A reference that itself launches no kernel per call (a pure view, say) makes the rule moot.
        const bool reference_idle = run.reference_clock && !CheckTimedCallsDidWork(*run.reference_clock).ok();
        if (Status idle = CheckTimedCallsDidWork(*run.candidate_clock);
            !idle.ok() && out.status.ok() && !reference_idle) {
          out.status = idle;
          if (kernelbench.is_object()) kernelbench["correctness"] = false;
        }
      }
      if (run.reference_clock && timing.contains("reference") && run.reference_clock->summary.end_found &&
          run.reference_clock->samples > 0)
        timing["reference"]["cupti"] = CuptiTimingJson(*run.reference_clock);
      if (!run.cupti_error.empty()) timing["cupti_error"] = run.cupti_error;
      out.result["timing"] = std::move(timing);
    }
    if (!kernelbench.is_null()) out.result["kernelbench"] = std::move(kernelbench);
    const ErrorClass cls = out.status.error_class();
    if (cls == ErrorClass::kOk || cls == ErrorClass::kWrongResult) CollectOutputs(run, doc, &out, &warnings);
  }
  if (!out.status.ok() && !error_detail.is_null()) out.result["error"] = {{"detail", std::move(error_detail)}};
  out.result["python"] = std::move(python);
  out.result["warnings"] = std::move(warnings);
  return out;
}

}  // namespace assay

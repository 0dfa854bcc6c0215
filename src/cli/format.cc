#include "cli/format.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "cli/table.h"

namespace assay::cli {
namespace {

using nlohmann::json;

std::string Scalar(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "yes" : "no";
  if (v.is_number_float()) return fmt::format("{:.6g}", v.get<double>());
  return v.dump();
}

std::string Str(const json& obj, const char* key, std::string fallback = "") {
  if (!obj.is_object() || !obj.contains(key) || obj[key].is_null()) return fallback;
  return Scalar(obj[key]);
}

int64_t Int(const json& obj, const char* key) {
  if (!obj.is_object() || !obj.contains(key) || !obj[key].is_number()) return 0;
  return obj[key].get<int64_t>();
}

bool Has(const json& obj, const char* key) {
  return obj.is_object() && obj.contains(key) && !obj[key].is_null();
}

std::string Indent(const std::string& text, const std::string& pad) {
  std::string out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    out += pad + text.substr(pos, nl - pos) + "\n";
    pos = nl + 1;
  }
  return out;
}

// Key/value lines for any JSON value, nested objects indented.
void Generic(const json& v, const std::string& pad, std::string& out) {
  for (const auto& [key, value] : v.items()) {
    if (value.is_null()) continue;
    if (value.is_object()) {
      out += pad + key + ":\n";
      Generic(value, pad + "  ", out);
    } else if (value.is_array()) {
      bool scalars = std::all_of(value.begin(), value.end(), [](const json& e) { return e.is_primitive(); });
      if (scalars && value.size() <= 16) {
        std::string joined;
        for (const auto& e : value) joined += (joined.empty() ? "" : ", ") + Scalar(e);
        out += pad + key + ": [" + joined + "]\n";
      } else {
        out += pad + key + ": [" + std::to_string(value.size()) + " items]\n";
      }
    } else if (value.is_string() && value.get<std::string>().find('\n') != std::string::npos) {
      out += pad + key + ":\n" + Indent(value.get<std::string>(), pad + "  | ");
    } else {
      out += pad + key + ": " + Scalar(value) + "\n";
    }
  }
}

void Section(const std::string& title, std::string& out) { out += "\n" + title + "\n"; }

void Compile(const json& c, std::string& out) {
  std::string title = "Compile";
  std::vector<std::string> bits;
  if (Has(c, "compiler")) bits.push_back(Str(c, "compiler"));
  if (Has(c, "arch")) bits.push_back(Str(c, "arch"));
  if (Has(c, "toolkit_version")) bits.push_back("CUDA " + Str(c, "toolkit_version"));
  if (c.value("cache_hit", false)) bits.push_back("cache hit");
  else if (Has(c, "duration_ms")) bits.push_back(FormatMillis(c["duration_ms"].get<double>()));
  if (!bits.empty()) {
    title += " (";
    for (size_t i = 0; i < bits.size(); ++i) title += (i ? ", " : "") + bits[i];
    title += ")";
  }
  Section(title, out);
  if (Has(c, "kernels") && !c["kernels"].empty()) {
    Table t({"kernel", "registers", "shared", "local", "spill st/ld", "const", "max threads"});
    auto row = [&](const std::string& name, const json& k) {
      std::string shown = Str(k, "demangled", name);
      t.AddRow({shown, Str(k, "registers", "0"), FormatBytes(Int(k, "shared_bytes")), FormatBytes(Int(k, "local_bytes")),
                fmt::format("{} / {} B", Int(k, "spill_stores"), Int(k, "spill_loads")),
                FormatBytes(Int(k, "const_bytes")), Str(k, "max_threads_per_block", "-")});
    };
    if (c["kernels"].is_object()) {
      for (const auto& [name, k] : c["kernels"].items()) row(name, k);
    } else {
      for (const auto& k : c["kernels"]) row(Str(k, "name", "?"), k);
    }
    out += Indent(t.Render(), "  ");
  }
  std::string log = Str(c, "log");
  if (!log.empty()) out += "  compiler log:\n" + Indent(log, "    ");
  for (const char* text : {"ptx", "sass"}) {
    if (Has(c, text)) out += fmt::format("  {}: {} (use --json to get the text)\n", text, FormatBytes(Str(c, text).size()));
  }
}

void Program(const json& p, std::string& out) {
  std::string head = "Program";
  if (Has(p, "exit_code")) head += ": exit code " + Str(p, "exit_code");
  if (Has(p, "signal_name")) head += ", killed by " + Str(p, "signal_name");
  else if (Has(p, "signal") && Int(p, "signal") != 0) head += ", signal " + Str(p, "signal");
  if (Has(p, "duration_ms")) head += ", " + FormatMillis(p["duration_ms"].get<double>());
  Section(head, out);
  for (const char* stream : {"stdout", "stderr"}) {
    std::string text = Str(p, stream);
    bool truncated = p.value(std::string(stream) + "_truncated", false);
    if (text.empty() && !truncated) continue;
    std::string label = std::string("  ") + stream;
    if (truncated) {
      std::string bytes_key = std::string(stream) + "_bytes";
      label += Has(p, bytes_key.c_str()) ? " (truncated; " + FormatBytes(Int(p, bytes_key.c_str())) + " in all)"
                                         : " (truncated)";
    }
    out += label + ":\n" + Indent(text, "    ");
  }
  json rest = p;
  for (const char* k : {"exit_code", "signal", "signal_name", "duration_ms", "stdout", "stderr", "stdout_truncated",
                        "stderr_truncated", "stdout_bytes", "stderr_bytes"})
    rest.erase(k);
  Generic(rest, "  ", out);
}

void Timing(const json& t, std::string& out) {
  Section("Timing", out);
  // Statistics in [ms] (docs/result-schema.md) as one row; anything else generic.
  static const char* kStats[] = {"min_ms", "median_ms", "mean_ms", "max_ms", "std_ms"};
  Table table({"min", "median", "mean", "max", "std"});
  std::vector<std::string> row;
  bool any = false;
  for (const char* k : kStats) {
    any = any || Has(t, k);
    row.push_back(Has(t, k) && t[k].is_number() ? FormatMillis(t[k].get<double>()) : "-");
  }
  json rest = t;
  if (any) {
    table.AddRow(row);
    out += Indent(table.Render(), "  ");
    for (const char* k : kStats) rest.erase(k);
  }
  rest.erase("samples_ms");  // raw samples: --json
  Generic(rest, "  ", out);
}

}  // namespace

std::string FormatResult(const json& r) {
  std::string out;
  std::string id = Str(r, "job_id", Str(r, "id"));
  out += fmt::format("Job {}  kind {}  state {}\n", id.empty() ? "?" : id, Str(r, "kind", "?"), Str(r, "state", "?"));
  if (Has(r, "error")) {
    const json& e = r["error"];
    out += "error: " + Str(e, "class", "error") + ": " + Str(e, "message") + "\n";
    if (Has(e, "field")) out += "  field: " + Str(e, "field") + "\n";
    if (Has(e, "detail")) {
      if (e["detail"].is_object()) Generic(e["detail"], "  ", out);
      else out += "  detail: " + Scalar(e["detail"]) + "\n";
    }
  }
  if (Has(r, "compile")) Compile(r["compile"], out);
  if (Has(r, "program")) Program(r["program"], out);
  if (Has(r, "correctness")) {
    Section("Correctness", out);
    Generic(r["correctness"], "  ", out);
  }
  if (Has(r, "timing")) Timing(r["timing"], out);
  static const char* kShown[] = {"schema_version", "job_id", "id", "kind", "state", "error", "compile",
                                 "program", "correctness", "timing", "timestamps"};
  for (const auto& [key, value] : r.items()) {
    if (std::find(std::begin(kShown), std::end(kShown), key) != std::end(kShown)) continue;
    if (value.is_null() || (value.is_object() && value.empty())) continue;
    Section(std::string(1, static_cast<char>(std::toupper(key[0]))) + key.substr(1), out);
    if (value.is_object()) Generic(value, "  ", out);
    else out += "  " + Scalar(value) + "\n";
  }
  return out;
}

std::string FormatJob(const json& job) {
  std::string out;
  out += "id:       " + Str(job, "id", "?") + "\n";
  if (Has(job, "name") && !Str(job, "name").empty()) out += "name:     " + Str(job, "name") + "\n";
  out += "kind:     " + Str(job, "kind", "?") + "\n";
  std::string state = Str(job, "state", "?");
  if (Has(job, "queue_position")) state += " (#" + Str(job, "queue_position") + " in queue)";
  out += "state:    " + state + "\n";
  if (Has(job, "attempts") && Int(job, "attempts") > 0) out += "attempts: " + Str(job, "attempts") + "\n";
  for (const char* t : {"created", "updated"})
    if (Has(job, t)) out += fmt::format("{:<10}{}\n", std::string(t) + ":", Str(job, t));
  const json* err = Has(job, "error") ? &job["error"] : nullptr;
  if (err && err->is_object()) out += "error:    " + Str(*err, "class") + ": " + Str(*err, "message") + "\n";
  else if (!Str(job, "error_class").empty())
    out += "error:    " + Str(job, "error_class") + ": " + Str(job, "error_message") + "\n";
  return out;
}

std::string FormatJobList(const json& list) {
  const json& jobs = list.is_object() ? list.value("jobs", json::array()) : list;
  if (jobs.empty()) return "No jobs.\n";
  Table t({"id", "kind", "state", "name", "created"});
  for (const auto& j : jobs) {
    t.AddRow({Str(j, "id"), Str(j, "kind"), Str(j, "state"), Str(j, "name"), Str(j, "created")});
  }
  std::string out = t.Render();
  if (list.is_object() && Has(list, "next")) out += "more: --before " + Str(list, "next") + "\n";
  return out;
}

std::string FormatGpus(const json& inventory) {
  const json& gpus = inventory.is_array() ? inventory : inventory.value("gpus", json::array());
  if (gpus.empty()) {
    std::string reason = inventory.is_object() ? Str(inventory, "reason", "no GPU is visible") : "no GPU is visible";
    return "No GPU found: " + reason + "\n";
  }
  Table t({"#", "name", "arch", "memory", "SMs", "L2"});
  for (const auto& g : gpus) {
    t.AddRow({Str(g, "index", "?"), Str(g, "name"), Str(g, "arch", Str(g, "compute_capability")),
              FormatBytes(Int(g, "total_memory_bytes")), Str(g, "sm_count"), FormatBytes(Int(g, "l2_bytes"))});
  }
  std::string out = t.Render();
  if (inventory.is_object() && !Str(inventory, "driver_version").empty())
    out += "driver " + Str(inventory, "driver_version") + "\n";
  return out;
}

std::string FormatProgress(const json& job, double elapsed_s) {
  std::string state = Str(job, "state", "?");
  if (Has(job, "queue_position")) state += " (#" + Str(job, "queue_position") + " in queue)";
  return fmt::format("{}  {}  {:.1f} s", Str(job, "id"), state, elapsed_s);
}

namespace {

std::string Millis(const json& obj, const char* key) {
  return Has(obj, key) && obj[key].is_number() ? FormatMillis(obj[key].get<double>()) : "-";
}

std::string Speedup(const json& obj, const char* key) {
  return Has(obj, key) && obj[key].is_number() ? fmt::format("{:.2f}x", obj[key].get<double>()) : "-";
}

// The first line of a message, at most `max` bytes (cut at a UTF-8 boundary).
std::string FirstLine(const std::string& text, size_t max) {
  std::string line = text.substr(0, text.find('\n'));
  if (line.size() <= max) return line;
  size_t cut = max;
  while (cut > 0 && (static_cast<unsigned char>(line[cut]) & 0xC0) == 0x80) --cut;
  return line.substr(0, cut) + "...";
}

}  // namespace

std::string FormatBatch(const json& batch) {
  const json jobs = batch.value("jobs", json::array());
  std::string out = fmt::format("Batch {}", Str(batch, "batch_id", "?"));
  if (!Str(batch, "name").empty()) out += "  " + Str(batch, "name");
  out += fmt::format("  {} candidate{}\n\n", jobs.size(), jobs.size() == 1 ? "" : "s");
  Table t({"candidate", "verdict", "runtime", "speedup", "job"});
  std::string errors;
  for (const json& j : jobs) {
    t.AddRow({Str(j, "name"), Str(j, "verdict", Str(j, "state", "?")), Millis(j, "runtime_ms"), Speedup(j, "speedup"),
              Str(j, "job_id")});
    if (Has(j, "error") && j["error"].is_object() && !Str(j["error"], "message").empty())
      errors += "  " + Str(j, "name") + ": " + FirstLine(Str(j["error"], "message"), 160) + "\n";
  }
  out += t.Render();
  const json summary = batch.value("summary", json::object());
  out += fmt::format("\n{} of {} correct", Int(summary, "correct"), Int(summary, "total"));
  if (Has(summary, "fastest_correct")) {
    const json& f = summary["fastest_correct"];
    out += "; fastest correct: " + Str(f, "name") + " (" + Millis(f, "runtime_ms");
    if (Has(f, "speedup")) out += ", " + Speedup(f, "speedup");
    out += ")";
  }
  out += "\n";
  if (!errors.empty()) out += "\nfailures:\n" + errors;
  return out;
}

std::string FormatBatchProgress(const json& batch, double elapsed_s) {
  const json summary = batch.value("summary", json::object());
  const json by = summary.value("by_state", json::object());
  int64_t running = Int(by, "running") + Int(by, "compiling");
  return fmt::format("{}  {}/{} finished ({} running, {} queued)  {:.1f} s", Str(batch, "batch_id"),
                     Int(summary, "finished"), Int(summary, "total"), running, Int(by, "queued"), elapsed_s);
}

std::string FormatEval(const json& e) {
  std::string out = fmt::format("Job {}  status {} ({})\n", Str(e, "job_id", "?"), Str(e, "status", "?"),
                                Str(e, "state", "?"));
  Table t({"compiled", "correctness", "runtime", "ref_runtime", "speedup"});
  t.AddRow({Str(e, "compiled", "-"), Str(e, "correctness", "-"), Millis(e, "runtime"), Millis(e, "ref_runtime"),
            Speedup(e, "speedup")});
  out += Indent(t.Render(), "  ");
  if (Has(e, "error") && e["error"].is_object())
    out += "error: " + Str(e["error"], "class", "error") + ": " + Str(e["error"], "message") + "\n";
  if (e.contains("warnings") && e["warnings"].is_array())
    for (const json& w : e["warnings"]) out += "warning: " + Scalar(w) + "\n";
  return out;
}

}  // namespace assay::cli

#include "cupti/kernel_report.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <system_error>
#include <vector>

#include "common/util.h"

namespace assay {
namespace {

using nlohmann::json;

struct Kernel {
  uint64_t name_id = 0;
  int64_t grid[3] = {0, 0, 0};
  int64_t block[3] = {0, 0, 0};
  int64_t static_smem = 0;
  int64_t dynamic_smem = 0;
  int64_t registers = 0;
  uint64_t stream = 0;
  uint64_t device = 0;
  uint64_t correlation = 0;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
};

struct Copy {
  std::string kind;
  uint64_t bytes = 0;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
};

struct Mark {
  std::string label;
  uint64_t ts_ns = 0;
};

// A v1 document with its records converted (and dropped from `doc`).
struct Parsed {
  std::vector<Kernel> kernels;
  std::vector<Copy> copies;
  std::vector<Mark> marks;
  std::vector<std::string> names;    // demangled, sanitised
  std::vector<std::string> mangled;  // parallel to names; equal to the name when the file has none
  json doc;                          // everything else
};

// Thrown inside the parse callback; caught in KernelReportFromText.
struct BadField {
  std::string message;
};

uint64_t U64(const json& o, const char* key) {
  auto it = o.find(key);
  if (it == o.end() || !it->is_number_unsigned()) {
    throw BadField{std::string("\"") + key + "\" must be a non-negative integer"};
  }
  return it->get<uint64_t>();
}

int64_t I64(const json& o, const char* key) {
  auto it = o.find(key);
  if (it == o.end() || !it->is_number_integer()) throw BadField{std::string("\"") + key + "\" must be an integer"};
  return it->get<int64_t>();
}

void Dim3(const json& o, const char* key, int64_t out[3]) {
  auto it = o.find(key);
  if (it == o.end() || !it->is_array() || it->size() != 3) {
    throw BadField{std::string("\"") + key + "\" must be an array of 3 integers"};
  }
  for (size_t i = 0; i < 3; ++i) {
    if (!(*it)[i].is_number_integer()) throw BadField{std::string("\"") + key + "\" must hold integers"};
    out[i] = (*it)[i].get<int64_t>();
  }
}

void CheckInterval(uint64_t start, uint64_t end) {
  if (end < start) throw BadField{"a record ends before it starts"};
}

Kernel ParseKernel(const json& o) {
  if (!o.is_object()) throw BadField{"a kernel record is not an object"};
  Kernel k;
  k.name_id = U64(o, "name_id");
  Dim3(o, "grid", k.grid);
  Dim3(o, "block", k.block);
  k.static_smem = I64(o, "static_smem_bytes");
  k.dynamic_smem = I64(o, "dynamic_smem_bytes");
  k.registers = I64(o, "registers");
  k.stream = U64(o, "stream");
  k.device = U64(o, "device");
  k.correlation = U64(o, "correlation");
  k.start_ns = U64(o, "start_ns");
  k.end_ns = U64(o, "end_ns");
  CheckInterval(k.start_ns, k.end_ns);
  return k;
}

Copy ParseCopy(const json& o) {
  if (!o.is_object()) throw BadField{"a memcpy record is not an object"};
  Copy c;
  auto kind = o.find("kind");
  if (kind == o.end() || !kind->is_string()) throw BadField{"\"kind\" must be a string"};
  c.kind = kind->get<std::string>();
  c.bytes = U64(o, "bytes");
  c.start_ns = U64(o, "start_ns");
  c.end_ns = U64(o, "end_ns");
  CheckInterval(c.start_ns, c.end_ns);
  return c;
}

Mark ParseMark(const json& o) {
  if (!o.is_object()) throw BadField{"a mark is not an object"};
  Mark m;
  auto label = o.find("label");
  if (label == o.end() || !label->is_string()) throw BadField{"\"label\" must be a string"};
  m.label = label->get<std::string>();
  m.ts_ns = U64(o, "ts_ns");
  return m;
}

double Ms(uint64_t ns) { return static_cast<double>(ns) / 1e6; }

// Length of the union of [start, end) intervals [ns]. Sorts `iv` by start.
uint64_t UnionNs(std::vector<std::pair<uint64_t, uint64_t>>& iv) {
  std::sort(iv.begin(), iv.end());
  uint64_t total = 0;
  uint64_t cur_start = 0;
  uint64_t cur_end = 0;
  bool open = false;
  for (const auto& [s, e] : iv) {
    if (open && s <= cur_end) {
      cur_end = std::max(cur_end, e);
      continue;
    }
    if (open) total += cur_end - cur_start;
    cur_start = s;
    cur_end = e;
    open = true;
  }
  if (open) total += cur_end - cur_start;
  return total;
}

json Totals(const std::vector<Kernel>& kernels, const std::vector<std::string>& names) {
  std::map<std::string_view, std::vector<uint64_t>> by_name;
  for (const Kernel& k : kernels) by_name[names[k.name_id]].push_back(k.end_ns - k.start_ns);
  struct Row {
    std::string_view name;
    uint64_t total_ns;
    json j;
  };
  std::vector<Row> rows;
  rows.reserve(by_name.size());
  for (auto& [name, d] : by_name) {
    std::sort(d.begin(), d.end());
    uint64_t total = 0;
    for (uint64_t x : d) total += x;
    const size_t n = d.size();
    const double median = n % 2 ? Ms(d[n / 2]) : (Ms(d[n / 2 - 1]) + Ms(d[n / 2])) / 2;
    rows.push_back({name, total,
                    json{{"name", std::string(name)},
                         {"launches", n},
                         {"total_ms", Ms(total)},
                         {"mean_ms", Ms(total) / static_cast<double>(n)},
                         {"min_ms", Ms(d.front())},
                         {"max_ms", Ms(d.back())},
                         {"median_ms", median}}});
  }
  // Most expensive first; ties by name so the order is deterministic.
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.name < b.name;
  });
  json out = json::array();
  for (Row& r : rows) out.push_back(std::move(r.j));
  return out;
}

json CopyTotals(const std::vector<Copy>& copies) {
  struct Sum {
    uint64_t count = 0, bytes = 0, ns = 0;
  };
  std::map<std::string, Sum> by_kind;
  for (const Copy& c : copies) {
    Sum& s = by_kind[c.kind];
    ++s.count;
    s.bytes += c.bytes;
    s.ns += c.end_ns - c.start_ns;
  }
  json out = json::array();
  for (const auto& [kind, s] : by_kind) {
    out.push_back({{"kind", kind}, {"count", s.count}, {"bytes", s.bytes}, {"total_ms", Ms(s.ns)}});
  }
  return out;
}

}  // namespace

json EmptyKernelReport() {
  return json{{"kernels", json::array()},
              {"kernels_truncated", false},
              {"kernel_count", 0},
              {"kernel_totals", json::array()},
              {"gpu_time_ms", 0.0},
              {"gpu_busy_ms", 0.0},
              {"memcpy_totals", json::array()},
              {"kernels_complete", true},
              {"kernel_records_dropped", 0},
              {"kernel_records_truncated", false}};
}

namespace {

// Parses and checks a v1 document. Errors are kInfraError.
Result<Parsed> ParseDocument(std::string_view text) {
  Parsed p;
  try {
    // Records are converted as soon as each one is parsed and dropped from
    // the DOM: a million records as nlohmann objects would take gigabytes.
    std::string section;
    p.doc = json::parse(text, [&](int depth, json::parse_event_t event, json& parsed) {
      if (depth == 1 && event == json::parse_event_t::key) {
        section = parsed.is_string() ? parsed.get<std::string>() : std::string();
      } else if (depth == 2 && event == json::parse_event_t::object_end) {
        if (section == "kernels") {
          p.kernels.push_back(ParseKernel(parsed));
          return false;
        }
        if (section == "memcpy") {
          p.copies.push_back(ParseCopy(parsed));
          return false;
        }
        if (section == "marks") {
          p.marks.push_back(ParseMark(parsed));
          return false;
        }
      }
      return true;
    });
  } catch (const json::exception& e) {
    return Status::Infra(std::string("kernel timing file is not valid JSON: ") + e.what());
  } catch (const BadField& e) {
    return Status::Infra("kernel timing file has a bad record: " + e.message);
  }

  const json& doc = p.doc;
  if (!doc.is_object() || !doc.contains("v") || doc["v"] != 1) {
    return Status::Infra("kernel timing file is not format v1");
  }
  if (auto it = doc.find("error"); it != doc.end()) {
    return Status::Infra("kernel timing unavailable: " + (it->is_string() ? it->get<std::string>() : it->dump()));
  }
  if (auto it = doc.find("names"); it != doc.end() && it->is_array()) {
    for (const json& n : *it) {
      if (!n.is_object() || !n.contains("name") || !n["name"].is_string()) {
        return Status::Infra("kernel timing file has a bad \"names\" entry");
      }
      p.names.push_back(SanitizeUtf8(n["name"].get<std::string>()));
      auto m = n.find("mangled");
      p.mangled.push_back(m != n.end() && m->is_string() ? m->get<std::string>() : n["name"].get<std::string>());
    }
  } else if (!p.kernels.empty()) {
    return Status::Infra("kernel timing file has kernels but no \"names\"");
  }
  for (const Kernel& k : p.kernels) {
    if (k.name_id >= p.names.size()) return Status::Infra("kernel timing file has a name_id out of range");
  }
  return p;
}

uint64_t DocU64(const json& doc, const char* key) {
  auto it = doc.find(key);
  return it != doc.end() && it->is_number_unsigned() ? it->get<uint64_t>() : 0;
}

bool DocComplete(const json& doc) {
  auto it = doc.find("complete");
  return it != doc.end() && it->is_boolean() && it->get<bool>();
}

}  // namespace

Result<json> KernelReportFromText(std::string_view text, const KernelReportOptions& options) {
  auto parsed = ParseDocument(text);
  if (!parsed.ok()) return parsed.status();
  std::vector<Kernel>& kernels = parsed->kernels;
  const std::vector<Copy>& copies = parsed->copies;
  const std::vector<std::string>& names = parsed->names;
  const json& doc = parsed->doc;

  json report = EmptyKernelReport();
  std::stable_sort(kernels.begin(), kernels.end(),
                   [](const Kernel& a, const Kernel& b) { return a.start_ns < b.start_ns; });
  const uint64_t t0 = kernels.empty() ? 0 : kernels.front().start_ns;
  json list = json::array();
  uint64_t gpu_ns = 0;
  std::vector<std::pair<uint64_t, uint64_t>> intervals;
  intervals.reserve(kernels.size());
  for (const Kernel& k : kernels) {
    gpu_ns += k.end_ns - k.start_ns;
    intervals.emplace_back(k.start_ns, k.end_ns);
    if (list.size() >= options.max_kernels) continue;
    list.push_back({{"name", names[k.name_id]},
                    {"grid", {k.grid[0], k.grid[1], k.grid[2]}},
                    {"block", {k.block[0], k.block[1], k.block[2]}},
                    {"static_smem_bytes", k.static_smem},
                    {"dynamic_smem_bytes", k.dynamic_smem},
                    {"registers", k.registers},
                    {"stream", k.stream},
                    {"device", k.device},
                    {"correlation", k.correlation},
                    {"start_ms", Ms(k.start_ns - t0)},
                    {"duration_ms", Ms(k.end_ns - k.start_ns)}});
  }
  report["kernels"] = std::move(list);
  report["kernels_truncated"] = kernels.size() > options.max_kernels;
  report["kernel_count"] = kernels.size();
  report["kernel_totals"] = Totals(kernels, names);
  report["gpu_time_ms"] = Ms(gpu_ns);
  report["gpu_busy_ms"] = Ms(UnionNs(intervals));
  report["memcpy_totals"] = CopyTotals(copies);
  if (auto it = doc.find("complete"); it != doc.end() && it->is_boolean()) {
    report["kernels_complete"] = it->get<bool>();
  } else {
    report["kernels_complete"] = false;
  }
  if (auto it = doc.find("dropped"); it != doc.end() && it->is_number_unsigned()) {
    report["kernel_records_dropped"] = it->get<uint64_t>();
  }
  if (auto it = doc.find("truncated_kernels"); it != doc.end() && it->is_number_unsigned()) {
    report["kernel_records_truncated"] = it->get<uint64_t>() > 0;
  }
  if (auto it = doc.find("warnings"); it != doc.end() && it->is_array() && !it->empty()) {
    json warnings = json::array();
    for (const json& w : *it) {
      if (w.is_string()) warnings.push_back(SanitizeUtf8(w.get<std::string>()));
    }
    report["kernel_warnings"] = std::move(warnings);
  }
  return report;
}

Result<json> KernelReportFromFile(const std::filesystem::path& path, const KernelReportOptions& options) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec) && !ec) return EmptyKernelReport();
  auto text = ReadFile(path, options.max_file_bytes);
  if (!text.ok()) {
    return Status::Infra("cannot read kernel timing file " + path.string() + ": " + text.status().message());
  }
  return KernelReportFromText(*text, options);
}

void AttachKernelReport(const std::filesystem::path& path, json* program, const KernelReportOptions& options) {
  Result<json> r = KernelReportFromFile(path, options);
  json report = r.ok() ? std::move(r).value() : EmptyKernelReport();
  if (!r.ok()) report["kernels_error"] = r.status().message();
  for (auto& [key, value] : report.items()) (*program)[key] = std::move(value);
}

Result<PhaseSummary> SummarizePhaseText(std::string_view text, std::string_view begin_label,
                                        std::string_view end_label, const std::vector<std::string>& exclude_names,
                                        size_t top_n) {
  auto parsed = ParseDocument(text);
  if (!parsed.ok()) return parsed.status();
  const Parsed& p = *parsed;
  PhaseSummary out;
  out.complete = DocComplete(p.doc);
  out.records_dropped = DocU64(p.doc, "dropped");
  out.records_truncated = DocU64(p.doc, "truncated_kernels") > 0;
  out.marks_dropped = DocU64(p.doc, "marks_dropped");

  // Marks are written in call order, but several threads may mark: order by time.
  std::vector<Mark> marks = p.marks;
  std::stable_sort(marks.begin(), marks.end(), [](const Mark& a, const Mark& b) { return a.ts_ns < b.ts_ns; });
  for (const Mark& m : marks) {
    if (!out.begin_found) {
      if (m.label == begin_label) {
        out.begin_found = true;
        out.begin_ns = m.ts_ns;
      }
    } else if (m.label == end_label) {
      out.end_found = true;
      out.end_ns = m.ts_ns;
      break;
    }
  }
  // With end_label == begin_label the end is the next such mark.
  if (!out.begin_found || !out.end_found) return out;
  out.span_ms = Ms(out.end_ns - out.begin_ns);

  std::vector<bool> excluded(p.names.size(), false);
  for (size_t i = 0; i < p.names.size(); ++i) {
    for (const std::string& x : exclude_names) {
      if (p.names[i] == x || p.mangled[i] == x) excluded[i] = true;
    }
  }
  struct Acc {
    uint64_t launches = 0;
    uint64_t ns = 0;
  };
  std::map<std::string_view, Acc> by_name;
  std::vector<std::pair<uint64_t, uint64_t>> intervals;
  uint64_t sum_ns = 0;
  for (const Kernel& k : p.kernels) {
    if (k.start_ns < out.begin_ns || k.start_ns > out.end_ns) continue;
    if (excluded[k.name_id]) {
      ++out.excluded_kernels;
      continue;
    }
    ++out.kernels;
    sum_ns += k.end_ns - k.start_ns;
    intervals.emplace_back(k.start_ns, k.end_ns);
    Acc& a = by_name[p.names[k.name_id]];
    ++a.launches;
    a.ns += k.end_ns - k.start_ns;
  }
  out.kernel_sum_ms = Ms(sum_ns);
  out.kernel_busy_ms = Ms(UnionNs(intervals));
  std::vector<std::pair<std::string_view, Acc>> rows(by_name.begin(), by_name.end());
  // Most total time first; ties by name so the order is deterministic.
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    return a.second.ns != b.second.ns ? a.second.ns > b.second.ns : a.first < b.first;
  });
  for (size_t i = 0; i < rows.size() && i < top_n; ++i) {
    out.top.push_back({std::string(rows[i].first), rows[i].second.launches, Ms(rows[i].second.ns)});
  }
  return out;
}

Result<PhaseSummary> SummarizePhase(const std::filesystem::path& file, std::string_view begin_label,
                                    std::string_view end_label, const std::vector<std::string>& exclude_names,
                                    size_t top_n) {
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) {
    return Status::Infra("kernel timing file " + file.string() + " is missing: the CUPTI injection did not run");
  }
  auto text = ReadFile(file, KernelReportOptions{}.max_file_bytes);
  if (!text.ok()) {
    return Status::Infra("cannot read kernel timing file " + file.string() + ": " + text.status().message());
  }
  return SummarizePhaseText(*text, begin_label, end_label, exclude_names, top_n);
}

json ToJson(const PhaseSummary& s) {
  json top = json::array();
  for (const PhaseKernelTotal& t : s.top) {
    top.push_back({{"name", t.name}, {"launches", t.launches}, {"total_ms", t.total_ms}});
  }
  return {{"begin_found", s.begin_found},
          {"end_found", s.end_found},
          {"span_ms", s.span_ms},
          {"kernels", s.kernels},
          {"excluded_kernels", s.excluded_kernels},
          {"kernel_sum_ms", s.kernel_sum_ms},
          {"kernel_busy_ms", s.kernel_busy_ms},
          {"top", std::move(top)},
          {"complete", s.complete},
          {"records_dropped", s.records_dropped},
          {"records_truncated", s.records_truncated},
          {"marks_dropped", s.marks_dropped}};
}

}  // namespace assay

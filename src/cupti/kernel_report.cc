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

Result<json> KernelReportFromText(std::string_view text, const KernelReportOptions& options) {
  std::vector<Kernel> kernels;
  std::vector<Copy> copies;
  json doc;
  try {
    // Records are converted as soon as each one is parsed and dropped from
    // the DOM: a million records as nlohmann objects would take gigabytes.
    std::string section;
    doc = json::parse(text, [&](int depth, json::parse_event_t event, json& parsed) {
      if (depth == 1 && event == json::parse_event_t::key) {
        section = parsed.is_string() ? parsed.get<std::string>() : std::string();
      } else if (depth == 2 && event == json::parse_event_t::object_end) {
        if (section == "kernels") {
          kernels.push_back(ParseKernel(parsed));
          return false;
        }
        if (section == "memcpy") {
          copies.push_back(ParseCopy(parsed));
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

  if (!doc.is_object() || !doc.contains("v") || doc["v"] != 1) {
    return Status::Infra("kernel timing file is not format v1");
  }
  if (auto it = doc.find("error"); it != doc.end()) {
    return Status::Infra("kernel timing unavailable: " + (it->is_string() ? it->get<std::string>() : it->dump()));
  }
  std::vector<std::string> names;
  if (auto it = doc.find("names"); it != doc.end() && it->is_array()) {
    for (const json& n : *it) {
      if (!n.is_object() || !n.contains("name") || !n["name"].is_string()) {
        return Status::Infra("kernel timing file has a bad \"names\" entry");
      }
      names.push_back(SanitizeUtf8(n["name"].get<std::string>()));
    }
  } else if (!kernels.empty()) {
    return Status::Infra("kernel timing file has kernels but no \"names\"");
  }
  for (const Kernel& k : kernels) {
    if (k.name_id >= names.size()) return Status::Infra("kernel timing file has a name_id out of range");
  }

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

}  // namespace assay

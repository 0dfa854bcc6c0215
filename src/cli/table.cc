#include "cli/table.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace assay::cli {

size_t DisplayWidth(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s)
    if ((c & 0xC0) != 0x80) ++n;  // count lead bytes only
  return n;
}

std::string Table::Render() const {
  std::vector<size_t> width(header_.size(), 0);
  auto measure = [&](const std::vector<std::string>& row) {
    for (size_t i = 0; i < row.size() && i < width.size(); ++i) width[i] = std::max(width[i], DisplayWidth(row[i]));
  };
  measure(header_);
  for (const auto& r : rows_) measure(r);
  auto line = [&](const std::vector<std::string>& row) {
    std::string out;
    for (size_t i = 0; i < width.size(); ++i) {
      std::string cell = i < row.size() ? row[i] : "";
      out += cell;
      if (i + 1 < width.size()) out += std::string(width[i] - DisplayWidth(cell) + 2, ' ');
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::string out = line(header_);
  std::vector<std::string> rule;
  for (size_t w : width) rule.push_back(std::string(w, '-'));
  out += line(rule);
  for (const auto& r : rows_) out += line(r);
  return out;
}

std::string FormatMicros(double us) {
  double a = std::fabs(us);
  if (a < 1.0) return fmt::format("{:.0f} ns", us * 1000.0);
  if (a < 1000.0) return fmt::format("{:.{}f} µs", us, a < 10 ? 2 : (a < 100 ? 1 : 0));
  if (a < 1e6) return fmt::format("{:.{}f} ms", us / 1e3, a < 1e4 ? 2 : (a < 1e5 ? 1 : 0));
  return fmt::format("{:.2f} s", us / 1e6);
}

std::string FormatBytes(int64_t bytes) {
  static const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024 && bytes > -1024) return fmt::format("{} B", bytes);
  double v = static_cast<double>(bytes);
  int u = -1;
  while (std::fabs(v) >= 1024.0 && u < 3) {
    v /= 1024.0;
    ++u;
  }
  return fmt::format("{:.{}f} {}", v, std::fabs(v) < 10 ? 2 : 1, kUnits[u]);
}

}  // namespace assay::cli

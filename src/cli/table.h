// Aligned text tables and human units for the CLI's output to people.
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace assay::cli {

// Columns padded to their widest cell (UTF-8 aware: "µs" is two columns, not three bytes).
class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  void AddRow(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }
  bool empty() const { return rows_.empty(); }
  // Header, a rule, then rows; every line ends with '\n'. Numbers are not
  // special-cased: callers format them.
  std::string Render() const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

// Display width of UTF-8 text (code points; no East Asian wide forms in our output).
size_t DisplayWidth(const std::string& s);

// 0.85 -> "850 ns", 12.3 -> "12.3 µs", 4560 -> "4.56 ms", 2.5e6 -> "2.50 s". Input [µs].
std::string FormatMicros(double us);
// Milliseconds input, same rendering.
inline std::string FormatMillis(double ms) { return FormatMicros(ms * 1000.0); }
// 512 -> "512 B", 49152 -> "48.0 KiB", 1.5 MiB -> "1.50 MiB".
std::string FormatBytes(int64_t bytes);

}  // namespace assay::cli

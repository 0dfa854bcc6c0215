// The in-memory log of GPU activity that the CUPTI injection library keeps for
// one process, and the JSON file it becomes (format v1, docs/cupti.md).
//
// This file has no CUPTI dependency: the injection library converts CUPTI's
// records into these plain structs, so the writer is unit-tested on machines
// with no GPU, and the reader (kernel_report.h) is tested against its output.
//
// It is linked into libassay_cupti.so, which lives inside arbitrary host
// processes: nothing here throws past its public functions, logs, or touches
// global state outside the object.
//
// Thread-safety: every member function may be called from any thread; one
// internal mutex serialises them (CUPTI delivers buffers on its own thread
// while the at-exit handler writes the file on another).
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace assay::cupti {

// One kernel execution. Times are GPU timestamps [ns] on CUPTI's clock.
struct KernelRecord {
  int32_t grid[3] = {0, 0, 0};
  int32_t block[3] = {0, 0, 0};
  int32_t static_smem_bytes = 0;
  int32_t dynamic_smem_bytes = 0;
  uint32_t registers = 0;  // per thread
  uint32_t stream = 0;     // CUPTI stream id (not the CUstream handle)
  uint32_t device = 0;     // CUDA device ordinal as the process sees it
  uint32_t context = 0;
  uint32_t correlation = 0;  // matches the launching API call
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
};

// One memcpy or memset. kind is a wire name: "HtoD", "DtoH", "DtoD", "HtoH",
// "PtoP", "HtoA", "AtoH", "AtoA", "AtoD", "DtoA", "memset" or "unknown".
inline constexpr size_t kMaxMarks = 10000;
inline constexpr size_t kMaxMarkLabelBytes = 64;

// A mark's label as written: at most kMaxMarkLabelBytes bytes, bytes outside
// 0x20..0x7e replaced by '_'. Null becomes "".
std::string SanitizeMarkLabel(const char* label);

struct Mark {
  std::string label;
  uint64_t ts_ns = 0;
};

struct CopyRecord {
  const char* kind = "unknown";  // static string
  uint64_t bytes = 0;
  uint32_t stream = 0;
  uint32_t device = 0;
  uint32_t correlation = 0;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
};

class ActivityLog {
 public:
  // At most max_records kernel records and max_records copy records are kept;
  // later ones are counted (truncated=true in the file) and dropped.
  explicit ActivityLog(size_t max_records) : max_records_(max_records) {}
  ActivityLog(const ActivityLog&) = delete;
  ActivityLog& operator=(const ActivityLog&) = delete;

  // `mangled_name` is the name CUPTI reports (may be null). It is demangled
  // once per distinct name. Records whose end precedes their start, or with a
  // zero timestamp (CUPTI could not time them), are counted as invalid.
  void AddKernel(const char* mangled_name, const KernelRecord& record) noexcept;
  void AddCopy(const CopyRecord& record) noexcept;
  // Records CUPTI reports as dropped (its buffers were full).
  void AddDropped(uint64_t count) noexcept;
  // Which libcupti was loaded (a path), written as "cupti_lib".
  void SetCuptiLibrary(const std::string& path) noexcept;
  // A non-fatal problem worth reporting ("memset activity unavailable: ...").
  void AddWarning(const std::string& warning) noexcept;
  // A mark (AssayCuptiMark): `label` (may be null) is cut to kMaxMarkLabelBytes
  // and every byte outside printable ASCII becomes '_' (SanitizeMarkLabel);
  // ts_ns is on the clock of the kernel records. Past kMaxMarks marks, or with
  // ts_ns == 0, the mark is counted in marks_dropped instead.
  void AddMark(const char* label, uint64_t ts_ns) noexcept;
  // Marks that could not be taken at all (CUPTI was not up yet).
  void AddMarksDropped(uint64_t count) noexcept;

  // Writes the v1 document to `path` through `path.tmp.<pid>` + rename, so a
  // reader never sees half a file. `complete` is false for snapshots taken
  // before the process's final flush. Returns false with *error set on failure.
  bool WriteJsonFile(const std::string& path, bool complete, std::string* error) const noexcept;

  size_t kernel_count() const;

 private:
  uint32_t NameId(const char* mangled_name);  // REQUIRES: mu_ held

  const size_t max_records_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, uint32_t> name_ids_;  // mangled -> index into names_
  std::vector<std::string> mangled_;
  std::vector<std::string> names_;  // demangled, parallel to mangled_
  std::vector<uint32_t> kernel_names_;  // parallel to kernels_
  std::vector<KernelRecord> kernels_;
  std::vector<CopyRecord> copies_;
  std::vector<Mark> marks_;
  uint64_t marks_dropped_ = 0;
  std::vector<std::string> warnings_;
  std::string cupti_lib_;
  uint64_t dropped_ = 0;
  uint64_t invalid_ = 0;
  uint64_t truncated_kernels_ = 0;
  uint64_t truncated_copies_ = 0;
};

// The document written when profiling could not start: {"v":1,"pid":N,"error":"..."}.
bool WriteErrorJsonFile(const std::string& path, const std::string& message, std::string* error) noexcept;

// JSON string literal (with quotes) for arbitrary bytes: control characters
// are escaped and bytes >= 0x80 become '?', so the output is always valid
// UTF-8 (kernel names are ASCII in practice). Exposed for tests.
std::string JsonQuote(const std::string& s);

}  // namespace assay::cupti

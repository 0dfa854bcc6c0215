#include "cupti/activity_log.h"

#include <cxxabi.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>

namespace assay::cupti {
namespace {

std::string Demangle(const std::string& mangled) {
  int status = 0;
  // __cxa_demangle returns a malloc'd buffer (or null for names that are not
  // mangled, e.g. extern "C" or Triton kernels); the unique_ptr frees it.
  std::unique_ptr<char, decltype(&std::free)> out(
      abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status), &std::free);
  if (status != 0 || out == nullptr) return mangled;
  return std::string(out.get());
}

// Buffered writer over a raw fd: the host process's stdio state is not ours
// to touch, and a document of a million records must not be built in memory.
class FdWriter {
 public:
  explicit FdWriter(int fd) : fd_(fd) { buf_.reserve(kFlushAt + 4096); }
  FdWriter& operator<<(const std::string& s) {
    buf_ += s;
    MaybeFlush();
    return *this;
  }
  FdWriter& operator<<(const char* s) {
    buf_ += s;
    MaybeFlush();
    return *this;
  }
  FdWriter& operator<<(uint64_t v) { return *this << std::to_string(v); }
  FdWriter& operator<<(int64_t v) { return *this << std::to_string(v); }
  FdWriter& operator<<(uint32_t v) { return *this << std::to_string(v); }
  FdWriter& operator<<(int32_t v) { return *this << std::to_string(v); }
  bool Flush() {
    size_t off = 0;
    while (ok_ && off < buf_.size()) {
      ssize_t n = ::write(fd_, buf_.data() + off, buf_.size() - off);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        ok_ = false;
        err_ = errno;
        break;
      }
      off += static_cast<size_t>(n);
    }
    buf_.clear();
    return ok_;
  }
  int error() const { return err_; }

 private:
  static constexpr size_t kFlushAt = 1 << 20;
  void MaybeFlush() {
    if (buf_.size() >= kFlushAt) Flush();
  }
  int fd_;
  std::string buf_;
  bool ok_ = true;
  int err_ = 0;
};

// Writes through `path.tmp.<pid>` and renames over `path`.
template <typename Body>
bool WriteAtomically(const std::string& path, Body&& body, std::string* error) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    if (error) *error = "cannot create " + tmp + ": " + std::strerror(errno);
    return false;
  }
  FdWriter w(fd);
  body(w);
  bool ok = w.Flush();
  int err = w.error();
  if (::close(fd) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (ok && ::rename(tmp.c_str(), path.c_str()) != 0) {
    ok = false;
    err = errno;
  }
  if (!ok) {
    ::unlink(tmp.c_str());
    if (error) *error = "cannot write " + path + ": " + std::strerror(err);
  }
  return ok;
}

}  // namespace

std::string JsonQuote(const std::string& s) {
  std::string out;
  out.reserve(s.size() + 2);
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20) {
          static const char kHex[] = "0123456789abcdef";
          out += "\\u00";
          out += kHex[c >> 4];
          out += kHex[c & 0xf];
        } else if (c >= 0x80) {
          out += '?';
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
  return out;
}

std::string SanitizeMarkLabel(const char* label) {
  std::string out;
  if (label == nullptr) return out;
  for (size_t i = 0; label[i] != '\0' && i < kMaxMarkLabelBytes; ++i) {
    const unsigned char c = static_cast<unsigned char>(label[i]);
    out += (c >= 0x20 && c <= 0x7e) ? static_cast<char>(c) : '_';
  }
  return out;
}

uint32_t ActivityLog::NameId(const char* mangled_name) {
  std::string key = mangled_name ? mangled_name : "<unknown>";
  auto it = name_ids_.find(key);
  if (it != name_ids_.end()) return it->second;
  const auto id = static_cast<uint32_t>(names_.size());
  names_.push_back(Demangle(key));
  mangled_.push_back(key);
  name_ids_.emplace(std::move(key), id);
  return id;
}

void ActivityLog::AddKernel(const char* mangled_name, const KernelRecord& record) noexcept {
  try {
    std::lock_guard<std::mutex> lock(mu_);
    if (record.start_ns == 0 || record.end_ns < record.start_ns) {
      ++invalid_;
      return;
    }
    if (kernels_.size() >= max_records_) {
      ++truncated_kernels_;
      return;
    }
    const uint32_t id = NameId(mangled_name);
    kernels_.push_back(record);
    kernel_names_.push_back(id);
  } catch (...) {  // bad_alloc: lose the record, never the host process
  }
}

void ActivityLog::AddCopy(const CopyRecord& record) noexcept {
  try {
    std::lock_guard<std::mutex> lock(mu_);
    if (record.start_ns == 0 || record.end_ns < record.start_ns) {
      ++invalid_;
      return;
    }
    if (copies_.size() >= max_records_) {
      ++truncated_copies_;
      return;
    }
    copies_.push_back(record);
  } catch (...) {
  }
}

void ActivityLog::AddDropped(uint64_t count) noexcept {
  std::lock_guard<std::mutex> lock(mu_);
  dropped_ += count;
}

void ActivityLog::SetCuptiLibrary(const std::string& path) noexcept {
  try {
    std::lock_guard<std::mutex> lock(mu_);
    cupti_lib_ = path;
  } catch (...) {
  }
}

void ActivityLog::AddWarning(const std::string& warning) noexcept {
  try {
    std::lock_guard<std::mutex> lock(mu_);
    if (warnings_.size() < 32) warnings_.push_back(warning);
  } catch (...) {
  }
}

void ActivityLog::AddMark(const char* label, uint64_t ts_ns) noexcept {
  try {
    std::string clean = SanitizeMarkLabel(label);
    std::lock_guard<std::mutex> lock(mu_);
    if (ts_ns == 0 || marks_.size() >= kMaxMarks) {
      ++marks_dropped_;
      return;
    }
    marks_.push_back({std::move(clean), ts_ns});
  } catch (...) {
  }
}

void ActivityLog::AddMarksDropped(uint64_t count) noexcept {
  std::lock_guard<std::mutex> lock(mu_);
  marks_dropped_ += count;
}

size_t ActivityLog::kernel_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return kernels_.size();
}

bool ActivityLog::WriteJsonFile(const std::string& path, bool complete, std::string* error) const noexcept {
  try {
    std::lock_guard<std::mutex> lock(mu_);
    return WriteAtomically(
        path,
        [&](FdWriter& w) {
          w << "{\"v\":1,\"pid\":" << static_cast<int64_t>(::getpid())
            << ",\"complete\":" << (complete ? "true" : "false") << ",\"max_records\":"
            << static_cast<uint64_t>(max_records_) << ",\"cupti_lib\":" << JsonQuote(cupti_lib_)
            << ",\n\"names\":[";
          for (size_t i = 0; i < names_.size(); ++i) {
            w << (i ? ",\n" : "\n") << "{\"name\":" << JsonQuote(names_[i]);
            if (mangled_[i] != names_[i]) w << ",\"mangled\":" << JsonQuote(mangled_[i]);
            w << "}";
          }
          w << "],\n\"kernels\":[";
          for (size_t i = 0; i < kernels_.size(); ++i) {
            const KernelRecord& k = kernels_[i];
            w << (i ? ",\n" : "\n") << "{\"name_id\":" << kernel_names_[i] << ",\"grid\":[" << k.grid[0] << ","
              << k.grid[1] << "," << k.grid[2] << "],\"block\":[" << k.block[0] << "," << k.block[1] << ","
              << k.block[2] << "],\"static_smem_bytes\":" << k.static_smem_bytes
              << ",\"dynamic_smem_bytes\":" << k.dynamic_smem_bytes << ",\"registers\":" << k.registers
              << ",\"stream\":" << k.stream << ",\"device\":" << k.device << ",\"context\":" << k.context
              << ",\"correlation\":" << k.correlation << ",\"start_ns\":" << k.start_ns
              << ",\"end_ns\":" << k.end_ns << ",\"duration_ns\":" << (k.end_ns - k.start_ns) << "}";
          }
          w << "],\n\"memcpy\":[";
          for (size_t i = 0; i < copies_.size(); ++i) {
            const CopyRecord& c = copies_[i];
            w << (i ? ",\n" : "\n") << "{\"kind\":" << JsonQuote(c.kind) << ",\"bytes\":" << c.bytes
              << ",\"stream\":" << c.stream << ",\"device\":" << c.device << ",\"correlation\":" << c.correlation
              << ",\"start_ns\":" << c.start_ns << ",\"end_ns\":" << c.end_ns
              << ",\"duration_ns\":" << (c.end_ns - c.start_ns) << "}";
          }
          w << "],\n\"marks\":[";
          for (size_t i = 0; i < marks_.size(); ++i) {
            w << (i ? ",\n" : "\n") << "{\"label\":" << JsonQuote(marks_[i].label)
              << ",\"ts_ns\":" << marks_[i].ts_ns << "}";
          }
          w << "],\"marks_dropped\":" << marks_dropped_ << ",\n\"warnings\":[";
          for (size_t i = 0; i < warnings_.size(); ++i) w << (i ? "," : "") << JsonQuote(warnings_[i]);
          w << "],\"dropped\":" << dropped_ << ",\"invalid\":" << invalid_
            << ",\"truncated\":" << ((truncated_kernels_ + truncated_copies_) ? "true" : "false")
            << ",\"truncated_kernels\":" << truncated_kernels_ << ",\"truncated_memcpy\":" << truncated_copies_
            << "}\n";
        },
        error);
  } catch (...) {
    if (error) *error = "out of memory while writing " + path;
    return false;
  }
}

bool WriteErrorJsonFile(const std::string& path, const std::string& message, std::string* error) noexcept {
  try {
    return WriteAtomically(
        path,
        [&](FdWriter& w) {
          w << "{\"v\":1,\"pid\":" << static_cast<int64_t>(::getpid()) << ",\"error\":" << JsonQuote(message)
            << "}\n";
        },
        error);
  } catch (...) {
    return false;
  }
}

}  // namespace assay::cupti

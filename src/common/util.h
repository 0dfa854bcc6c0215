// Small helpers shared by every component: hashing, ids, time, files.
// Thread-safety: all functions are reentrant.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace assay {

// Lower-case hex SHA-256. Used for content addressing (blobs, compile cache,
// API key hashes): user-controlled content needs a collision-resistant hash.
std::string Sha256Hex(std::string_view data);

// `prefix` + 24 hex chars from a CSPRNG (getrandom). Job ids "j_...", key ids "k_...".
std::string RandomId(std::string_view prefix, size_t hex_chars = 24);

// Milliseconds since the Unix epoch (wall clock, for records).
int64_t NowUnixMs();
// Milliseconds on a monotonic clock (for durations and deadlines).
int64_t MonotonicMs();
// RFC 3339 UTC with milliseconds, e.g. 2026-11-21T10:00:00.123Z.
std::string FormatUnixMs(int64_t unix_ms);

// Whole-file read; NotFound / Infra on failure. Refuses files above max_bytes with Rejected.
Result<std::string> ReadFile(const std::filesystem::path& path, size_t max_bytes = SIZE_MAX);
// Writes to path.tmp, fsyncs, renames: readers never see a half-written file.
Status WriteFileAtomic(const std::filesystem::path& path, std::string_view data);

// A directory removed (recursively) when the owner goes away. Move-only.
class TempDir {
 public:
  // Creates `<parent>/<prefix>XXXXXX`. parent defaults to $TMPDIR or /tmp.
  static Result<TempDir> Create(std::string_view prefix, const std::filesystem::path& parent = {});
  TempDir(TempDir&& o) noexcept : path_(std::move(o.path_)) { o.path_.clear(); }
  TempDir& operator=(TempDir&& o) noexcept;
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir();
  const std::filesystem::path& path() const { return path_; }

 private:
  explicit TempDir(std::filesystem::path p) : path_(std::move(p)) {}
  std::filesystem::path path_;
};

// Truncates `s` to at most `max` bytes without splitting a UTF-8 sequence; sets *truncated.
std::string TruncateUtf8(std::string s, size_t max, bool* truncated = nullptr);

// Replaces invalid UTF-8 sequences with U+FFFD so the text can go into JSON.
std::string SanitizeUtf8(std::string_view s);

}  // namespace assay

// The on-disk compile cache, content-addressed: the key is a SHA-256 over a
// canonical serialization of everything that decides the compiler's output.
// Layout: <dir>/<key[0:2]>/<key>/{artifact, meta.json}; staging copies are
// built in <dir>/tmp/ and renamed into place, so a reader sees a whole entry
// or none, and of two concurrent compiles of one key the second rename fails
// and that copy is discarded.
//
// Thread-safety: safe across threads and processes sharing `dir`.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"
#include "common/util.h"
#include "compile/compiler.h"

namespace assay {

// Bumped whenever an entry's meaning changes (key recipe, meta.json shape,
// resource parsing), so old entries become misses instead of lies.
inline constexpr int kCompileCacheFormatVersion = 1;

// Hex SHA-256 over {format version, toolkit version, compiler, arch, output
// kind, want_ptx, want_sass, filename, flags in order, source}, each field
// length-prefixed so no two requests serialize alike.
std::string CompileCacheKey(const CompileRequest& request, std::string_view toolkit_version);

class CompileCache {
 public:
  explicit CompileCache(std::filesystem::path dir) : dir_(std::move(dir)) {}

  std::filesystem::path EntryDir(const std::string& key) const;

  // The stored output with cache_hit = true, duration_ms = 0 and `artifact`
  // pointing into the entry; nullopt on a miss or an unreadable entry.
  // Touches meta.json's mtime (the LRU clock for eviction).
  std::optional<CompileOutput> Lookup(const std::string& key) const;

  // A fresh, empty staging directory on the cache's filesystem.
  Result<TempDir> NewStaging() const;

  // Writes meta.json (from `output`, whose cache_key must be set) into
  // `staging` and renames it to the entry. If another writer got there first,
  // that entry is returned instead. The result's `artifact` is the entry's
  // artifact when staging held one.
  Result<CompileOutput> Commit(TempDir staging, const CompileOutput& output);

 private:
  std::filesystem::path dir_;
};

}  // namespace assay

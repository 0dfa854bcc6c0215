#include "compile/compile_cache.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "compile/compile_json.h"

namespace assay {
namespace {

void AddField(std::string& out, std::string_view name, std::string_view value) {
  out += name;
  out += ':';
  out += std::to_string(value.size());
  out += ':';
  out += value;
  out += '\n';
}

}  // namespace

std::string CompileCacheKey(const CompileRequest& r, std::string_view toolkit_version) {
  std::string s;
  AddField(s, "assay-compile-cache", std::to_string(kCompileCacheFormatVersion));
  AddField(s, "toolkit", toolkit_version);
  // kExecutable is always built by nvcc, whatever the request says.
  AddField(s, "compiler", r.output == CompileOutputKind::kExecutable ? "nvcc" : r.compiler);
  AddField(s, "arch", r.arch);
  AddField(s, "output", CompileOutputKindName(r.output));
  AddField(s, "want_ptx", r.want_ptx ? "1" : "0");
  AddField(s, "want_sass", r.want_sass ? "1" : "0");
  AddField(s, "filename", r.filename);
  AddField(s, "flags", std::to_string(r.flags.size()));
  for (const std::string& f : r.flags) AddField(s, "flag", f);
  AddField(s, "source", r.source);
  return Sha256Hex(s);
}

std::filesystem::path CompileCache::EntryDir(const std::string& key) const {
  return dir_ / key.substr(0, 2) / key;
}

std::optional<CompileOutput> CompileCache::Lookup(const std::string& key) const {
  const std::filesystem::path entry = EntryDir(key);
  Result<std::string> meta = ReadFile(entry / "meta.json", 256 << 20);
  if (!meta.ok()) return std::nullopt;
  const nlohmann::json j = nlohmann::json::parse(*meta, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || j.value("cache_format", 0) != kCompileCacheFormatVersion) return std::nullopt;
  Result<CompileOutput> out = CompileOutputFromJson(j);
  if (!out.ok()) return std::nullopt;
  std::error_code ec;
  if (j.value("has_artifact", false)) {
    out->artifact = entry / "artifact";
    if (!std::filesystem::exists(out->artifact, ec)) return std::nullopt;
  } else {
    out->artifact.clear();
  }
  std::filesystem::last_write_time(entry / "meta.json", std::filesystem::file_time_type::clock::now(), ec);
  out->cache_hit = true;
  out->duration_ms = 0;
  out->cache_key = key;
  return std::move(out).value();
}

Result<TempDir> CompileCache::NewStaging() const {
  std::error_code ec;
  std::filesystem::create_directories(dir_ / "tmp", ec);
  if (ec) return Status::Infra("cannot create compile cache dir " + (dir_ / "tmp").string() + ": " + ec.message());
  return TempDir::Create("stage-", dir_ / "tmp");
}

Result<CompileOutput> CompileCache::Commit(TempDir staging, const CompileOutput& output) {
  std::error_code ec;
  const bool has_artifact = std::filesystem::exists(staging.path() / "artifact", ec);
  nlohmann::json meta = CompileOutputToJson(output);
  meta["cache_format"] = kCompileCacheFormatVersion;
  meta["has_artifact"] = has_artifact;
  meta["cache_hit"] = false;
  meta.erase("artifact");
  ASSAY_RETURN_IF_ERROR(WriteFileAtomic(staging.path() / "meta.json", meta.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)));

  const std::filesystem::path entry = EntryDir(output.cache_key);
  std::filesystem::create_directories(entry.parent_path(), ec);
  if (ec) return Status::Infra("cannot create " + entry.parent_path().string() + ": " + ec.message());
  CompileOutput committed = output;
  committed.artifact = has_artifact ? entry / "artifact" : std::filesystem::path();
  if (std::rename(staging.path().c_str(), entry.c_str()) == 0) return committed;
  const int err = errno;
  if (err == EEXIST || err == ENOTEMPTY) {
    // Lost the race: the winner's entry is equivalent (same key). `staging`
    // is removed when it goes out of scope.
    if (std::optional<CompileOutput> winner = Lookup(output.cache_key)) {
      winner->cache_hit = false;
      winner->duration_ms = output.duration_ms;
      return *winner;
    }
  }
  return Status::Infra("cannot commit compile cache entry " + entry.string() + ": " + std::strerror(err));
}

}  // namespace assay

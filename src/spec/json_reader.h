// Internal to spec/: typed reads from a parsed JSON document, each failure a
// Status::Rejected naming the exact JSON path ("args[2].shape[0]"). Keeps the
// spec parser a list of field rules instead of a thicket of type checks.
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace assay::spec_internal {

std::string FieldPath(std::string_view parent, std::string_view key);  // "a.b", or "b" at the top
std::string IndexPath(std::string_view parent, size_t index);          // "a[2]"

// A JSON value of the wrong type: "must be a string, got number".
Status WrongType(const nlohmann::json& v, const std::string& path, std::string_view want);

// Conversions of one value; `path` names it in errors. Integers accept JSON
// integers and integral floats (1e6); doubles accept any number.
Status AsInt(const nlohmann::json& v, const std::string& path, int64_t lo, int64_t hi,
             int64_t* out);
Status AsUint64(const nlohmann::json& v, const std::string& path, uint64_t* out);
Status AsDouble(const nlohmann::json& v, const std::string& path, double* out);
Status AsBool(const nlohmann::json& v, const std::string& path, bool* out);
Status AsString(const nlohmann::json& v, const std::string& path, size_t max_bytes,
                std::string* out);

// Reads fields of one JSON object. Absent keys and explicit nulls both read as
// "not given" and leave the output untouched (it holds the default).
class ObjectReader {
 public:
  // Rejected unless `v` is an object. `v` must outlive the reader.
  static Result<ObjectReader> Make(const nlohmann::json& v, std::string path);

  const std::string& path() const { return path_; }
  std::string PathOf(std::string_view key) const { return FieldPath(path_, key); }
  bool Has(std::string_view key) const { return Find(key) != nullptr; }
  const nlohmann::json* Find(std::string_view key) const;

  // Rejects the first key not in `known`, suggesting the closest known name.
  Status RejectUnknown(std::initializer_list<std::string_view> known) const;
  // Rejects `key` if present: "field 'launch' does not apply to kind 'compile'".
  Status RejectIfPresent(std::string_view key, std::string_view why) const;
  // Rejected("missing required field ...") if absent.
  Status Require(std::string_view key, std::string_view context = {}) const;

  Status Int(std::string_view key, int64_t lo, int64_t hi, int64_t* out) const;
  Status Int(std::string_view key, int lo, int hi, int* out) const;
  Status Double(std::string_view key, double* out) const;
  Status Bool(std::string_view key, bool* out) const;
  Status String(std::string_view key, size_t max_bytes, std::string* out) const;

 private:
  ObjectReader(const nlohmann::json& v, std::string path) : v_(&v), path_(std::move(path)) {}
  const nlohmann::json* v_;
  std::string path_;
};

// Whether the nesting depth of the JSON text (objects and arrays) is at most
// max_depth. Checked before parsing so a hostile document cannot make a later
// recursive walk (dump) run deep.
bool JsonDepthWithin(std::string_view text, int max_depth);
// True for [A-Za-z_][A-Za-z0-9_]*.
bool IsIdentifier(std::string_view s);
// True for 64 hex digits (either case).
bool IsSha256Hex(std::string_view s);

}  // namespace assay::spec_internal

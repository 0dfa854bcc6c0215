#include "spec/json_reader.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace assay::spec_internal {
namespace {

std::string_view TypeName(const nlohmann::json& v) {
  if (v.is_number()) return "number";
  return v.type_name();
}

// Edit distance, for "did you mean" on unknown field names. Keys are short.
size_t Distance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace

std::string FieldPath(std::string_view parent, std::string_view key) {
  if (parent.empty()) return std::string(key);
  std::string p(parent);
  p += '.';
  p += key;
  return p;
}

std::string IndexPath(std::string_view parent, size_t index) {
  return std::string(parent) + "[" + std::to_string(index) + "]";
}

Status WrongType(const nlohmann::json& v, const std::string& path, std::string_view want) {
  return Status::Rejected("'" + path + "' must be " + std::string(want) + ", got " +
                              std::string(TypeName(v)),
                          path);
}

Status AsInt(const nlohmann::json& v, const std::string& path, int64_t lo, int64_t hi,
             int64_t* out) {
  int64_t x = 0;
  if (v.is_number_unsigned()) {
    uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(INT64_MAX)) x = INT64_MAX;  // clamps; fails the range check
    else x = static_cast<int64_t>(u);
  } else if (v.is_number_integer()) {
    x = v.get<int64_t>();
  } else if (v.is_number_float()) {
    double d = v.get<double>();
    if (!(d == std::floor(d)) || !(std::fabs(d) < 9.2e18))
      return Status::Rejected("'" + path + "' must be an integer", path);
    x = static_cast<int64_t>(d);
  } else {
    return WrongType(v, path, "an integer");
  }
  if (x < lo || x > hi)
    return Status::Rejected("'" + path + "' must be in [" + std::to_string(lo) + ", " +
                                std::to_string(hi) + "], got " + std::to_string(x),
                            path);
  *out = x;
  return Status::Ok();
}

Status AsUint64(const nlohmann::json& v, const std::string& path, uint64_t* out) {
  if (v.is_number_unsigned()) {
    *out = v.get<uint64_t>();
    return Status::Ok();
  }
  if (v.is_number_integer()) {  // only negatives land here
    return Status::Rejected("'" + path + "' must not be negative", path);
  }
  return WrongType(v, path, "an unsigned 64-bit integer");
}

Status AsDouble(const nlohmann::json& v, const std::string& path, double* out) {
  if (!v.is_number()) return WrongType(v, path, "a number");
  *out = v.get<double>();
  if (!std::isfinite(*out)) return Status::Rejected("'" + path + "' must be finite", path);
  return Status::Ok();
}

Status AsBool(const nlohmann::json& v, const std::string& path, bool* out) {
  if (!v.is_boolean()) return WrongType(v, path, "true or false");
  *out = v.get<bool>();
  return Status::Ok();
}

Status AsString(const nlohmann::json& v, const std::string& path, size_t max_bytes,
                std::string* out) {
  if (!v.is_string()) return WrongType(v, path, "a string");
  const auto& s = v.get_ref<const std::string&>();
  if (s.size() > max_bytes)
    return Status::Rejected("'" + path + "' is " + std::to_string(s.size()) +
                                " bytes; the limit is " + std::to_string(max_bytes),
                            path);
  *out = s;
  return Status::Ok();
}

Result<ObjectReader> ObjectReader::Make(const nlohmann::json& v, std::string path) {
  if (!v.is_object()) {
    if (path.empty()) return Status::Rejected("the job spec must be a JSON object", "");
    return WrongType(v, path, "an object");
  }
  return ObjectReader(v, std::move(path));
}

const nlohmann::json* ObjectReader::Find(std::string_view key) const {
  auto it = v_->find(key);
  if (it == v_->end() || it->is_null()) return nullptr;
  return &*it;
}

Status ObjectReader::RejectUnknown(std::initializer_list<std::string_view> known) const {
  for (const auto& [key, value] : v_->items()) {
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    std::string msg = "unknown field '" + PathOf(key) + "'";
    std::string_view best;
    size_t best_d = 3;  // suggest only close matches
    for (std::string_view k : known) {
      size_t d = Distance(key, k);
      if (d < best_d) best_d = d, best = k;
    }
    if (!best.empty()) msg += "; did you mean '" + std::string(best) + "'?";
    return Status::Rejected(std::move(msg), PathOf(key));
  }
  return Status::Ok();
}

Status ObjectReader::RejectIfPresent(std::string_view key, std::string_view why) const {
  if (!Has(key)) return Status::Ok();
  return Status::Rejected("field '" + PathOf(key) + "' " + std::string(why), PathOf(key));
}

Status ObjectReader::Require(std::string_view key, std::string_view context) const {
  if (Has(key)) return Status::Ok();
  std::string msg = "missing required field '" + PathOf(key) + "'";
  if (!context.empty()) msg += " (" + std::string(context) + ")";
  return Status::Rejected(std::move(msg), PathOf(key));
}

Status ObjectReader::Int(std::string_view key, int64_t lo, int64_t hi, int64_t* out) const {
  const nlohmann::json* v = Find(key);
  return v ? AsInt(*v, PathOf(key), lo, hi, out) : Status::Ok();
}

Status ObjectReader::Int(std::string_view key, int lo, int hi, int* out) const {
  int64_t x = *out;
  ASSAY_RETURN_IF_ERROR(Int(key, int64_t{lo}, int64_t{hi}, &x));
  *out = static_cast<int>(x);
  return Status::Ok();
}

Status ObjectReader::Double(std::string_view key, double* out) const {
  const nlohmann::json* v = Find(key);
  return v ? AsDouble(*v, PathOf(key), out) : Status::Ok();
}

Status ObjectReader::Bool(std::string_view key, bool* out) const {
  const nlohmann::json* v = Find(key);
  return v ? AsBool(*v, PathOf(key), out) : Status::Ok();
}

Status ObjectReader::String(std::string_view key, size_t max_bytes, std::string* out) const {
  const nlohmann::json* v = Find(key);
  return v ? AsString(*v, PathOf(key), max_bytes, out) : Status::Ok();
}

bool JsonDepthWithin(std::string_view text, int max_depth) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > max_depth) return false;
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return true;
}

bool IsIdentifier(std::string_view s) {
  if (s.empty()) return false;
  auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (!alpha(s[0])) return false;
  return std::all_of(s.begin(), s.end(), [&](char c) { return alpha(c) || (c >= '0' && c <= '9'); });
}

bool IsSha256Hex(std::string_view s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
         });
}

}  // namespace assay::spec_internal

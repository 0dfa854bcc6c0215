// The argument contract: args[], their shapes (integers or expressions over
// integer scalars), scalar values, input initialisers and tolerances.
#include <algorithm>
#include <cmath>
#include <set>

#include "spec/expr.h"
#include "spec/job_spec_parse.h"

namespace assay::spec_internal {
namespace {

constexpr double kMaxExactInt = 9007199254740992.0;  // 2^53: doubles hold integers exactly below

// The representable range of an integer dtype, as the spec sees it.
void IntRange(DType t, double* lo, double* hi) {
  switch (t) {
    case DType::kI32: *lo = INT32_MIN, *hi = INT32_MAX; return;
    case DType::kI16: *lo = INT16_MIN, *hi = INT16_MAX; return;
    case DType::kI8: *lo = INT8_MIN, *hi = INT8_MAX; return;
    case DType::kU8: *lo = 0, *hi = 255; return;
    case DType::kBool: *lo = 0, *hi = 1; return;
    case DType::kF16: *lo = -65504, *hi = 65504; return;
    case DType::kF32: case DType::kBF16: *lo = -3.4e38, *hi = 3.4e38; return;
    case DType::kF64: *lo = -1.79e308, *hi = 1.79e308; return;
    default: *lo = -kMaxExactInt, *hi = kMaxExactInt; return;  // i64: exact in a double
  }
}

// A value of `dtype` given in JSON (bool dtype also takes true/false).
Status ReadValue(const nlohmann::json& v, const std::string& path, DType dtype, double* out) {
  if (dtype == DType::kBool && v.is_boolean()) {
    *out = v.get<bool>() ? 1 : 0;
    return Status::Ok();
  }
  ASSAY_RETURN_IF_ERROR(AsDouble(v, path, out));
  double lo, hi;
  IntRange(dtype, &lo, &hi);
  if (!IsFloatDType(dtype) && *out != std::floor(*out))
    return Status::Rejected("'" + path + "' must be an integer for dtype " +
                                std::string(DTypeName(dtype)),
                            path);
  if (*out < lo || *out > hi)
    return Status::Rejected("'" + path + "' is out of range for dtype " +
                                std::string(DTypeName(dtype)),
                            path);
  return Status::Ok();
}

InitSpec DefaultInit(DType t) {
  InitSpec i;
  if (IsFloatDType(t)) {
    i.kind = InitSpec::Kind::kUniform, i.a = -1, i.b = 1;
    return i;
  }
  double lo, hi;
  IntRange(t, &lo, &hi);
  i.kind = InitSpec::Kind::kInt, i.a = std::max(lo, -100.0), i.b = std::min(hi, 100.0);
  return i;
}

Status ParseInit(const nlohmann::json& v, const std::string& path, DType dtype, InitSpec* out) {
  auto r = ObjectReader::Make(v, path);
  if (!r.ok()) return r.status();
  ASSAY_RETURN_IF_ERROR(r->Require("kind"));
  std::string kind;
  ASSAY_RETURN_IF_ERROR(r->String("kind", 32, &kind));
  std::string kpath = r->PathOf("kind"), dt(DTypeName(dtype));
  *out = InitSpec();
  auto number = [&](std::string_view key, double* dst) -> Status {
    const nlohmann::json* x = r->Find(key);
    return x ? ReadValue(*x, r->PathOf(key), dtype, dst) : Status::Ok();
  };
  if (kind == "uniform" || kind == "normal") {
    if (!IsFloatDType(dtype))
      return Status::Rejected("init '" + kind + "' needs a float dtype; for " + dt +
                                  " use 'int' or 'const'",
                              kpath);
    bool uniform = kind == "uniform";
    const char* ka = uniform ? "low" : "mean";
    const char* kb = uniform ? "high" : "std";
    ASSAY_RETURN_IF_ERROR(r->RejectUnknown({"kind", ka, kb}));
    out->kind = uniform ? InitSpec::Kind::kUniform : InitSpec::Kind::kNormal;
    out->a = uniform ? -1 : 0;
    out->b = 1;
    ASSAY_RETURN_IF_ERROR(number(ka, &out->a));
    ASSAY_RETURN_IF_ERROR(number(kb, &out->b));
    if (uniform && !(out->a < out->b))
      return Status::Rejected("uniform needs low < high", r->PathOf("high"));
    if (!uniform && !(out->b > 0)) return Status::Rejected("normal needs std > 0", r->PathOf("std"));
  } else if (kind == "int") {
    ASSAY_RETURN_IF_ERROR(r->RejectUnknown({"kind", "low", "high"}));
    double lo, hi;
    IntRange(dtype, &lo, &hi);
    out->kind = InitSpec::Kind::kInt, out->a = std::max(lo, -100.0), out->b = std::min(hi, 100.0);
    for (const char* key : {"low", "high"}) {
      const nlohmann::json* x = r->Find(key);
      if (!x) continue;
      double* dst = key[0] == 'l' ? &out->a : &out->b;
      ASSAY_RETURN_IF_ERROR(ReadValue(*x, r->PathOf(key), dtype, dst));
      if (*dst != std::floor(*dst) || std::fabs(*dst) > kMaxExactInt)
        return Status::Rejected("'" + r->PathOf(key) + "' must be an integer within +-2^53",
                                r->PathOf(key));
    }
    if (out->a > out->b) return Status::Rejected("int needs low <= high", r->PathOf("high"));
  } else if (kind == "const") {
    ASSAY_RETURN_IF_ERROR(r->RejectUnknown({"kind", "value"}));
    ASSAY_RETURN_IF_ERROR(r->Require("value"));
    out->kind = InitSpec::Kind::kConst;
    ASSAY_RETURN_IF_ERROR(number("value", &out->a));
  } else if (kind == "blob") {
    out->kind = InitSpec::Kind::kBlob;
    nlohmann::json rest = v;
    rest.erase("kind");
    ASSAY_RETURN_IF_ERROR(ParseBlobRef(rest, path, "hash", &out->blob));
  } else {
    return Status::Rejected("unknown init kind '" + kind +
                                "' (known: uniform, normal, int, const, blob)",
                            kpath);
  }
  return Status::Ok();
}

Status ParseTolerance(const nlohmann::json& v, const std::string& path, DType dtype,
                      Tolerance* out) {
  auto r = ObjectReader::Make(v, path);
  if (!r.ok()) return r.status();
  ASSAY_RETURN_IF_ERROR(r->RejectUnknown({"atol", "rtol"}));
  *out = DefaultTolerance(dtype);
  for (const char* key : {"atol", "rtol"}) {
    double* dst = key[0] == 'a' ? &out->atol : &out->rtol;
    ASSAY_RETURN_IF_ERROR(r->Double(key, dst));
    if (*dst < 0) return Status::Rejected("tolerances are >= 0", r->PathOf(key));
  }
  return Status::Ok();
}

// First pass over one arg: everything but shape expressions.
Status ParseArg(const nlohmann::json& v, const std::string& path, const SpecLimits& limits,
                ArgSpec* out) {
  auto r = ObjectReader::Make(v, path);
  if (!r.ok()) return r.status();
  ASSAY_RETURN_IF_ERROR(
      r->RejectUnknown({"name", "role", "dtype", "shape", "value", "init", "tolerance"}));
  ASSAY_RETURN_IF_ERROR(r->Require("name"));
  ASSAY_RETURN_IF_ERROR(r->String("name", 64, &out->name));
  if (!IsIdentifier(out->name))
    return Status::Rejected("an argument name is a C identifier, got '" + out->name + "'",
                            r->PathOf("name"));
  ASSAY_RETURN_IF_ERROR(r->Require("role"));
  std::string role;
  ASSAY_RETURN_IF_ERROR(r->String("role", 16, &role));
  if (role == "in") out->role = ArgRole::kIn;
  else if (role == "out") out->role = ArgRole::kOut;
  else if (role == "inout") out->role = ArgRole::kInOut;
  else if (role == "scalar") out->role = ArgRole::kScalar;
  else
    return Status::Rejected("role must be in, out, inout or scalar, got '" + role + "'",
                            r->PathOf("role"));
  ASSAY_RETURN_IF_ERROR(r->Require("dtype"));
  std::string dtype;
  ASSAY_RETURN_IF_ERROR(r->String("dtype", 16, &dtype));
  auto dt = DTypeFromName(dtype);
  if (!dt)
    return Status::Rejected("unknown dtype '" + dtype +
                                "' (known: f64 f32 f16 bf16 i64 i32 i16 i8 u8 bool)",
                            r->PathOf("dtype"));
  out->dtype = *dt;

  if (out->role == ArgRole::kScalar) {
    for (const char* key : {"shape", "init", "tolerance"})
      ASSAY_RETURN_IF_ERROR(r->RejectIfPresent(key, "does not apply to a scalar argument"));
    ASSAY_RETURN_IF_ERROR(r->Require("value", "a scalar argument needs a value"));
    const nlohmann::json& value = *r->Find("value");
    if (!IsFloatDType(*dt) && !value.is_boolean()) {
      // Integers are read exactly (a double would round int64 values above 2^53).
      double lo, hi;
      IntRange(*dt, &lo, &hi);
      int64_t x = 0;
      ASSAY_RETURN_IF_ERROR(AsInt(value, r->PathOf("value"),
                                  *dt == DType::kI64 ? INT64_MIN : static_cast<int64_t>(lo),
                                  *dt == DType::kI64 ? INT64_MAX : static_cast<int64_t>(hi), &x));
      out->value = x;
      return Status::Ok();
    }
    double x = 0;
    ASSAY_RETURN_IF_ERROR(ReadValue(value, r->PathOf("value"), *dt, &x));
    if (IsFloatDType(*dt)) out->value = x;
    else out->value = static_cast<int64_t>(x);
    return Status::Ok();
  }
  ASSAY_RETURN_IF_ERROR(r->RejectIfPresent("value", "applies to scalar arguments only"));
  ASSAY_RETURN_IF_ERROR(r->Require("shape", "a tensor argument needs a shape"));
  const nlohmann::json& shape = *r->Find("shape");
  if (!shape.is_array() || shape.empty() || shape.size() > limits.max_dims)
    return Status::Rejected("shape must be an array of 1 to " + std::to_string(limits.max_dims) +
                                " dimensions",
                            r->PathOf("shape"));
  if (out->role == ArgRole::kOut) {
    ASSAY_RETURN_IF_ERROR(r->RejectIfPresent(
        "init", "does not apply to an out argument (outputs are poisoned before each run)"));
  } else {
    out->init = DefaultInit(*dt);
    if (const auto* i = r->Find("init"))
      ASSAY_RETURN_IF_ERROR(ParseInit(*i, r->PathOf("init"), *dt, &*out->init));
  }
  if (out->role == ArgRole::kIn) {
    ASSAY_RETURN_IF_ERROR(r->RejectIfPresent("tolerance", "applies to out and inout arguments"));
  } else if (const auto* t = r->Find("tolerance")) {
    Tolerance tol;
    ASSAY_RETURN_IF_ERROR(ParseTolerance(*t, r->PathOf("tolerance"), *dt, &tol));
    out->tolerance = tol;
  }
  return Status::Ok();
}

}  // namespace

Vars IntegerScalars(const std::vector<ArgSpec>& args) {
  Vars vars;
  for (const ArgSpec& a : args)
    if (a.role == ArgRole::kScalar && !IsFloatDType(a.dtype) && a.dtype != DType::kBool)
      vars[a.name] = std::get<int64_t>(a.value);
  return vars;
}

Status ParseIntOrExpr(const nlohmann::json& v, const std::string& path, const Vars& vars,
                      IntOrExpr* out, int64_t* value) {
  if (v.is_number()) {
    ASSAY_RETURN_IF_ERROR(AsInt(v, path, INT64_MIN, INT64_MAX, value));
    *out = *value;
    return Status::Ok();
  }
  if (!v.is_string()) return WrongType(v, path, "an integer or an expression string");
  const std::string& text = v.get_ref<const std::string&>();
  auto r = EvalExpr(text, vars);
  if (!r.ok()) {
    std::string msg = "'" + path + "': " + r.status().message();
    if (msg.find("unknown name") != std::string::npos) {
      msg += vars.empty() ? " (there are no integer scalar args)" : " (integer scalar args:";
      for (const auto& [name, x] : vars) msg += " " + name;
      if (!vars.empty()) msg += ")";
    }
    return Status::Rejected(std::move(msg), path);
  }
  *out = text;
  *value = *r;
  return Status::Ok();
}

Status ParseBlobRef(const nlohmann::json& v, const std::string& path, std::string_view hash_key,
                    BlobRef* out) {
  auto r = ObjectReader::Make(v, path);
  if (!r.ok()) return r.status();
  ASSAY_RETURN_IF_ERROR(r->RejectUnknown({hash_key, "format", "tensor"}));
  ASSAY_RETURN_IF_ERROR(r->Require(hash_key));
  ASSAY_RETURN_IF_ERROR(r->String(hash_key, 64, &out->hash));
  if (!IsSha256Hex(out->hash))
    return Status::Rejected("a blob is named by its SHA-256: 64 hex digits", r->PathOf(hash_key));
  std::transform(out->hash.begin(), out->hash.end(), out->hash.begin(),
                 [](char c) { return c >= 'A' && c <= 'F' ? char(c - 'A' + 'a') : c; });
  ASSAY_RETURN_IF_ERROR(r->String("format", 16, &out->format));
  if (out->format != "npy" && out->format != "safetensors" && out->format != "raw")
    return Status::Rejected("format must be npy, safetensors or raw", r->PathOf("format"));
  if (out->format != "safetensors")
    ASSAY_RETURN_IF_ERROR(r->RejectIfPresent("tensor", "applies to format 'safetensors' only"));
  ASSAY_RETURN_IF_ERROR(r->String("tensor", 256, &out->tensor));
  return Status::Ok();
}

Status ParseArgs(const nlohmann::json& v, const std::string& path, const SpecLimits& limits,
                 std::vector<ArgSpec>* out) {
  if (!v.is_array()) return WrongType(v, path, "an array");
  if (v.size() > limits.max_args)
    return Status::Rejected("at most " + std::to_string(limits.max_args) + " arguments", path);
  for (size_t i = 0; i < v.size(); ++i) {
    std::string p = IndexPath(path, i);
    ArgSpec arg;
    ASSAY_RETURN_IF_ERROR(ParseArg(v[i], p, limits, &arg));
    for (size_t j = 0; j < out->size(); ++j)
      if ((*out)[j].name == arg.name)
        return Status::Rejected("duplicate argument name '" + arg.name + "' (also " +
                                    IndexPath(path, j) + ")",
                                p + ".name");
    out->push_back(std::move(arg));
  }
  // Second pass: shapes, now that every scalar is known.
  const Vars vars = IntegerScalars(*out);
  int64_t total_bytes = 0;
  for (size_t i = 0; i < out->size(); ++i) {
    ArgSpec& arg = (*out)[i];
    if (!arg.is_tensor()) continue;
    std::string spath = IndexPath(path, i) + ".shape";
    const nlohmann::json& shape = v[i]["shape"];
    int64_t elements = 1;
    for (size_t d = 0; d < shape.size(); ++d) {
      std::string dpath = IndexPath(spath, d);
      IntOrExpr dim;
      int64_t n = 0;
      ASSAY_RETURN_IF_ERROR(ParseIntOrExpr(shape[d], dpath, vars, &dim, &n));
      if (n < 1)
        return Status::Rejected("'" + dpath + "' is " + std::to_string(n) + "; sizes are >= 1",
                                dpath);
      if (__builtin_mul_overflow(elements, n, &elements) ||
          elements > limits.max_elements_per_tensor)
        return Status::Rejected("'" + arg.name + "' has more than " +
                                    std::to_string(limits.max_elements_per_tensor) + " elements",
                                spath);
      arg.shape.push_back(std::move(dim));
    }
    total_bytes += elements * DTypeSize(arg.dtype);  // both bounded: cannot overflow
    if (total_bytes > limits.max_total_bytes)
      return Status::Rejected("the tensor arguments need more than " +
                                  std::to_string(limits.max_total_bytes) + " bytes in all",
                              spath);
  }
  return Status::Ok();
}

}  // namespace assay::spec_internal

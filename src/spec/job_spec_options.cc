// The option blocks of a job spec: correctness, timing, profile, program.
#include <algorithm>

#include "spec/job_spec_parse.h"

namespace assay {

Tolerance DefaultTolerance(DType t) {
  switch (t) {
    case DType::kF64: return {1e-8, 1e-7};
    case DType::kF32: return {1e-5, 1e-4};
    case DType::kF16: return {1e-3, 1e-2};
    case DType::kBF16: return {1e-2, 2e-2};
    default: return {0, 0};  // integers and bool compare exactly
  }
}

std::string_view TimingModeName(TimingSpec::Mode m) {
  switch (m) {
    case TimingSpec::Mode::kCold: return "cold";
    case TimingSpec::Mode::kHot: return "hot";
    case TimingSpec::Mode::kGraph: return "graph";
  }
  return "cold";
}

std::string_view InitKindName(InitSpec::Kind k) {
  switch (k) {
    case InitSpec::Kind::kUniform: return "uniform";
    case InitSpec::Kind::kNormal: return "normal";
    case InitSpec::Kind::kInt: return "int";
    case InitSpec::Kind::kConst: return "const";
    case InitSpec::Kind::kBlob: return "blob";
  }
  return "uniform";
}

namespace spec_internal {
namespace {

// atol / rtol: one number for every dtype, or {dtype: number}.
Status ParseToleranceMap(const ObjectReader& r, std::string_view key, CorrectnessSpec* out) {
  const nlohmann::json* v = r.Find(key);
  if (!v) return Status::Ok();
  std::string path = r.PathOf(key);
  bool is_atol = key == "atol";
  auto set = [&](DType t, double x) { (is_atol ? out->tolerance[t].atol : out->tolerance[t].rtol) = x; };
  if (v->is_number()) {
    double x = 0;
    ASSAY_RETURN_IF_ERROR(AsDouble(*v, path, &x));
    if (x < 0) return Status::Rejected("tolerances are >= 0", path);
    for (auto& [t, tol] : out->tolerance) set(t, x);
    return Status::Ok();
  }
  if (!v->is_object()) return WrongType(*v, path, "a number or an object {dtype: number}");
  for (const auto& [name, x] : v->items()) {
    std::string p = FieldPath(path, name);
    auto t = DTypeFromName(name);
    if (!t) return Status::Rejected("unknown dtype '" + name + "'", p);
    double d = 0;
    ASSAY_RETURN_IF_ERROR(AsDouble(x, p, &d));
    if (d < 0) return Status::Rejected("tolerances are >= 0", p);
    set(*t, d);
  }
  return Status::Ok();
}

bool IsSectionName(std::string_view s) {
  return !s.empty() && s.size() <= 64 && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

// Variables the worker sets or that would let a program escape measurement or
// the sandbox (preloads, the CUPTI injection library, device selection).
bool IsReservedEnv(std::string_view name) {
  for (std::string_view p : {"LD_", "ASSAY_", "NVIDIA_", "CUDA_INJECTION"})
    if (name.substr(0, p.size()) == p) return true;
  for (std::string_view n : {"CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "PATH", "HOME", "TMPDIR"})
    if (name == n) return true;
  return false;
}

}  // namespace

Status ParseCorrectness(const nlohmann::json& v, const std::string& path,
                        const SpecLimits& limits, CorrectnessSpec* out) {
  auto r = ObjectReader::Make(v, path);
  if (!r.ok()) return r.status();
  ASSAY_RETURN_IF_ERROR(r->RejectUnknown(
      {"trials", "atol", "rtol", "seed", "check_after_timing", "nan_equal"}));
  ASSAY_RETURN_IF_ERROR(r->Int("trials", 1, limits.max_trials, &out->trials));
  for (DType t : {DType::kF64, DType::kF32, DType::kF16, DType::kBF16, DType::kI64, DType::kI32,
                  DType::kI16, DType::kI8, DType::kU8, DType::kBool})
    out->tolerance[t] = DefaultTolerance(t);
  ASSAY_RETURN_IF_ERROR(ParseToleranceMap(*r, "atol", out));
  ASSAY_RETURN_IF_ERROR(ParseToleranceMap(*r, "rtol", out));
  if (const auto* s = r->Find("seed")) {
    uint64_t seed = 0;
    ASSAY_RETURN_IF_ERROR(AsUint64(*s, r->PathOf("seed"), &seed));
    out->seed = seed;
  }
  ASSAY_RETURN_IF_ERROR(r->Bool("check_after_timing", &out->check_after_timing));
  ASSAY_RETURN_IF_ERROR(r->Bool("nan_equal", &out->nan_equal));
  return Status::Ok();
}

Status ParseTiming(const nlohmann::json& v, const std::string& path, const SpecLimits& limits,
                   TimingSpec* out) {
  auto r = ObjectReader::Make(v, path);
  if (!r.ok()) return r.status();
  ASSAY_RETURN_IF_ERROR(r->RejectUnknown({"enabled", "mode", "min_samples", "max_samples",
                                          "noise_target", "time_budget_ms", "warmup_ms", "flops",
                                          "bytes"}));
  ASSAY_RETURN_IF_ERROR(r->Bool("enabled", &out->enabled));
  std::string mode(TimingModeName(out->mode));
  ASSAY_RETURN_IF_ERROR(r->String("mode", 16, &mode));
  if (mode == "cold") out->mode = TimingSpec::Mode::kCold;
  else if (mode == "hot") out->mode = TimingSpec::Mode::kHot;
  else if (mode == "graph") out->mode = TimingSpec::Mode::kGraph;
  else return Status::Rejected("mode must be cold, hot or graph", r->PathOf("mode"));
  ASSAY_RETURN_IF_ERROR(r->Int("min_samples", 1, limits.max_samples, &out->min_samples));
  ASSAY_RETURN_IF_ERROR(r->Int("max_samples", 1, limits.max_samples, &out->max_samples));
  if (out->max_samples < out->min_samples)
    return Status::Rejected("max_samples must be >= min_samples (" +
                                std::to_string(out->min_samples) + ")",
                            r->PathOf("max_samples"));
  ASSAY_RETURN_IF_ERROR(r->Double("noise_target", &out->noise_target));
  if (!(out->noise_target > 0 && out->noise_target <= 1))
    return Status::Rejected("noise_target is a fraction in (0, 1]", r->PathOf("noise_target"));
  ASSAY_RETURN_IF_ERROR(
      r->Int("time_budget_ms", int64_t{1}, limits.max_time_budget_ms, &out->time_budget_ms));
  ASSAY_RETURN_IF_ERROR(r->Int("warmup_ms", int64_t{0}, int64_t{60'000}, &out->warmup_ms));
  for (const char* key : {"flops", "bytes"}) {
    if (!r->Has(key)) continue;
    double x = 0;
    ASSAY_RETURN_IF_ERROR(r->Double(key, &x));
    if (x < 0) return Status::Rejected("counts are >= 0", r->PathOf(key));
    (key[0] == 'f' ? out->flops : out->bytes) = x;
  }
  return Status::Ok();
}

Status ParseProfile(const nlohmann::json& v, const std::string& path, const SpecLimits& limits,
                    ProfileSpec* out) {
  auto r = ObjectReader::Make(v, path);
  if (!r.ok()) return r.status();
  ASSAY_RETURN_IF_ERROR(r->RejectUnknown({"ncu", "sections"}));
  ASSAY_RETURN_IF_ERROR(r->Bool("ncu", &out->ncu));
  if (const auto* s = r->Find("sections")) {
    std::string spath = r->PathOf("sections");
    if (!out->ncu && s->is_array() && !s->empty())
      return Status::Rejected("sections need \"ncu\": true", spath);
    if (!s->is_array()) return WrongType(*s, spath, "an array of section names");
    if (s->size() > limits.max_profile_sections)
      return Status::Rejected("at most " + std::to_string(limits.max_profile_sections) +
                                  " sections",
                              spath);
    for (size_t i = 0; i < s->size(); ++i) {
      std::string name, p = IndexPath(spath, i);
      ASSAY_RETURN_IF_ERROR(AsString((*s)[i], p, 64, &name));
      if (!IsSectionName(name))
        return Status::Rejected("a section name is [A-Za-z0-9_]+ (e.g. SpeedOfLight)", p);
      out->sections.push_back(std::move(name));
    }
  }
  return Status::Ok();
}

Status ParseProgram(const nlohmann::json& v, const std::string& path, const SpecLimits& limits,
                    ProgramSpec* out) {
  auto r = ObjectReader::Make(v, path);
  if (!r.ok()) return r.status();
  ASSAY_RETURN_IF_ERROR(r->RejectUnknown(
      {"argv", "stdin", "stdout_limit_bytes", "stderr_limit_bytes", "env"}));
  auto no_nul = [](const std::string& s, const std::string& p) {
    return s.find('\0') == std::string::npos ? Status::Ok()
                                              : Status::Rejected("contains a NUL byte", p);
  };
  if (const auto* a = r->Find("argv")) {
    std::string apath = r->PathOf("argv");
    if (!a->is_array()) return WrongType(*a, apath, "an array of strings");
    if (a->size() > limits.max_argv)
      return Status::Rejected("at most " + std::to_string(limits.max_argv) + " arguments", apath);
    for (size_t i = 0; i < a->size(); ++i) {
      std::string s, p = IndexPath(apath, i);
      ASSAY_RETURN_IF_ERROR(AsString((*a)[i], p, limits.max_arg_bytes, &s));
      ASSAY_RETURN_IF_ERROR(no_nul(s, p));
      out->argv.push_back(std::move(s));
    }
  }
  ASSAY_RETURN_IF_ERROR(r->String("stdin", limits.max_stdin_bytes, &out->stdin_text));
  ASSAY_RETURN_IF_ERROR(
      r->Int("stdout_limit_bytes", int64_t{0}, limits.max_output_limit_bytes, &out->stdout_limit_bytes));
  ASSAY_RETURN_IF_ERROR(
      r->Int("stderr_limit_bytes", int64_t{0}, limits.max_output_limit_bytes, &out->stderr_limit_bytes));
  if (const auto* e = r->Find("env")) {
    std::string epath = r->PathOf("env");
    if (!e->is_object()) return WrongType(*e, epath, "an object {NAME: value}");
    if (e->size() > limits.max_env)
      return Status::Rejected("at most " + std::to_string(limits.max_env) + " variables", epath);
    for (const auto& [name, value] : e->items()) {
      std::string p = FieldPath(epath, name);
      if (!IsIdentifier(name) || name.size() > 128)
        return Status::Rejected("a variable name is [A-Za-z_][A-Za-z0-9_]*", p);
      if (IsReservedEnv(name))
        return Status::Rejected("'" + name + "' is set by the worker and cannot be overridden", p);
      std::string s;
      ASSAY_RETURN_IF_ERROR(AsString(value, p, limits.max_env_value_bytes, &s));
      ASSAY_RETURN_IF_ERROR(no_nul(s, p));
      out->env[name] = std::move(s);
    }
  }
  return Status::Ok();
}

}  // namespace spec_internal
}  // namespace assay

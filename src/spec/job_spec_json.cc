// ToJson: the normalized job spec. Every default is written out and only the
// fields that apply to the kind appear, so a stored spec says exactly what
// ran, and ParseJobSpec(ToJson(s).dump()) == s.
#include <nlohmann/json.hpp>

#include "spec/base64.h"
#include "spec/job_spec.h"
#include "spec/job_spec_parse.h"

namespace assay {
namespace si = spec_internal;
using nlohmann::json;

namespace {

json SourceJson(const SourceSpec& s) {
  json j = json::object();
  switch (s.form) {
    case SourceSpec::Form::kText: j["text"] = s.data; break;
    case SourceSpec::Form::kBase64: j["base64"] = Base64Encode(s.data); break;
    case SourceSpec::Form::kBlob: j["blob"] = s.blob; break;
  }
  j["filename"] = s.filename;
  return j;
}

json InitJson(const InitSpec& i, DType dtype) {
  json j = {{"kind", InitKindName(i.kind)}};
  auto num = [&](double x) -> json {
    if (IsFloatDType(dtype)) return x;
    return static_cast<int64_t>(x);
  };
  switch (i.kind) {
    case InitSpec::Kind::kUniform: j["low"] = i.a, j["high"] = i.b; break;
    case InitSpec::Kind::kNormal: j["mean"] = i.a, j["std"] = i.b; break;
    case InitSpec::Kind::kInt:
      j["low"] = static_cast<int64_t>(i.a), j["high"] = static_cast<int64_t>(i.b);
      break;
    case InitSpec::Kind::kConst: j["value"] = num(i.a); break;
    case InitSpec::Kind::kBlob: j.update(si::BlobRefJson(i.blob, "hash")); break;
  }
  return j;
}

json ArgJson(const ArgSpec& a) {
  json j = {{"name", a.name}, {"role", ArgRoleName(a.role)}, {"dtype", DTypeName(a.dtype)}};
  if (!a.is_tensor()) {
    if (const auto* i = std::get_if<int64_t>(&a.value)) {
      if (a.dtype == DType::kBool) j["value"] = *i != 0;
      else j["value"] = *i;
    } else {
      j["value"] = std::get<double>(a.value);
    }
    return j;
  }
  json shape = json::array();
  for (const IntOrExpr& d : a.shape) shape.push_back(si::IntOrExprJson(d));
  j["shape"] = std::move(shape);
  if (a.init) j["init"] = InitJson(*a.init, a.dtype);
  if (a.tolerance) j["tolerance"] = {{"atol", a.tolerance->atol}, {"rtol", a.tolerance->rtol}};
  return j;
}

json CorrectnessJson(const CorrectnessSpec& c) {
  json atol = json::object(), rtol = json::object();
  for (const auto& [t, tol] : c.tolerance) {
    atol[std::string(DTypeName(t))] = tol.atol;
    rtol[std::string(DTypeName(t))] = tol.rtol;
  }
  json j = {{"trials", c.trials},
            {"atol", std::move(atol)},
            {"rtol", std::move(rtol)},
            {"check_after_timing", c.check_after_timing},
            {"nan_equal", c.nan_equal}};
  if (c.seed) j["seed"] = *c.seed;
  return j;
}

json TimingJson(const TimingSpec& t) {
  json j = {{"enabled", t.enabled},
            {"mode", TimingModeName(t.mode)},
            {"min_samples", t.min_samples},
            {"max_samples", t.max_samples},
            {"noise_target", t.noise_target},
            {"time_budget_ms", t.time_budget_ms},
            {"warmup_ms", t.warmup_ms}};
  if (t.flops) j["flops"] = *t.flops;
  if (t.bytes) j["bytes"] = *t.bytes;
  return j;
}

json ProgramJson(const ProgramSpec& p) {
  return {{"argv", p.argv},
          {"stdin", p.stdin_text},
          {"stdout_limit_bytes", p.stdout_limit_bytes},
          {"stderr_limit_bytes", p.stderr_limit_bytes},
          {"env", p.env}};
}

}  // namespace

namespace spec_internal {

json IntOrExprJson(const IntOrExpr& v) {
  if (const auto* i = std::get_if<int64_t>(&v)) return *i;
  return std::get<std::string>(v);
}

json BlobRefJson(const BlobRef& b, std::string_view hash_key) {
  json j = {{std::string(hash_key), b.hash}, {"format", b.format}};
  if (!b.tensor.empty()) j["tensor"] = b.tensor;
  return j;
}

json KernelJson(const KernelSpec& k) {
  json j = {{"kind", JobKindName(k.kind)}};
  if (k.kind != JobKind::kKernelbench) j["source"] = SourceJson(k.source);
  if (k.compile) {
    j["compile"] = {{"compiler", k.compile->compiler},
                    {"flags", k.compile->flags},
                    {"ptx", k.compile->ptx},
                    {"sass", k.compile->sass}};
    if (!k.compile->arch.empty()) j["compile"]["arch"] = k.compile->arch;
  }
  if (!k.entry.empty()) j["entry"] = k.entry;
  if (k.launch) {
    json grid = json::array(), block = json::array();
    for (int i = 0; i < 3; ++i) {
      grid.push_back(IntOrExprJson(k.launch->grid[i]));
      block.push_back(IntOrExprJson(k.launch->block[i]));
    }
    j["launch"] = {{"grid", std::move(grid)},
                   {"block", std::move(block)},
                   {"shared_mem_bytes", IntOrExprJson(k.launch->shared_mem_bytes)}};
  }
  return j;
}

}  // namespace spec_internal

json ToJson(const JobSpec& s) {
  json j = si::KernelJson(s);
  j["schema_version"] = s.schema_version;
  if (!s.name.empty()) j["name"] = s.name;
  j["timeout_s"] = s.timeout_s;
  if (!s.gpu_type.empty()) j["gpu"] = {{"type", s.gpu_type}};
  if (si::HasArgs(s.kind)) {
    json args = json::array();
    for (const ArgSpec& a : s.args) args.push_back(ArgJson(a));
    j["args"] = std::move(args);
    j["outputs"] = s.outputs;
  }
  if (s.reference) {
    if (s.reference->kernel) {
      j["reference"] = si::KernelJson(*s.reference->kernel);
    } else {
      json expected = json::object();
      for (const auto& [name, b] : s.reference->expected) expected[name] = si::BlobRefJson(b, "blob");
      j["reference"] = {{"expected", std::move(expected)}};
    }
  }
  if (s.correctness) j["correctness"] = CorrectnessJson(*s.correctness);
  if (s.timing) j["timing"] = TimingJson(*s.timing);
  if (s.profile) j["profile"] = {{"ncu", s.profile->ncu}, {"sections", s.profile->sections}};
  if (s.program) j["program"] = ProgramJson(*s.program);
  if (s.problem) j["problem"] = SourceJson(*s.problem);
  if (s.candidate) j["candidate"] = SourceJson(*s.candidate);
  if (s.kind == JobKind::kKernelbench) j["num_trials"] = s.num_trials;
  return j;
}

}  // namespace assay

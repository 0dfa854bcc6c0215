// ParseJobSpec: the top level, the kernel fields (source, compile, entry,
// launch) and the reference. Args and the option blocks live in
// job_spec_args.cc and job_spec_options.cc; ToJson in job_spec_json.cc.
#include "spec/job_spec.h"

#include <algorithm>
#include <array>
#include <utility>

#include <nlohmann/json.hpp>

#include "spec/base64.h"
#include "spec/compile_flags.h"
#include "spec/expr.h"
#include "spec/job_spec_parse.h"

namespace assay {
namespace si = spec_internal;

namespace {
constexpr std::array<std::pair<DType, std::string_view>, 10> kDTypes = {{
    {DType::kF64, "f64"}, {DType::kF32, "f32"}, {DType::kF16, "f16"}, {DType::kBF16, "bf16"},
    {DType::kI64, "i64"}, {DType::kI32, "i32"}, {DType::kI16, "i16"}, {DType::kI8, "i8"},
    {DType::kU8, "u8"},   {DType::kBool, "bool"},
}};

std::string KindContext(JobKind k) { return "kind '" + std::string(JobKindName(k)) + "'"; }

std::string DefaultFilename(JobKind k) {
  switch (k) {
    case JobKind::kCubin: return "kernel.cubin";
    case JobKind::kPtx: return "kernel.ptx";
    case JobKind::kFatbin: return "kernel.fatbin";
    case JobKind::kTriton:
    case JobKind::kTorch:
    case JobKind::kTorchCuda:
    case JobKind::kKernelbench: return "kernel.py";
    default: return "kernel.cu";
  }
}

Status ParseKind(const si::ObjectReader& r, JobKind* out) {
  ASSAY_RETURN_IF_ERROR(r.Require("kind"));
  std::string name;
  ASSAY_RETURN_IF_ERROR(r.String("kind", 64, &name));
  auto k = JobKindFromName(name);
  if (!k)
    return Status::Rejected("unknown kind '" + name +
                                "' (known: compile, cuda, cubin, ptx, fatbin, cuda_program, "
                                "triton, torch, torch_cuda, kernelbench)",
                            r.PathOf("kind"));
  *out = *k;
  return Status::Ok();
}

Status ParseCompile(const nlohmann::json& v, const std::string& path, JobKind kind,
                    const SpecLimits& limits, CompileSpec* out) {
  auto r = si::ObjectReader::Make(v, path);
  if (!r.ok()) return r.status();
  ASSAY_RETURN_IF_ERROR(r->RejectUnknown({"compiler", "arch", "flags", "ptx", "sass"}));
  if (kind == JobKind::kCudaProgram) out->compiler = "nvcc";
  ASSAY_RETURN_IF_ERROR(r->String("compiler", 16, &out->compiler));
  if (out->compiler != "nvrtc" && out->compiler != "nvcc")
    return Status::Rejected("compiler must be 'nvrtc' or 'nvcc', got '" + out->compiler + "'",
                            r->PathOf("compiler"));
  if (kind == JobKind::kCudaProgram && out->compiler != "nvcc")
    return Status::Rejected("kind 'cuda_program' is always built with nvcc", r->PathOf("compiler"));
  ASSAY_RETURN_IF_ERROR(r->String("arch", 16, &out->arch));
  if (r->Has("arch")) {
    // sm_XY or sm_XYZ, optionally with the arch-specific 'a' or family 'f' suffix.
    const std::string& a = out->arch;
    size_t digits = 0;
    while (3 + digits < a.size() && a[3 + digits] >= '0' && a[3 + digits] <= '9') ++digits;
    size_t rest = a.size() - 3 - digits;
    bool good = a.rfind("sm_", 0) == 0 && (digits == 2 || digits == 3) && a[3] != '0' &&
                (rest == 0 || (rest == 1 && (a.back() == 'a' || a.back() == 'f')));
    if (!good)
      return Status::Rejected("arch must look like 'sm_90' or 'sm_90a', got '" + a + "'",
                              r->PathOf("arch"));
  }
  if (const auto* f = r->Find("flags")) {
    std::string fpath = r->PathOf("flags");
    if (!f->is_array()) return si::WrongType(*f, fpath, "an array of strings");
    if (f->size() > limits.max_flags)
      return Status::Rejected("at most " + std::to_string(limits.max_flags) + " flags", fpath);
    for (size_t i = 0; i < f->size(); ++i) {
      std::string flag, p = si::IndexPath(fpath, i);
      ASSAY_RETURN_IF_ERROR(si::AsString((*f)[i], p, limits.max_flag_bytes, &flag));
      if (Status st = CheckCompileFlag(flag, kind); !st.ok())
        return Status::Rejected(st.message(), p);
      out->flags.push_back(std::move(flag));
    }
  }
  ASSAY_RETURN_IF_ERROR(r->Bool("ptx", &out->ptx));
  ASSAY_RETURN_IF_ERROR(r->Bool("sass", &out->sass));
  return Status::Ok();
}

Status ParseLaunch(const nlohmann::json& v, const std::string& path, const si::Vars& vars,
                   const SpecLimits& limits, LaunchSpec* out) {
  auto r = si::ObjectReader::Make(v, path);
  if (!r.ok()) return r.status();
  ASSAY_RETURN_IF_ERROR(r->RejectUnknown({"grid", "block", "shared_mem_bytes"}));
  ASSAY_RETURN_IF_ERROR(r->Require("grid"));
  ASSAY_RETURN_IF_ERROR(r->Require("block"));
  // Hardware limits of every CUDA GPU (compute capability >= 3.0).
  constexpr int64_t kGridMax[3] = {INT32_MAX, 65535, 65535};
  constexpr int64_t kBlockMax[3] = {1024, 1024, 64};
  int64_t threads = 1;
  for (int which = 0; which < 2; ++which) {
    std::string key = which == 0 ? "grid" : "block";
    const nlohmann::json& a = *r->Find(key);
    std::string apath = r->PathOf(key);
    if (!a.is_array() || a.empty() || a.size() > 3)
      return Status::Rejected("'" + apath + "' must be an array of 1 to 3 sizes [x, y, z]", apath);
    for (size_t i = 0; i < a.size(); ++i) {
      std::string p = si::IndexPath(apath, i);
      IntOrExpr* dst = which == 0 ? &out->grid[i] : &out->block[i];
      int64_t value = 0;
      ASSAY_RETURN_IF_ERROR(si::ParseIntOrExpr(a[i], p, vars, dst, &value));
      int64_t max = which == 0 ? kGridMax[i] : kBlockMax[i];
      if (value < 1 || value > max)
        return Status::Rejected("'" + p + "' is " + std::to_string(value) + "; it must be in [1, " +
                                    std::to_string(max) + "]",
                                p);
      if (which == 1) threads *= value;
    }
  }
  if (threads > 1024)
    return Status::Rejected("a block has " + std::to_string(threads) +
                                " threads; CUDA allows at most 1024",
                            r->PathOf("block"));
  if (const auto* s = r->Find("shared_mem_bytes")) {
    std::string p = r->PathOf("shared_mem_bytes");
    int64_t value = 0;
    ASSAY_RETURN_IF_ERROR(si::ParseIntOrExpr(*s, p, vars, &out->shared_mem_bytes, &value));
    if (value < 0 || value > limits.max_shared_mem_bytes)
      return Status::Rejected("'" + p + "' is " + std::to_string(value) + "; it must be in [0, " +
                                  std::to_string(limits.max_shared_mem_bytes) + "]",
                              p);
  }
  return Status::Ok();
}

Status ParseReference(const nlohmann::json& v, const std::string& path, const JobSpec& job,
                      const si::Vars& vars, const SpecLimits& limits, ReferenceSpec* out) {
  auto r = si::ObjectReader::Make(v, path);
  if (!r.ok()) return r.status();
  if (r->Has("reference"))
    return Status::Rejected("a reference cannot have a reference of its own",
                            r->PathOf("reference"));
  if (const auto* e = r->Find("expected")) {
    if (r->Has("kind"))
      return Status::Rejected("a reference is either a kernel ('kind', ...) or 'expected' data, "
                              "not both",
                              r->PathOf("expected"));
    ASSAY_RETURN_IF_ERROR(r->RejectUnknown({"expected"}));
    std::string epath = r->PathOf("expected");
    if (!e->is_object()) return si::WrongType(*e, epath, "an object {arg: {blob, format}}");
    for (const auto& item : e->items()) {
      const std::string& name = item.key();
      const nlohmann::json& ref = item.value();
      std::string p = si::FieldPath(epath, name);
      auto arg = std::find_if(job.args.begin(), job.args.end(),
                              [&](const ArgSpec& a) { return a.name == name; });
      if (arg == job.args.end() || arg->role == ArgRole::kIn || arg->role == ArgRole::kScalar)
        return Status::Rejected("'" + name + "' is not an out or inout argument", p);
      ASSAY_RETURN_IF_ERROR(si::ParseBlobRef(ref, p, "blob", &out->expected[name]));
    }
    // Every output is checked: an unchecked output is a place to hide a wrong answer.
    for (const ArgSpec& a : job.args)
      if ((a.role == ArgRole::kOut || a.role == ArgRole::kInOut) && !out->expected.count(a.name))
        return Status::Rejected("expected data for output '" + a.name + "' is missing", epath);
    return Status::Ok();
  }
  ASSAY_RETURN_IF_ERROR(r->RejectUnknown({"kind", "source", "compile", "entry", "launch"}));
  KernelSpec k;
  ASSAY_RETURN_IF_ERROR(ParseKind(*r, &k.kind));
  if (!si::IsReferenceKind(k.kind))
    return Status::Rejected("a reference must be a kernel (cuda, cubin, ptx, fatbin, triton, "
                            "torch, torch_cuda), not '" + std::string(JobKindName(k.kind)) + "'",
                            r->PathOf("kind"));
  ASSAY_RETURN_IF_ERROR(si::ParseKernel(*r, k.kind, vars, limits, &k));
  out->kernel = std::move(k);
  return Status::Ok();
}

}  // namespace

std::string_view DTypeName(DType t) {
  for (auto& [v, n] : kDTypes)
    if (v == t) return n;
  return "f32";
}
std::optional<DType> DTypeFromName(std::string_view name) {
  for (auto& [v, n] : kDTypes)
    if (n == name) return v;
  return std::nullopt;
}
int DTypeSize(DType t) {
  switch (t) {
    case DType::kF64: case DType::kI64: return 8;
    case DType::kF32: case DType::kI32: return 4;
    case DType::kF16: case DType::kBF16: case DType::kI16: return 2;
    default: return 1;
  }
}
bool IsFloatDType(DType t) {
  return t == DType::kF64 || t == DType::kF32 || t == DType::kF16 || t == DType::kBF16;
}
std::string_view ArgRoleName(ArgRole r) {
  switch (r) {
    case ArgRole::kIn: return "in";
    case ArgRole::kOut: return "out";
    case ArgRole::kInOut: return "inout";
    case ArgRole::kScalar: return "scalar";
  }
  return "in";
}

namespace spec_internal {

bool IsModuleKind(JobKind k) {
  return k == JobKind::kCuda || k == JobKind::kCubin || k == JobKind::kPtx || k == JobKind::kFatbin;
}
bool HasArgs(JobKind k) {
  return IsModuleKind(k) || k == JobKind::kTriton || k == JobKind::kTorch ||
         k == JobKind::kTorchCuda;
}
bool HasCompile(JobKind k) {
  return k == JobKind::kCompile || k == JobKind::kCuda || k == JobKind::kCudaProgram;
}
bool IsReferenceKind(JobKind k) { return HasArgs(k); }

Status ParseSource(const nlohmann::json& v, const std::string& path, JobKind kind,
                   std::string_view default_filename, const SpecLimits& limits,
                   SourceSpec* out) {
  auto r = ObjectReader::Make(v, path);
  if (!r.ok()) return r.status();
  ASSAY_RETURN_IF_ERROR(r->RejectUnknown({"text", "blob", "base64", "filename"}));
  int given = r->Has("text") + r->Has("blob") + r->Has("base64");
  if (given == 0)
    return Status::Rejected("'" + path + "' needs one of 'text', 'blob' or 'base64'", path);
  if (given > 1) {
    std::string second = r->Has("text") ? (r->Has("blob") ? "blob" : "base64") : "base64";
    return Status::Rejected("'" + path + "' takes exactly one of 'text', 'blob' or 'base64'",
                            r->PathOf(second));
  }
  if (r->Has("text")) {
    if (kind == JobKind::kCubin || kind == JobKind::kFatbin)
      return Status::Rejected("a " + std::string(JobKindName(kind)) +
                                  " is binary: send it as 'blob' (uploaded) or 'base64'",
                              r->PathOf("text"));
    out->form = SourceSpec::Form::kText;
    ASSAY_RETURN_IF_ERROR(r->String("text", limits.max_source_bytes, &out->data));
    if (out->data.find('\0') != std::string::npos)
      return Status::Rejected("source text contains a NUL byte", r->PathOf("text"));
  } else if (r->Has("base64")) {
    std::string encoded;
    ASSAY_RETURN_IF_ERROR(r->String("base64", limits.max_source_bytes / 3 * 4 + 4, &encoded));
    auto decoded = Base64Decode(encoded);
    if (!decoded) return Status::Rejected("not valid base64", r->PathOf("base64"));
    if (decoded->size() > limits.max_source_bytes)
      return Status::Rejected("source is larger than " + std::to_string(limits.max_source_bytes) +
                                  " bytes",
                              r->PathOf("base64"));
    out->form = SourceSpec::Form::kBase64;
    out->data = std::move(*decoded);
  } else {
    out->form = SourceSpec::Form::kBlob;
    ASSAY_RETURN_IF_ERROR(r->String("blob", 64, &out->blob));
    if (!IsSha256Hex(out->blob))
      return Status::Rejected("a blob is named by its SHA-256: 64 hex digits", r->PathOf("blob"));
    std::transform(out->blob.begin(), out->blob.end(), out->blob.begin(),
                   [](char c) { return c >= 'A' && c <= 'F' ? char(c - 'A' + 'a') : c; });
  }
  out->filename = default_filename;
  ASSAY_RETURN_IF_ERROR(r->String("filename", 255, &out->filename));
  const std::string& f = out->filename;
  bool good = !f.empty() && f[0] != '.' && std::all_of(f.begin(), f.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '.' || c == '_' || c == '-';
  });
  if (!good)
    return Status::Rejected("a filename is a plain name of [A-Za-z0-9._-], not starting with '.'",
                            r->PathOf("filename"));
  return Status::Ok();
}

Status ParseKernel(const ObjectReader& r, JobKind kind, const Vars& vars,
                   const SpecLimits& limits, KernelSpec* out) {
  out->kind = kind;
  std::string ctx = KindContext(kind);
  if (kind == JobKind::kKernelbench) {
    ASSAY_RETURN_IF_ERROR(r.RejectIfPresent("source", "does not apply to kind 'kernelbench' "
                                                      "(use 'problem' and 'candidate')"));
  } else {
    ASSAY_RETURN_IF_ERROR(r.Require("source", ctx));
    ASSAY_RETURN_IF_ERROR(ParseSource(*r.Find("source"), r.PathOf("source"), kind,
                                      DefaultFilename(kind), limits, &out->source));
  }
  if (HasCompile(kind)) {
    CompileSpec c;
    if (kind == JobKind::kCudaProgram) c.compiler = "nvcc";
    if (const auto* v = r.Find("compile"))
      ASSAY_RETURN_IF_ERROR(ParseCompile(*v, r.PathOf("compile"), kind, limits, &c));
    out->compile = std::move(c);
  } else {
    ASSAY_RETURN_IF_ERROR(r.RejectIfPresent("compile", "does not apply to " + ctx));
  }
  if (IsModuleKind(kind)) {
    ASSAY_RETURN_IF_ERROR(r.Require("entry", ctx));
  } else if (kind == JobKind::kTriton) {
    out->entry = "launch";
  } else if (kind == JobKind::kTorch || kind == JobKind::kTorchCuda) {
    out->entry = "Model";
  } else {
    ASSAY_RETURN_IF_ERROR(r.RejectIfPresent("entry", "does not apply to " + ctx));
  }
  ASSAY_RETURN_IF_ERROR(r.String("entry", 1024, &out->entry));
  if (r.Has("entry") && !IsIdentifier(out->entry))
    return Status::Rejected("entry must be a C identifier (an extern \"C\" or mangled name)",
                            r.PathOf("entry"));
  if (IsModuleKind(kind)) {
    ASSAY_RETURN_IF_ERROR(r.Require("launch", ctx));
    LaunchSpec l;
    ASSAY_RETURN_IF_ERROR(ParseLaunch(*r.Find("launch"), r.PathOf("launch"), vars, limits, &l));
    out->launch = std::move(l);
  } else {
    ASSAY_RETURN_IF_ERROR(r.RejectIfPresent("launch", "does not apply to " + ctx));
  }
  return Status::Ok();
}

}  // namespace spec_internal

Result<JobSpec> ParseJobSpec(std::string_view json_text, const SpecLimits& limits) {
  if (json_text.size() > limits.max_spec_bytes)
    return Status::Rejected("the job spec is " + std::to_string(json_text.size()) +
                                " bytes; the limit is " + std::to_string(limits.max_spec_bytes),
                            "");
  if (!si::JsonDepthWithin(json_text, limits.max_json_depth))
    return Status::Rejected("the job spec nests deeper than " +
                                std::to_string(limits.max_json_depth) + " levels",
                            "");
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::exception& e) {  // parse_error, out_of_range (1e999)
    return Status::Rejected(std::string("the job spec is not valid JSON: ") + e.what(), "");
  }
  return ParseJobSpecJson(doc, limits);
}

Result<JobSpec> ParseJobSpecJson(const nlohmann::json& doc, const SpecLimits& limits) {
  auto rr = si::ObjectReader::Make(doc, "");
  if (!rr.ok()) return rr.status();
  const si::ObjectReader& r = *rr;
  ASSAY_RETURN_IF_ERROR(r.RejectUnknown(
      {"schema_version", "kind", "name", "timeout_s", "gpu", "source", "compile", "entry", "args",
       "launch", "reference", "correctness", "timing", "profile", "outputs", "program", "problem",
       "candidate", "num_trials"}));
  JobSpec s;
  ASSAY_RETURN_IF_ERROR(r.Int("schema_version", 0, INT32_MAX, &s.schema_version));
  if (s.schema_version != kJobSpecSchemaVersion)
    return Status::Rejected("schema_version " + std::to_string(s.schema_version) +
                                " is not supported; this server reads version " +
                                std::to_string(kJobSpecSchemaVersion),
                            "schema_version");
  ASSAY_RETURN_IF_ERROR(ParseKind(r, &s.kind));
  const JobKind kind = s.kind;
  const std::string ctx = KindContext(kind);
  auto not_for_kind = "does not apply to " + ctx;

  ASSAY_RETURN_IF_ERROR(r.String("name", 800, &s.name));
  size_t chars = std::count_if(s.name.begin(), s.name.end(),
                               [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; });
  if (chars > 200) return Status::Rejected("name is longer than 200 characters", "name");
  ASSAY_RETURN_IF_ERROR(r.Double("timeout_s", &s.timeout_s));
  if (!(s.timeout_s > 0 && s.timeout_s <= limits.max_timeout_s))
    return Status::Rejected("timeout_s must be in (0, " +
                                std::to_string(static_cast<int64_t>(limits.max_timeout_s)) + "]",
                            "timeout_s");
  if (const auto* g = r.Find("gpu")) {
    auto gr = si::ObjectReader::Make(*g, "gpu");
    if (!gr.ok()) return gr.status();
    ASSAY_RETURN_IF_ERROR(gr->RejectUnknown({"type"}));
    ASSAY_RETURN_IF_ERROR(gr->String("type", 100, &s.gpu_type));
  }

  // Args come first: launch and shapes name their scalars.
  if (si::HasArgs(kind)) {
    if (const auto* a = r.Find("args"))
      ASSAY_RETURN_IF_ERROR(si::ParseArgs(*a, "args", limits, &s.args));
  } else {
    ASSAY_RETURN_IF_ERROR(r.RejectIfPresent("args", not_for_kind));
  }
  const si::Vars vars = si::IntegerScalars(s.args);
  ASSAY_RETURN_IF_ERROR(si::ParseKernel(r, kind, vars, limits, &s));

  if (si::HasArgs(kind)) {
    if (const auto* v = r.Find("reference")) {
      ReferenceSpec ref;
      ASSAY_RETURN_IF_ERROR(ParseReference(*v, "reference", s, vars, limits, &ref));
      s.reference = std::move(ref);
    }
    if (const auto* o = r.Find("outputs")) {
      if (!o->is_array()) return si::WrongType(*o, "outputs", "an array of argument names");
      for (size_t i = 0; i < o->size(); ++i) {
        std::string name, p = si::IndexPath("outputs", i);
        ASSAY_RETURN_IF_ERROR(si::AsString((*o)[i], p, 64, &name));
        auto arg = std::find_if(s.args.begin(), s.args.end(),
                                [&](const ArgSpec& a) { return a.name == name; });
        if (arg == s.args.end() || arg->role == ArgRole::kIn || arg->role == ArgRole::kScalar)
          return Status::Rejected("'" + name + "' is not an out or inout argument", p);
        if (std::find(s.outputs.begin(), s.outputs.end(), name) != s.outputs.end())
          return Status::Rejected("'" + name + "' is listed twice", p);
        s.outputs.push_back(std::move(name));
      }
    }
  } else {
    ASSAY_RETURN_IF_ERROR(r.RejectIfPresent("reference", not_for_kind));
    ASSAY_RETURN_IF_ERROR(r.RejectIfPresent("outputs", not_for_kind));
  }

  bool evaluates = si::HasArgs(kind) || kind == JobKind::kKernelbench;
  if (evaluates) {
    s.correctness.emplace();
    s.timing.emplace();
    if (const auto* v = r.Find("correctness"))
      ASSAY_RETURN_IF_ERROR(si::ParseCorrectness(*v, "correctness", limits, &*s.correctness));
    else
      ASSAY_RETURN_IF_ERROR(si::ParseCorrectness(nlohmann::json::object(), "correctness", limits,
                                                 &*s.correctness));
    if (const auto* v = r.Find("timing"))
      ASSAY_RETURN_IF_ERROR(si::ParseTiming(*v, "timing", limits, &*s.timing));
  } else {
    ASSAY_RETURN_IF_ERROR(r.RejectIfPresent("correctness", not_for_kind));
    ASSAY_RETURN_IF_ERROR(r.RejectIfPresent("timing", not_for_kind));
  }
  if (kind != JobKind::kCompile) {
    s.profile.emplace();
    if (const auto* v = r.Find("profile"))
      ASSAY_RETURN_IF_ERROR(si::ParseProfile(*v, "profile", limits, &*s.profile));
  } else {
    ASSAY_RETURN_IF_ERROR(r.RejectIfPresent("profile", not_for_kind));
  }
  if (kind == JobKind::kCudaProgram) {
    s.program.emplace();
    if (const auto* v = r.Find("program"))
      ASSAY_RETURN_IF_ERROR(si::ParseProgram(*v, "program", limits, &*s.program));
  } else {
    ASSAY_RETURN_IF_ERROR(r.RejectIfPresent("program", not_for_kind));
  }
  if (kind == JobKind::kKernelbench) {
    for (const char* key : {"problem", "candidate"}) {
      ASSAY_RETURN_IF_ERROR(r.Require(key, ctx));
      SourceSpec src;
      ASSAY_RETURN_IF_ERROR(si::ParseSource(*r.Find(key), key, kind, std::string(key) + ".py",
                                            limits, &src));
      (std::string_view(key) == "problem" ? s.problem : s.candidate) = std::move(src);
    }
    ASSAY_RETURN_IF_ERROR(r.Int("num_trials", 1, limits.max_num_trials, &s.num_trials));
  } else {
    for (const char* key : {"problem", "candidate", "num_trials"})
      ASSAY_RETURN_IF_ERROR(r.RejectIfPresent(key, not_for_kind));
  }
  return s;
}

std::map<std::string, int64_t> ScalarVars(const JobSpec& spec) {
  return si::IntegerScalars(spec.args);
}

Result<std::vector<int64_t>> ResolveShape(const JobSpec& spec, const ArgSpec& arg) {
  const si::Vars vars = ScalarVars(spec);
  std::vector<int64_t> dims;
  for (const IntOrExpr& d : arg.shape) {
    if (const auto* i = std::get_if<int64_t>(&d)) {
      dims.push_back(*i);
      continue;
    }
    auto v = EvalExpr(std::get<std::string>(d), vars);
    if (!v.ok()) return v.status();
    dims.push_back(*v);
  }
  return dims;
}

Result<ResolvedLaunch> ResolveLaunch(const JobSpec& spec, const LaunchSpec& launch) {
  const si::Vars vars = ScalarVars(spec);
  auto eval = [&](const IntOrExpr& e) -> Result<int64_t> {
    if (const auto* i = std::get_if<int64_t>(&e)) return *i;
    return EvalExpr(std::get<std::string>(e), vars);
  };
  ResolvedLaunch out;
  for (int i = 0; i < 3; ++i) {
    auto g = eval(launch.grid[i]);
    if (!g.ok()) return g.status();
    out.grid[i] = *g;
    auto b = eval(launch.block[i]);
    if (!b.ok()) return b.status();
    out.block[i] = *b;
  }
  auto s = eval(launch.shared_mem_bytes);
  if (!s.ok()) return s.status();
  out.shared_mem_bytes = *s;
  return out;
}

}  // namespace assay

#include "worker/python_request.h"

#include <unistd.h>

#include <cctype>

#include "common/util.h"
#include "engine/npy.h"
#include "engine/safetensors.h"

namespace assay {
namespace {

using nlohmann::json;

constexpr size_t kMaxBlobBytes = size_t{4} << 30;

std::string Path(const std::filesystem::path& p) { return p.string(); }

json InitJson(const InitSpec& init) {
  switch (init.kind) {
    case InitSpec::Kind::kUniform: return {{"kind", "uniform"}, {"a", init.a}, {"b", init.b}};
    case InitSpec::Kind::kNormal: return {{"kind", "normal"}, {"a", init.a}, {"b", init.b}};
    case InitSpec::Kind::kInt:
      return {{"kind", "int"}, {"a", static_cast<int64_t>(init.a)}, {"b", static_cast<int64_t>(init.b)}};
    case InitSpec::Kind::kConst: return {{"kind", "const"}, {"a", init.a}};
    case InitSpec::Kind::kBlob: {
      json j = {{"kind", "blob"}, {"blob", init.blob.hash}, {"format", init.blob.format}};
      if (!init.blob.tensor.empty()) j["tensor"] = init.blob.tensor;
      return j;
    }
  }
  return nullptr;
}

json ScalarValue(const ArgSpec& a) {
  if (const auto* i = std::get_if<int64_t>(&a.value)) {
    if (a.dtype == DType::kBool) return *i != 0;
    return *i;
  }
  return std::get<double>(a.value);
}

Tolerance ToleranceFor(const JobSpec& spec, const ArgSpec& a) {
  if (a.tolerance) return *a.tolerance;
  if (spec.correctness) {
    auto it = spec.correctness->tolerance.find(a.dtype);
    if (it != spec.correctness->tolerance.end()) return it->second;
  }
  return DefaultTolerance(a.dtype);
}

// KernelBench compares whatever forward returns with one tolerance, which the
// harness picks by the output's precision as KernelBench does. A job that
// changed a float dtype's tolerance from Assay's default overrides it (f32
// first, then f64, f16, bf16).
std::optional<Tolerance> KernelbenchTolerance(const JobSpec& spec) {
  if (spec.correctness) {
    for (DType t : {DType::kF32, DType::kF64, DType::kF16, DType::kBF16}) {
      auto it = spec.correctness->tolerance.find(t);
      if (it != spec.correctness->tolerance.end() && !(it->second == DefaultTolerance(t))) return it->second;
    }
  }
  return std::nullopt;
}

json KernelRef(JobKind kind, const std::filesystem::path& path, const std::string& entry) {
  return {{"kind", JobKindName(kind)}, {"path", Path(path)}, {"entry", entry}};
}

// Hard link (same file system, no copy), else a copy. The job's directory is
// the one place every sandbox mode lets the harness read.
Status LinkOrCopy(const std::filesystem::path& from, const std::filesystem::path& to) {
  std::error_code ec;
  std::filesystem::remove(to, ec);
  std::filesystem::create_hard_link(from, to, ec);
  if (!ec) return Status::Ok();
  std::filesystem::copy_file(from, to, std::filesystem::copy_options::overwrite_existing, ec);
  if (ec) return Status::Infra("cannot copy " + from.string() + " into the job directory: " + ec.message());
  return Status::Ok();
}

Result<std::filesystem::path> BlobPath(const BlobFiles& blob_files, const std::string& hash, const std::string& what) {
  auto it = blob_files.find(hash);
  if (it == blob_files.end()) return Status::Infra(what + ": blob " + hash + " was not handed to the worker");
  return it->second;
}

// Expected data for out/inout `arg` as a .npy file at `to`.
Status WriteExpectedNpy(const JobSpec& spec, const ArgSpec& arg, const BlobRef& ref, const BlobFiles& blob_files,
                        const std::filesystem::path& to) {
  const std::string field = "reference.expected." + arg.name;
  auto from = BlobPath(blob_files, ref.hash, field);
  if (!from.ok()) return from.status();
  if (ref.format == "npy") return LinkOrCopy(*from, to);
  auto bytes = ReadFile(*from, kMaxBlobBytes);
  if (!bytes.ok()) return Status(bytes.status().error_class(), field + ": " + bytes.status().message());
  if (ref.format == "safetensors") {
    auto t = ParseSafetensors(*bytes, ref.tensor);
    if (!t.ok()) return Status::Rejected(field + ": " + t.status().message(), field);
    return WriteFileAtomic(to, WriteNpy(t->dtype, t->shape, t->data));
  }
  // raw: the argument's dtype and shape, little-endian, C order.
  auto shape = ResolveShape(spec, arg);
  if (!shape.ok()) return Status::Rejected(shape.status().message(), field);
  int64_t n = 1;
  for (int64_t d : *shape) n *= d;
  if (static_cast<int64_t>(bytes->size()) != n * DTypeSize(arg.dtype))
    return Status::Rejected(field + ": raw data has " + std::to_string(bytes->size()) + " bytes, the argument needs " +
                                std::to_string(n * DTypeSize(arg.dtype)),
                            field);
  return WriteFileAtomic(to, WriteNpy(arg.dtype, *shape, *bytes));
}

}  // namespace

Result<std::string> PythonSourceBytes(const SourceSpec& source, const BlobFiles& blob_files) {
  if (source.form != SourceSpec::Form::kBlob) return source.data;
  auto path = BlobPath(blob_files, source.blob, "source");
  if (!path.ok()) return path.status();
  return ReadFile(*path, kMaxBlobBytes);
}

Result<std::string> PythonCandidateSource(const JobSpec& spec, const BlobFiles& blob_files) {
  if (spec.kind == JobKind::kKernelbench) {
    if (!spec.candidate) return Status::Rejected("kind 'kernelbench' needs 'candidate'", "candidate");
    return PythonSourceBytes(*spec.candidate, blob_files);
  }
  return PythonSourceBytes(spec.source, blob_files);
}

Result<json> BuildPythonRequest(const JobSpec& spec, const std::filesystem::path& dir,
                                const PythonRequestOptions& options) {
  const std::string kind(JobKindName(spec.kind));
  json req = {{"v", kPythonRequestVersion}, {"mode", options.mode}, {"kind", kind}, {"device", options.device}};
  json reference = nullptr, problem = nullptr;
  if (spec.kind == JobKind::kKernelbench) {
    req["candidate"] = KernelRef(spec.kind, dir / "candidate.py", "ModelNew");
    problem = {{"path", Path(dir / "problem.py")}, {"entry", "Model"}};
  } else {
    req["candidate"] = KernelRef(spec.kind, dir / "candidate.py", spec.entry);
    if (spec.reference && spec.reference->kernel)
      reference = KernelRef(spec.reference->kernel->kind, dir / "reference.py", spec.reference->kernel->entry);
  }
  req["reference"] = reference;
  req["problem"] = problem;

  json args = json::array(), expected = json::object(), blob_files = json::object();
  for (const ArgSpec& a : spec.args) {
    json j = {{"name", a.name}, {"role", ArgRoleName(a.role)}, {"dtype", DTypeName(a.dtype)}};
    if (!a.is_tensor()) {
      j["value"] = ScalarValue(a);
      args.push_back(std::move(j));
      continue;
    }
    auto shape = ResolveShape(spec, a);
    if (!shape.ok()) return Status::Rejected(shape.status().message(), "args");
    j["shape"] = *shape;
    if (a.init && a.role != ArgRole::kOut) {
      j["init"] = InitJson(*a.init);
      if (a.init->kind == InitSpec::Kind::kBlob) blob_files[a.init->blob.hash] = Path(dir / "blobs" / a.init->blob.hash);
    }
    if (a.role == ArgRole::kOut || a.role == ArgRole::kInOut) {
      Tolerance t = ToleranceFor(spec, a);
      j["atol"] = t.atol;
      j["rtol"] = t.rtol;
      if (spec.reference && spec.reference->expected.count(a.name))
        expected[a.name] = Path(dir / ("expected_" + a.name + ".npy"));
    }
    args.push_back(std::move(j));
  }
  req["args"] = std::move(args);
  req["expected"] = std::move(expected);
  req["blob_files"] = std::move(blob_files);

  const CorrectnessSpec c = spec.correctness.value_or(CorrectnessSpec{});
  // No seed: kernelbench takes KernelBench's 42, the other kinds a secret
  // random one drawn by the harness.
  json seed = c.seed ? json(*c.seed) : spec.kind == JobKind::kKernelbench ? json(kKernelbenchSeed) : json(nullptr);
  req["correctness"] = {{"trials", c.trials},
                        {"seed", seed},
                        {"check_after_timing", c.check_after_timing},
                        {"nan_equal", c.nan_equal}};
  if (spec.kind == JobKind::kKernelbench) {
    if (auto t = KernelbenchTolerance(spec)) {
      req["correctness"]["atol"] = t->atol;
      req["correctness"]["rtol"] = t->rtol;
    }
  }
  const TimingSpec t = spec.timing.value_or(TimingSpec{});
  req["timing"] = {{"enabled", t.enabled},
                   {"mode", TimingModeName(t.mode)},
                   {"min_samples", t.min_samples},
                   {"max_samples", t.max_samples},
                   {"noise_target", t.noise_target},
                   {"time_budget_ms", t.time_budget_ms},
                   {"warmup_ms", t.warmup_ms}};
  req["num_trials"] = spec.num_trials;
  req["outputs"] = spec.outputs;
  req["output_dir"] = Path(dir / "out");
  req["l2_bytes"] = options.l2_bytes;
  req["cupti_marks"] = options.cupti_marks;
  req["extension_cache"] = options.extension_cache.string();
  return req;
}

Result<json> WritePythonJob(const JobSpec& spec, const std::filesystem::path& dir, const BlobFiles& blob_files,
                            const PythonRequestOptions& options) {
  auto req = BuildPythonRequest(spec, dir, options);
  if (!req.ok()) return req.status();
  auto write_source = [&](const SourceSpec& src, const char* name) -> Status {
    auto bytes = PythonSourceBytes(src, blob_files);
    if (!bytes.ok()) return bytes.status();
    return WriteFileAtomic(dir / name, *bytes);
  };
  if (spec.kind == JobKind::kKernelbench) {
    if (!spec.problem || !spec.candidate) return Status::Rejected("kind 'kernelbench' needs 'problem' and 'candidate'");
    ASSAY_RETURN_IF_ERROR(write_source(*spec.candidate, "candidate.py"));
    ASSAY_RETURN_IF_ERROR(write_source(*spec.problem, "problem.py"));
  } else {
    ASSAY_RETURN_IF_ERROR(write_source(spec.source, "candidate.py"));
    if (spec.reference && spec.reference->kernel)
      ASSAY_RETURN_IF_ERROR(write_source(spec.reference->kernel->source, "reference.py"));
  }
  std::error_code ec;
  std::filesystem::create_directories(dir / "out", ec);
  if (!(*req)["blob_files"].empty()) std::filesystem::create_directories(dir / "blobs", ec);
  if (ec) return Status::Infra("cannot make the job's directories: " + ec.message());
  for (const auto& [hash, to] : (*req)["blob_files"].items()) {
    auto from = BlobPath(blob_files, hash, "args");
    if (!from.ok()) return from.status();
    ASSAY_RETURN_IF_ERROR(LinkOrCopy(*from, to.get<std::string>()));
  }
  for (const ArgSpec& a : spec.args) {
    if (!(*req)["expected"].contains(a.name)) continue;
    ASSAY_RETURN_IF_ERROR(WriteExpectedNpy(spec, a, spec.reference->expected.at(a.name), blob_files,
                                           (*req)["expected"][a.name].get<std::string>()));
  }
  ASSAY_RETURN_IF_ERROR(WriteFileAtomic(dir / "request.json", req->dump(2)));
  return req;
}

bool NeedsPythonPrepare(JobKind kind, std::string_view candidate_source) {
  if (kind == JobKind::kTorchCuda || kind == JobKind::kKernelbench) return true;
  return candidate_source.find("load_inline") != std::string_view::npos ||
         candidate_source.find("cpp_extension") != std::string_view::npos;
}

json PythonBuildVersions(const json& probe) {
  json v = json::object();
  for (const char* key : {"python", "torch", "torch_cuda", "triton"}) {
    auto it = probe.is_object() ? probe.find(key) : probe.end();
    v[key] = it != probe.end() && it->is_string() ? *it : json(nullptr);
  }
  return v;
}

std::string PythonExtensionKey(std::string_view candidate_source, const json& probe, std::string_view arch_list) {
  // Length-prefixed fields: no two inputs serialize alike.
  std::string versions = PythonBuildVersions(probe).dump();
  std::string buf = "assay-torch-ext-v1\n";
  for (std::string_view part : {candidate_source, std::string_view(versions), arch_list}) {
    buf += std::to_string(part.size());
    buf += ':';
    buf += part;
  }
  return Sha256Hex(buf);
}

std::string TorchArchList(std::string_view arch) {
  if (arch.rfind("sm_", 0) != 0) return "";
  std::string digits;
  for (char c : arch.substr(3)) {
    if (!std::isdigit(static_cast<unsigned char>(c))) break;
    digits += c;
  }
  if (digits.size() < 2) return "";
  return digits.substr(0, digits.size() - 1) + "." + digits.back();
}

}  // namespace assay

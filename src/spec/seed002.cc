#include "spec/seed002.h"

#include <algorithm>
#include <cctype>

#include "spec/json_reader.h"

namespace assay {
namespace si = spec_internal;
using nlohmann::json;

namespace {

constexpr std::string_view kKernelTypes = "torch, torch_cuda, triton, cuda";

// Where Assay takes code that /v1/eval cannot: said in every rejection of that kind.
constexpr std::string_view kJobsHint =
    "submit it to POST /v1/jobs instead (docs/job-spec.md): kind 'cuda' for a raw CUDA kernel "
    "(entry, args, launch), kind 'torch', 'torch_cuda' or 'triton' with 'args' for a kernel "
    "with an IO contract";

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

bool IsIdentChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

// Whether `name` occurs in `source` as a whole identifier.
bool MentionsIdentifier(std::string_view source, std::string_view name) {
  for (size_t at = source.find(name); at != std::string_view::npos; at = source.find(name, at + 1)) {
    bool left = at == 0 || !IsIdentChar(source[at - 1]);
    size_t end = at + name.size();
    bool right = end == source.size() || !IsIdentChar(source[end]);
    if (left && right) return true;
  }
  return false;
}

// One KernelCode: {source_code, kernel_type, io?, metadata?}.
struct KernelCode {
  std::string source;
  std::string type;  // lower case: torch, torch_cuda, triton, cuda
};

Status ParseKernelCode(const json& v, const std::string& path, const SpecLimits& limits,
                       KernelCode* out, std::vector<std::string>* warnings) {
  auto r = si::ObjectReader::Make(v, path);
  if (!r.ok()) return r.status();
  ASSAY_RETURN_IF_ERROR(r->RejectUnknown({"source_code", "kernel_type", "io", "metadata"}));
  ASSAY_RETURN_IF_ERROR(r->Require("source_code"));
  ASSAY_RETURN_IF_ERROR(r->String("source_code", limits.max_source_bytes, &out->source));
  ASSAY_RETURN_IF_ERROR(r->Require("kernel_type", kKernelTypes));
  std::string type;
  ASSAY_RETURN_IF_ERROR(r->String("kernel_type", 32, &type));
  out->type = Lower(type);  // the seed's enum names are TORCH, TORCH_CUDA, ...
  if (out->type != "torch" && out->type != "torch_cuda" && out->type != "triton" && out->type != "cuda")
    return Status::Rejected("unknown kernel_type '" + type + "' (known: " + std::string(kKernelTypes) + ")",
                            r->PathOf("kernel_type"));
  for (const char* key : {"io", "metadata"}) {
    const json* f = r->Find(key);
    if (!f) continue;
    if (!f->is_object()) return si::WrongType(*f, r->PathOf(key), "an object");
    std::string why = std::string_view(key) == "io"
                          ? "a KernelBench problem makes its own inputs with get_inputs()"
                          : "Assay does not use it for a KernelBench evaluation";
    warnings->push_back("'" + r->PathOf(key) + "' is ignored: " + why);
  }
  return Status::Ok();
}

Status CheckPair(const KernelCode& ref, const KernelCode& custom, bool legacy) {
  const std::string ref_path = legacy ? "ref_code" : "ref_kernel.source_code";
  const std::string custom_path = legacy ? "custom_code" : "custom_kernel.source_code";
  if (ref.type == "cuda")
    return Status::Rejected("a raw CUDA reference (kernel_type 'cuda') is not a KernelBench problem; " +
                                std::string(kJobsHint),
                            "ref_kernel.kernel_type");
  if (custom.type == "cuda")
    return Status::Rejected("raw CUDA kernels (kernel_type 'cuda') run as Assay's 'cuda' kind, with an "
                            "entry, an argument contract and a launch config: " +
                                std::string(kJobsHint) +
                                ". /v1/eval takes KernelBench-style Python (torch, torch_cuda, triton)",
                            "custom_kernel.kernel_type");
  bool has_model = DefinesPythonName(ref.source, "Model");
  bool has_inputs = DefinesPythonName(ref.source, "get_inputs");
  if (!has_model || !has_inputs) {
    std::string missing = !has_model && !has_inputs ? "`class Model` and `def get_inputs()`"
                          : !has_model             ? "`class Model`"
                                                   : "`def get_inputs()`";
    return Status::Rejected("the reference is not a KernelBench-style problem: it does not define " + missing +
                                " at the top level. A reference without them has no inputs for "
                                "/v1/eval to make; " + std::string(kJobsHint),
                            ref_path);
  }
  if (!MentionsIdentifier(custom.source, "ModelNew"))
    return Status::Rejected("the candidate does not define `ModelNew`: a KernelBench candidate is a "
                            "module whose class ModelNew replaces the problem's Model",
                            custom_path);
  return Status::Ok();
}

}  // namespace

bool IsSeed002Request(const json& body) {
  if (!body.is_object()) return false;
  for (const char* key : {"ref_kernel", "custom_kernel", "ref_code", "custom_code"})
    if (body.contains(key)) return true;
  return false;
}

Result<Seed002Mapping> MapSeed002Request(const json& body, const SpecLimits& limits) {
  if (!body.is_object()) return Status::Rejected("a seed-002 request must be a JSON object", "");
  auto rr = si::ObjectReader::Make(body, "");
  const si::ObjectReader& r = *rr;
  bool has_new = r.Has("ref_kernel") || r.Has("custom_kernel");
  bool has_legacy = r.Has("ref_code") || r.Has("custom_code");
  if (has_new && has_legacy)
    return Status::Rejected("the request mixes the two seed-002 forms: send either ref_kernel and "
                            "custom_kernel, or the legacy ref_code and custom_code",
                            r.Has("ref_code") ? "ref_code" : "custom_code");
  if (!has_new && !has_legacy)
    return Status::Rejected("a seed-002 request needs ref_kernel and custom_kernel (or the legacy "
                            "ref_code and custom_code)",
                            "ref_kernel");

  Seed002Mapping out;
  out.legacy = has_legacy;
  Status unknown = out.legacy ? r.RejectUnknown({"ref_code", "custom_code", "num_trials", "timeout"})
                              : r.RejectUnknown({"ref_kernel", "custom_kernel", "num_trials", "timeout"});
  if (!unknown.ok())
    return Status::Rejected(unknown.message() + std::string(out.legacy
                                ? " (a legacy seed-002 request has ref_code, custom_code, num_trials, timeout)"
                                : " (a seed-002 request has ref_kernel, custom_kernel, num_trials, timeout)"),
                            unknown.field());

  KernelCode ref, custom;
  if (out.legacy) {
    // The seed's legacy form: a torch reference and a torch_cuda candidate.
    ASSAY_RETURN_IF_ERROR(r.Require("ref_code"));
    ASSAY_RETURN_IF_ERROR(r.Require("custom_code"));
    ASSAY_RETURN_IF_ERROR(r.String("ref_code", limits.max_source_bytes, &ref.source));
    ASSAY_RETURN_IF_ERROR(r.String("custom_code", limits.max_source_bytes, &custom.source));
    ref.type = "torch";
    custom.type = "torch_cuda";
  } else {
    ASSAY_RETURN_IF_ERROR(r.Require("ref_kernel"));
    ASSAY_RETURN_IF_ERROR(r.Require("custom_kernel"));
    ASSAY_RETURN_IF_ERROR(ParseKernelCode(*r.Find("ref_kernel"), "ref_kernel", limits, &ref, &out.warnings));
    ASSAY_RETURN_IF_ERROR(
        ParseKernelCode(*r.Find("custom_kernel"), "custom_kernel", limits, &custom, &out.warnings));
  }
  int num_trials = kSeed002DefaultNumTrials;
  ASSAY_RETURN_IF_ERROR(r.Int("num_trials", 1, limits.max_num_trials, &num_trials));
  int timeout = kSeed002DefaultTimeoutS;
  ASSAY_RETURN_IF_ERROR(r.Int("timeout", 1, static_cast<int>(limits.max_timeout_s), &timeout));
  ASSAY_RETURN_IF_ERROR(CheckPair(ref, custom, out.legacy));

  out.spec = {{"schema_version", 1},
              {"kind", "kernelbench"},
              {"name", "eval: " + custom.type + " vs " + ref.type},
              {"timeout_s", timeout},
              {"num_trials", num_trials},
              {"problem", {{"text", std::move(ref.source)}, {"filename", "problem.py"}}},
              {"candidate", {{"text", std::move(custom.source)}, {"filename", "candidate.py"}}}};
  return out;
}

Result<Seed002Mapping> ParseSeed002Request(std::string_view text, const SpecLimits& limits) {
  if (text.size() > limits.max_spec_bytes)
    return Status::Rejected("the request is " + std::to_string(text.size()) + " bytes; the limit is " +
                                std::to_string(limits.max_spec_bytes),
                            "");
  if (!si::JsonDepthWithin(text, limits.max_json_depth))
    return Status::Rejected("the request nests deeper than " + std::to_string(limits.max_json_depth) + " levels",
                            "");
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::parse_error& e) {
    return Status::Rejected("malformed JSON at byte " + std::to_string(e.byte) + ": " + e.what(), "");
  } catch (const json::exception& e) {  // out_of_range (1e999)
    return Status::Rejected(std::string("malformed JSON: ") + e.what(), "");
  }
  return MapSeed002Request(doc, limits);
}

std::string Seed002Field(std::string_view f, bool legacy) {
  auto under = [&](std::string_view key) {
    return f == key || (f.size() > key.size() && f.substr(0, key.size()) == key && f[key.size()] == '.');
  };
  if (under("problem")) return legacy ? "ref_code" : "ref_kernel.source_code";
  if (under("candidate")) return legacy ? "custom_code" : "custom_kernel.source_code";
  if (f == "timeout_s") return "timeout";
  if (f == "num_trials") return "num_trials";
  return "";
}

bool DefinesPythonName(std::string_view source, std::string_view name) {
  size_t pos = 0;
  while (pos < source.size()) {
    size_t eol = source.find('\n', pos);
    if (eol == std::string_view::npos) eol = source.size();
    std::string_view line = source.substr(pos, eol - pos);
    pos = eol + 1;
    std::string_view rest;
    for (std::string_view kw : {"class ", "def ", "async def "}) {
      if (line.substr(0, kw.size()) == kw) {
        rest = line.substr(kw.size());
        size_t sp = rest.find_first_not_of(" \t");
        rest = sp == std::string_view::npos ? std::string_view() : rest.substr(sp);
        if (rest.substr(0, name.size()) == name) {
          std::string_view after = rest.substr(name.size());
          if (after.empty() || !IsIdentChar(after[0])) return true;
        }
      }
    }
    if (line.substr(0, name.size()) == name) {  // NAME = ...  (also NAME: T = ...)
      std::string_view after = line.substr(name.size());
      size_t sp = after.find_first_not_of(" \t");
      if (sp != std::string_view::npos && (after[sp] == ':' || (after[sp] == '=' && after.substr(sp, 2) != "==")))
        return true;
    }
  }
  return false;
}

bool IsKernelBenchProblem(std::string_view source) {
  return DefinesPythonName(source, "Model") && DefinesPythonName(source, "get_inputs");
}

json Seed002Response(const json& job, const std::vector<std::string>& warnings) {
  auto get = [](const json& obj, const char* key) -> json {
    if (!obj.is_object()) return nullptr;
    auto it = obj.find(key);
    return it == obj.end() ? json(nullptr) : *it;
  };
  std::string state = job.value("state", std::string());
  bool finished = state == "done" || state == "failed" || state == "cancelled" || state == "timed_out";
  json result = get(job, "result");
  json kb = get(result, "kernelbench");
  json error = get(job, "error");
  if (error.is_null()) error = get(result, "error");

  json out = {{"job_id", job.value("id", std::string())},
              {"status", !finished ? "pending" : state == "done" ? "success" : "failed"},
              {"state", state},
              {"queue_position", get(job, "queue_position")}};
  for (const char* key :
       {"compiled", "correctness", "runtime", "ref_runtime", "speedup", "runtime_stats", "ref_runtime_stats", "metadata"})
    out[key] = get(kb, key);
  if (finished && !kb.is_object()) {
    // The job ended before the harness reported (rejected by the worker, a
    // crash, a timeout, cancelled): say what can be said without it.
    std::string cls = error.is_object() ? error.value("class", std::string()) : "";
    if (cls == "compile_error") out["compiled"] = false;
    if (cls == "runtime_error" || cls == "wrong_result" || cls == "launch_error") out["compiled"] = true;
    if (state != "done") out["correctness"] = false;
  }
  if (finished) {
    out["kernel_exec_result"] = {{"compiled", out["compiled"]},       {"correctness", out["correctness"]},
                                 {"runtime", out["runtime"]},         {"runtime_stats", out["runtime_stats"]},
                                 {"metadata", out["metadata"]}};
  } else {
    out["kernel_exec_result"] = nullptr;
  }
  out["error"] = error;
  out["warnings"] = warnings;
  out["result"] = result;
  return out;
}

}  // namespace assay

#include "cli/spec_builder.h"

#include <filesystem>
#include <map>

#include <nlohmann/json.hpp>

#include "common/util.h"
#include "spec/contract_header.h"
#include "spec/seed002.h"

namespace assay::cli {
namespace {

using nlohmann::json;

// Matches the server's default spec limit; the server re-checks.
constexpr size_t kMaxFileBytes = size_t{8} << 20;

// JSON carries only UTF-8 text; binaries go as blob or base64 (--spec).
Status CheckUtf8(const std::string& path, const std::string& text) {
  if (SanitizeUtf8(text) == text) return Status::Ok();
  return Status::Rejected(path + " is not UTF-8 text (send binaries as blob or base64 in --spec)", "file");
}

bool IsPythonFile(const std::string& path) { return std::filesystem::path(path).extension() == ".py"; }

bool IsPythonKind(const std::string& kind) {
  return kind == "torch" || kind == "torch_cuda" || kind == "triton" || kind == "kernelbench";
}

// {"text": ..., "filename": ...} for a file.
Result<json> SourceOf(const std::string& path) {
  auto text = ReadFile(path, kMaxFileBytes);
  if (!text.ok()) return text.status();
  ASSAY_RETURN_IF_ERROR(CheckUtf8(path, *text));
  return json{{"text", std::move(*text)}, {"filename", SafeFilename(path)}};
}

Result<json> ReadJsonObject(const std::string& path, const std::string& field) {
  auto text = ReadFile(path, kMaxFileBytes);
  if (!text.ok()) return text.status();
  json doc;
  try {
    doc = json::parse(*text);
  } catch (const json::parse_error& e) {
    return Status::Rejected(path + ": malformed JSON at byte " + std::to_string(e.byte), field);
  }
  if (!doc.is_object()) return Status::Rejected(path + ": a job spec is a JSON object", field);
  return doc;
}

// A KernelBench problem file's source, or why it is not one.
Result<json> ProblemSource(const std::string& path) {
  auto src = SourceOf(path);
  if (!src.ok()) return src;
  if (!IsKernelBenchProblem((*src)["text"].get<std::string>()))
    return Status::Rejected(path + " is not a KernelBench problem: it does not define `class Model` and "
                                   "`def get_inputs()` at the top level",
                            "file");
  return src;
}

}  // namespace

std::string SafeFilename(const std::string& path) {
  std::string name = std::filesystem::path(path).filename().string();
  for (char& c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
              c == '-';
    if (!ok) c = '_';
  }
  if (name.empty() || name[0] == '.') name = "_" + name;
  if (name.size() > 255) name = name.substr(name.size() - 255);
  return name;
}

Result<json> BuildSpec(const SpecOptions& o) {
  json spec;
  if (!o.spec_file.empty()) {
    auto doc = ReadJsonObject(o.spec_file, "spec");
    if (!doc.ok()) return doc.status();
    spec = std::move(*doc);
    std::string kind = !o.kind.empty() ? o.kind : spec.value("kind", std::string());
    // FILE fills the code the spec leaves out: the problem of a kernelbench job, else the source.
    const char* code_key = kind == "kernelbench" ? "problem" : "source";
    if (!o.file.empty() && !spec.contains(code_key)) {
      auto source = SourceOf(o.file);
      if (!source.ok()) return source.status();
      spec[code_key] = std::move(*source);
    }
  } else if (!o.file.empty() && !o.candidate.empty()) {
    if (!o.kind.empty() && o.kind != "kernelbench")
      return Status::Rejected("--candidate makes a kernelbench job; it does not go with --kind " + o.kind, "kind");
    auto problem = ProblemSource(o.file);
    if (!problem.ok()) return problem.status();
    spec = {{"kind", "kernelbench"}, {"problem", std::move(*problem)}};
  } else if (!o.file.empty() && IsPythonFile(o.file)) {
    auto source = SourceOf(o.file);
    if (!source.ok()) return source.status();
    if (o.kind.empty() && IsKernelBenchProblem((*source)["text"].get<std::string>()))
      return Status::Rejected(o.file + " is a KernelBench problem: give the candidate with --candidate NEW.py", "kind");
    spec = {{"source", std::move(*source)}};  // never a cuda_program, whatever main() it has
  } else if (!o.file.empty()) {
    auto source = ReadFile(o.file, kMaxFileBytes);
    if (!source.ok()) return source.status();
    auto built = SpecFromSourceFile(*source, std::filesystem::path(o.file).filename().string());
    if (!built.ok()) return built.status();
    spec = std::move(*built);
  } else {
    return Status::Rejected("give a source FILE or --spec SPEC.json", "file");
  }

  if (o.compile_only) spec["kind"] = "compile";
  if (!o.kind.empty()) spec["kind"] = o.kind;
  if (!spec.contains("kind")) {
    std::string hint = IsPythonFile(o.file)
                           ? "pass --kind torch, torch_cuda or triton (with --spec for its args), or --candidate "
                             "NEW.py for a KernelBench problem"
                           : "add an `assay:` contract header, define main(), or pass --kind, --compile-only or --spec";
    return Status::Rejected("cannot tell what kind of job " + o.file + " is: " + hint, "kind");
  }
  const std::string kind = spec["kind"].is_string() ? spec["kind"].get<std::string>() : "";
  if (!o.candidate.empty()) {
    if (kind != "kernelbench") return Status::Rejected("--candidate is for kernelbench jobs", "candidate");
    auto candidate = SourceOf(o.candidate);
    if (!candidate.ok()) return candidate.status();
    spec["candidate"] = std::move(*candidate);
  }
  if (!o.reference.empty()) {
    if (!IsPythonKind(kind) || kind == "kernelbench")
      return Status::Rejected("--reference is a Python reference for torch, torch_cuda and triton jobs; give other "
                              "references in --spec",
                              "reference");
    auto ref = SourceOf(o.reference);
    if (!ref.ok()) return ref.status();
    spec["reference"] = {{"kind", o.reference_kind.empty() ? "torch" : o.reference_kind}, {"source", std::move(*ref)}};
  }
  if (!o.arch.empty()) spec["compile"]["arch"] = o.arch;
  if (!o.compiler.empty()) spec["compile"]["compiler"] = o.compiler;
  for (const auto& f : o.flags) spec["compile"]["flags"].push_back(f);
  if (!o.name.empty()) spec["name"] = o.name;
  if (o.timeout_s > 0) spec["timeout_s"] = o.timeout_s;
  if (o.num_trials > 0) spec["num_trials"] = o.num_trials;
  if (!spec.contains("schema_version")) spec["schema_version"] = 1;
  return spec;
}

Result<json> BuildBatchRequest(const BatchRequestOptions& o) {
  json tmpl;
  size_t first_candidate = 0;
  if (!o.spec_file.empty()) {
    auto doc = ReadJsonObject(o.spec_file, "spec");
    if (!doc.ok()) return doc.status();
    tmpl = std::move(*doc);
  } else {
    if (o.files.empty())
      return Status::Rejected("give the KernelBench problem and its candidates: assay batch problem.py new1.py ...",
                              "file");
    auto problem = ProblemSource(o.files[0]);
    if (!problem.ok())
      return Status::Rejected(problem.status().message() + " (the first FILE is the problem; or give --spec TEMPLATE.json)",
                              problem.status().field());
    tmpl = {{"schema_version", 1}, {"kind", "kernelbench"}, {"problem", std::move(*problem)}};
    first_candidate = 1;
  }
  if (o.timeout_s > 0) tmpl["timeout_s"] = o.timeout_s;
  if (o.num_trials > 0) tmpl["num_trials"] = o.num_trials;
  if (!tmpl.contains("schema_version")) tmpl["schema_version"] = 1;
  if (o.files.size() <= first_candidate) return Status::Rejected("no candidate files given", "file");

  // Named after the file; the path as given when two candidates share a file name.
  std::map<std::string, int> basenames;
  for (size_t i = first_candidate; i < o.files.size(); ++i)
    ++basenames[std::filesystem::path(o.files[i]).filename().string()];
  json candidates = json::array();
  std::map<std::string, std::string> used;
  for (size_t i = first_candidate; i < o.files.size(); ++i) {
    const std::string& f = o.files[i];
    std::string base = std::filesystem::path(f).filename().string();
    std::string name = basenames[base] > 1 ? f : base;
    if (auto [it, fresh] = used.emplace(name, f); !fresh)
      return Status::Rejected("candidate " + f + " is given twice", "file");
    auto source = SourceOf(f);
    if (!source.ok()) return source.status();
    candidates.push_back({{"name", name}, {"source", std::move(*source)}});
  }
  json body = {{"template", std::move(tmpl)}, {"candidates", std::move(candidates)}};
  if (!o.name.empty()) body["name"] = o.name;
  return body;
}

Result<json> BuildEvalRequest(const EvalRequestOptions& o) {
  if (o.ref.empty() || o.custom.empty()) return Status::Rejected("give --ref REF.py and --custom NEW.py", "ref");
  auto ref = ReadFile(o.ref, kMaxFileBytes);
  if (!ref.ok()) return ref.status();
  auto custom = ReadFile(o.custom, kMaxFileBytes);
  if (!custom.ok()) return custom.status();
  ASSAY_RETURN_IF_ERROR(CheckUtf8(o.ref, *ref));
  ASSAY_RETURN_IF_ERROR(CheckUtf8(o.custom, *custom));
  json body;
  if (o.legacy) {
    body = {{"ref_code", *ref}, {"custom_code", *custom}};
  } else {
    body = {{"ref_kernel", {{"source_code", *ref}, {"kernel_type", o.ref_type}}},
            {"custom_kernel", {{"source_code", *custom}, {"kernel_type", o.custom_type}}}};
  }
  if (o.num_trials > 0) body["num_trials"] = o.num_trials;
  if (o.timeout_s > 0) body["timeout"] = o.timeout_s;
  return body;
}

}  // namespace assay::cli

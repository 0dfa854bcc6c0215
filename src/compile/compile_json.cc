#include "compile/compile_json.h"

#include <nlohmann/json.hpp>

namespace assay {
namespace {

using nlohmann::json;

Status CheckVersion(const json& j) {
  if (!j.is_object()) return Status::Rejected("expected a JSON object");
  if (!j.contains("v") || !j["v"].is_number_integer() || j["v"].get<int>() != kCompileJsonVersion) {
    return Status::Rejected("unsupported compile format version (want v=" +
                                std::to_string(kCompileJsonVersion) + ")",
                            "v");
  }
  return Status::Ok();
}

}  // namespace

const char* CompileOutputKindName(CompileOutputKind kind) {
  return kind == CompileOutputKind::kExecutable ? "executable" : "cubin";
}

json CompileRequestToJson(const CompileRequest& r) {
  return json{{"v", kCompileJsonVersion}, {"source", r.source},     {"filename", r.filename},
              {"compiler", r.compiler},    {"arch", r.arch},         {"flags", r.flags},
              {"want_ptx", r.want_ptx},    {"want_sass", r.want_sass},
              {"output", CompileOutputKindName(r.output)}};
}

Result<CompileRequest> CompileRequestFromJson(const json& j) {
  ASSAY_RETURN_IF_ERROR(CheckVersion(j));
  CompileRequest r;
  std::string field;
  try {
    field = "source";
    r.source = j.at("source").get<std::string>();
    field = "filename";
    r.filename = j.value("filename", r.filename);
    field = "compiler";
    r.compiler = j.value("compiler", r.compiler);
    field = "arch";
    r.arch = j.value("arch", r.arch);
    field = "flags";
    r.flags = j.value("flags", r.flags);
    field = "want_ptx";
    r.want_ptx = j.value("want_ptx", false);
    field = "want_sass";
    r.want_sass = j.value("want_sass", false);
    field = "output";
    const std::string output = j.value("output", std::string("cubin"));
    if (output == "executable") {
      r.output = CompileOutputKind::kExecutable;
    } else if (output != "cubin") {
      return Status::Rejected("output must be cubin or executable", field);
    }
  } catch (const json::exception& e) {
    return Status::Rejected(std::string("bad compile request: ") + e.what(), field);
  }
  return r;
}

json ResourceUsageToJson(const ResourceUsage& u) {
  return json{{"registers", u.registers},
              {"shared_bytes", u.shared_bytes},
              {"local_bytes", u.local_bytes},
              {"spill_stores", u.spill_stores},
              {"spill_loads", u.spill_loads},
              {"const_bytes", u.const_bytes},
              {"max_threads_per_block", u.max_threads_per_block},
              {"demangled", u.demangled}};
}

json CompileOutputToJson(const CompileOutput& o) {
  json kernels = json::object();
  for (const auto& [name, usage] : o.kernels) kernels[name] = ResourceUsageToJson(usage);
  json status{{"class", std::string(ErrorClassName(o.status.error_class()))},
              {"message", o.status.message()}};
  if (!o.status.field().empty()) status["field"] = o.status.field();
  return json{{"v", kCompileJsonVersion},
              {"status", std::move(status)},
              {"log", o.log},
              {"arch", o.arch},
              {"compiler", o.compiler},
              {"toolkit_version", o.toolkit_version},
              {"cache_hit", o.cache_hit},
              {"duration_ms", o.duration_ms},
              {"cache_key", o.cache_key},
              {"artifact", o.artifact.string()},
              {"ptx", o.ptx},
              {"sass", o.sass},
              {"kernels", std::move(kernels)}};
}

Result<CompileOutput> CompileOutputFromJson(const json& j) {
  ASSAY_RETURN_IF_ERROR(CheckVersion(j));
  CompileOutput o;
  try {
    const json& status = j.at("status");
    const auto cls = ErrorClassFromName(status.at("class").get<std::string>());
    if (!cls) return Status::Rejected("unknown status class", "status.class");
    o.status = Status(*cls, status.value("message", ""), status.value("field", ""));
    o.log = j.value("log", "");
    o.arch = j.value("arch", "");
    o.compiler = j.value("compiler", "");
    o.toolkit_version = j.value("toolkit_version", "");
    o.cache_hit = j.value("cache_hit", false);
    o.duration_ms = j.value("duration_ms", 0.0);
    o.cache_key = j.value("cache_key", "");
    o.artifact = j.value("artifact", "");
    o.ptx = j.value("ptx", "");
    o.sass = j.value("sass", "");
    const json kernels = j.value("kernels", json::object());  // outlives the loop
    for (const auto& [name, k] : kernels.items()) {
      ResourceUsage u;
      u.registers = k.value("registers", 0);
      u.shared_bytes = k.value("shared_bytes", int64_t{0});
      u.local_bytes = k.value("local_bytes", int64_t{0});
      u.spill_stores = k.value("spill_stores", int64_t{0});
      u.spill_loads = k.value("spill_loads", int64_t{0});
      u.const_bytes = k.value("const_bytes", int64_t{0});
      u.max_threads_per_block = k.value("max_threads_per_block", 0);
      u.demangled = k.value("demangled", name);
      o.kernels.emplace(name, std::move(u));
    }
  } catch (const json::exception& e) {
    return Status::Rejected(std::string("bad compile output: ") + e.what());
  }
  return o;
}

}  // namespace assay

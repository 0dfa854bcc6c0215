// The NVRTC driver: in-process compile to a cubin for one sm_XX, with ptxas'
// verbose report in the program log and the PTX kept from the same run.
#include <fstream>

#include "compile/build.h"
#include "compile/nvrtc_library.h"

namespace assay {
namespace {

std::string ProgramLog(const NvrtcLibrary& lib, nvrtcProgram prog) {
  size_t size = 0;
  if (lib.GetProgramLogSize(prog, &size) != NVRTC_SUCCESS || size == 0) return "";
  std::string log(size, '\0');
  if (lib.GetProgramLog(prog, log.data()) != NVRTC_SUCCESS) return "";
  while (!log.empty() && log.back() == '\0') log.pop_back();
  return log;
}

}  // namespace

BuildResult BuildWithNvrtc(const CompileRequest& request, const PreparedRequest& prepared,
                           const CompilerOptions& options, const std::filesystem::path& staging) {
  BuildResult out;
  Result<const NvrtcLibrary*> loaded = NvrtcLibrary::Load(options.cuda_root);
  if (!loaded.ok()) {
    out.status = loaded.status();
    return out;
  }
  const NvrtcLibrary& lib = **loaded;

  nvrtcProgram raw = nullptr;
  nvrtcResult rc = lib.CreateProgram(&raw, request.source.c_str(), request.filename.c_str(), 0, nullptr, nullptr);
  if (rc != NVRTC_SUCCESS) {
    out.status = Status::Infra(std::string("nvrtcCreateProgram: ") + lib.GetErrorString(rc));
    return out;
  }
  NvrtcProgram program(&lib, raw);

  std::vector<std::string> args = {
      "--gpu-architecture=" + prepared.arch.name,
      "--include-path=" + (options.cuda_root / "include").string(),
      "--ptxas-options=-v",  // resource usage per kernel, into the program log
  };
  args.insert(args.end(), prepared.flags.begin(), prepared.flags.end());
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());

  rc = lib.CompileProgram(program.get(), static_cast<int>(argv.size()), argv.data());
  out.log = ProgramLog(lib, program.get());
  if (rc == NVRTC_ERROR_COMPILATION) {
    out.status = Status::CompileError(FirstErrorLine(out.log, "compilation failed"));
    return out;
  }
  if (rc == NVRTC_ERROR_INVALID_OPTION) {
    out.status = Status::Rejected("NVRTC refused the options: " + FirstErrorLine(out.log, lib.GetErrorString(rc)),
                                  "flags");
    return out;
  }
  if (rc != NVRTC_SUCCESS) {
    out.status = Status::Infra(std::string("nvrtcCompileProgram: ") + lib.GetErrorString(rc));
    return out;
  }

  size_t size = 0;
  rc = lib.GetCUBINSize(program.get(), &size);
  if (rc != NVRTC_SUCCESS || size == 0) {
    out.status = Status::Infra(std::string("nvrtcGetCUBINSize: ") + lib.GetErrorString(rc));
    return out;
  }
  std::string cubin(size, '\0');
  rc = lib.GetCUBIN(program.get(), cubin.data());
  if (rc != NVRTC_SUCCESS) {
    out.status = Status::Infra(std::string("nvrtcGetCUBIN: ") + lib.GetErrorString(rc));
    return out;
  }
  {
    std::ofstream f(staging / "artifact", std::ios::binary);
    f.write(cubin.data(), static_cast<std::streamsize>(cubin.size()));
    if (!f.flush()) {
      out.status = Status::Infra("cannot write " + (staging / "artifact").string());
      return out;
    }
  }
  if (request.want_ptx) {
    // NVRTC keeps the PTX of an sm_XX compile too: no second compile needed.
    if (lib.GetPTXSize(program.get(), &size) == NVRTC_SUCCESS && size > 0) {
      out.ptx.assign(size, '\0');
      if (lib.GetPTX(program.get(), out.ptx.data()) != NVRTC_SUCCESS) out.ptx.clear();
      while (!out.ptx.empty() && out.ptx.back() == '\0') out.ptx.pop_back();
    }
  }
  return out;
}

}  // namespace assay

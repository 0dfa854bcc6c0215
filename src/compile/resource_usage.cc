#include "compile/resource_usage.h"

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <regex>
#include <sstream>

namespace assay {

std::map<std::string, ResourceUsage> ParsePtxasLog(std::string_view log) {
  static const std::regex entry(R"(Compiling entry function '([^']+)')");
  static const std::regex props(R"(Function properties for (\S+))");
  static const std::regex frame(
      R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  static const std::regex regs(R"(Used (\d+) registers)");
  static const std::regex smem(R"((\d+) bytes smem)");
  static const std::regex cmem(R"((\d+) bytes cmem\[\d+\])");
  static const std::regex stack(R"((\d+) bytes cumulative stack size)");

  std::map<std::string, ResourceUsage> out;
  std::string current;   // the entry function whose report follows
  bool in_entry_props = false;  // "Function properties" of `current` (not of a callee)
  std::istringstream in{std::string(log)};
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_search(line, m, entry)) {
      current = m[1].str();
      out[current];
      in_entry_props = false;
    } else if (std::regex_search(line, m, props)) {
      in_entry_props = !current.empty() && m[1].str() == current;
    } else if (!current.empty() && std::regex_search(line, m, frame)) {
      if (!in_entry_props) continue;
      ResourceUsage& u = out[current];
      u.local_bytes = std::stoll(m[1].str());
      u.spill_stores = std::stoll(m[2].str());
      u.spill_loads = std::stoll(m[3].str());
    } else if (!current.empty() && std::regex_search(line, m, regs)) {
      ResourceUsage& u = out[current];
      u.registers = std::stoi(m[1].str());
      if (std::regex_search(line, m, smem)) u.shared_bytes = std::stoll(m[1].str());
      if (std::regex_search(line, m, stack)) {
        u.local_bytes = std::max<int64_t>(u.local_bytes, std::stoll(m[1].str()));
      }
      int64_t constant = 0;
      for (auto it = std::sregex_iterator(line.begin(), line.end(), cmem); it != std::sregex_iterator();
           ++it) {
        constant += std::stoll((*it)[1].str());
      }
      if (constant > 0) u.const_bytes = constant;
      current.clear();  // "Used ..." closes the entry's report
    }
  }
  return out;
}

int MaxThreadsPerBlock(int registers, int launch_bounds) {
  constexpr int kRegistersPerBlock = 65536;
  constexpr int kAllocationUnit = 256;  // registers, per warp
  constexpr int kWarp = 32;
  int threads = 1024;
  if (registers > 0) {
    const int per_warp = (registers * kWarp + kAllocationUnit - 1) / kAllocationUnit * kAllocationUnit;
    threads = std::min(threads, kRegistersPerBlock / per_warp * kWarp);
  }
  if (launch_bounds > 0) threads = std::min(threads, launch_bounds);
  return threads;
}

std::string Demangle(const std::string& name) {
  if (name.rfind("_Z", 0) != 0) return name;
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> out(
      abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), &std::free);
  return status == 0 && out ? std::string(out.get()) : name;
}

std::map<std::string, ResourceUsage> MergeResourceUsage(std::string_view ptxas_log,
                                                        std::string_view cubin) {
  std::map<std::string, ResourceUsage> out = ParsePtxasLog(ptxas_log);
  std::map<std::string, int> launch_bounds;
  for (const auto& [name, info] : ReadCubinKernels(cubin)) {
    ResourceUsage& u = out[name];
    if (u.registers == 0) u.registers = info.registers;
    if (u.const_bytes == 0) u.const_bytes = info.const_bytes;
    if (u.local_bytes == 0) u.local_bytes = info.frame_bytes;
    launch_bounds[name] = info.max_threads;
  }
  for (auto& [name, u] : out) {
    u.demangled = Demangle(name);
    u.max_threads_per_block = MaxThreadsPerBlock(u.registers, launch_bounds[name]);
  }
  return out;
}

}  // namespace assay

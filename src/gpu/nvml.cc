#include "gpu/nvml.h"

#include <dlfcn.h>

#include <mutex>

#include <nlohmann/json.hpp>

#include "common/util.h"

namespace assay {
namespace {

// NVML ABI subset (nvml.h, stable since NVML 10).
using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
constexpr nvmlReturn_t kNvmlSuccess = 0;
constexpr int kNvmlTemperatureGpu = 0;
constexpr int kNvmlClockSm = 1;
constexpr int kNvmlClockMem = 2;
struct nvmlMemory_t {
  unsigned long long total, free, used;
};
struct nvmlUtilization_t {
  unsigned int gpu, memory;
};

struct Reason {
  uint64_t bit;
  const char* name;
};
// nvmlClocksEventReason* bits; idle (0x1) is not a throttle.
constexpr Reason kReasons[] = {
    {0x2, "applications_clocks_setting"}, {0x4, "sw_power_cap"},      {0x8, "hw_slowdown"},
    {0x10, "sync_boost"},                 {0x20, "sw_thermal_slowdown"}, {0x40, "hw_thermal_slowdown"},
    {0x80, "hw_power_brake_slowdown"},    {0x100, "display_clock_setting"},
};

class NvmlImpl final : public NvmlLib {
 public:
  Status Load() {
    handle_ = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!handle_) return Status::Infra("NVML not available: libnvidia-ml.so.1 not found");
    bool ok = Sym(init_, "nvmlInit_v2") && Sym(by_uuid_, "nvmlDeviceGetHandleByUUID") &&
              Sym(mem_, "nvmlDeviceGetMemoryInfo") && Sym(util_, "nvmlDeviceGetUtilizationRates") &&
              Sym(temp_, "nvmlDeviceGetTemperature") && Sym(power_, "nvmlDeviceGetPowerUsage") &&
              Sym(clock_, "nvmlDeviceGetClockInfo") && Sym(driver_, "nvmlSystemGetDriverVersion");
    if (!ok) return Status::Infra("NVML too old: missing entry points");
    // Renamed in newer drivers; either name has the same ABI.
    if (!Sym(reasons_, "nvmlDeviceGetCurrentClocksEventReasons"))
      Sym(reasons_, "nvmlDeviceGetCurrentClocksThrottleReasons");
    if (init_() != kNvmlSuccess) return Status::Infra("nvmlInit failed");
    return Status::Ok();
  }

  std::string DriverVersion() override {
    char buf[96] = {};
    if (driver_(buf, sizeof buf) != kNvmlSuccess) return "";
    return buf;
  }

  Result<GpuTelemetry> Read(const std::string& uuid) override {
    nvmlDevice_t dev = nullptr;
    // CUDA reports UUIDs as raw bytes; NVML wants "GPU-xxxxxxxx-...".
    if (by_uuid_(uuid.c_str(), &dev) != kNvmlSuccess) return Status::Infra("NVML: no device " + uuid);
    GpuTelemetry t;
    t.at_ms = NowUnixMs();
    nvmlUtilization_t u{};
    if (util_(dev, &u) == kNvmlSuccess) {
      t.gpu_util_pct = static_cast<int>(u.gpu);
      t.mem_util_pct = static_cast<int>(u.memory);
    }
    nvmlMemory_t m{};
    if (mem_(dev, &m) == kNvmlSuccess) {
      t.memory_used_bytes = static_cast<int64_t>(m.used);
      t.memory_total_bytes = static_cast<int64_t>(m.total);
    }
    unsigned int v = 0;
    if (temp_(dev, kNvmlTemperatureGpu, &v) == kNvmlSuccess) t.temperature_c = static_cast<int>(v);
    if (power_(dev, &v) == kNvmlSuccess) t.power_w = v / 1000.0;  // mW
    if (clock_(dev, kNvmlClockSm, &v) == kNvmlSuccess) t.sm_clock_mhz = static_cast<int>(v);
    if (clock_(dev, kNvmlClockMem, &v) == kNvmlSuccess) t.mem_clock_mhz = static_cast<int>(v);
    unsigned long long reasons = 0;
    if (reasons_ && reasons_(dev, &reasons) == kNvmlSuccess) {
      t.throttle_reasons = reasons;
      for (const auto& r : kReasons)
        if (reasons & r.bit) t.throttle_reason_names.emplace_back(r.name);
    }
    return t;
  }

 private:
  template <typename F>
  bool Sym(F& fn, const char* name) {
    fn = reinterpret_cast<F>(::dlsym(handle_, name));
    return fn != nullptr;
  }

  void* handle_ = nullptr;
  nvmlReturn_t (*init_)() = nullptr;
  nvmlReturn_t (*by_uuid_)(const char*, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*mem_)(nvmlDevice_t, nvmlMemory_t*) = nullptr;
  nvmlReturn_t (*util_)(nvmlDevice_t, nvmlUtilization_t*) = nullptr;
  nvmlReturn_t (*temp_)(nvmlDevice_t, int, unsigned int*) = nullptr;
  nvmlReturn_t (*power_)(nvmlDevice_t, unsigned int*) = nullptr;
  nvmlReturn_t (*clock_)(nvmlDevice_t, int, unsigned int*) = nullptr;
  nvmlReturn_t (*driver_)(char*, unsigned int) = nullptr;
  nvmlReturn_t (*reasons_)(nvmlDevice_t, unsigned long long*) = nullptr;
};

}  // namespace

Result<NvmlLib*> Nvml() {
  static NvmlImpl* impl = nullptr;
  static Status status;
  static std::once_flag once;
  std::call_once(once, [] {
    auto* n = new NvmlImpl();  // process lifetime
    status = n->Load();
    impl = n;
  });
  if (!status.ok()) return status;
  return static_cast<NvmlLib*>(impl);
}

nlohmann::json ToJson(const GpuTelemetry& t) {
  nlohmann::json j;
  j["at"] = FormatUnixMs(t.at_ms);
  auto put = [&j](const char* k, const auto& opt) {
    if (opt) j[k] = *opt;
    else j[k] = nullptr;
  };
  put("gpu_util_pct", t.gpu_util_pct);
  put("mem_util_pct", t.mem_util_pct);
  put("memory_used_bytes", t.memory_used_bytes);
  put("memory_total_bytes", t.memory_total_bytes);
  put("temperature_c", t.temperature_c);
  put("power_w", t.power_w);
  put("sm_clock_mhz", t.sm_clock_mhz);
  put("mem_clock_mhz", t.mem_clock_mhz);
  put("throttle_reasons", t.throttle_reasons);
  j["throttle_reason_names"] = t.throttle_reason_names;
  return j;
}

}  // namespace assay

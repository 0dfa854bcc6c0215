// NVML, loaded at run time (libnvidia-ml.so.1). The toolkit here ships no
// nvml.h, so the few types Assay needs are declared in nvml.cc from NVML's
// documented, stable ABI.
//
// Thread-safety: Nvml() initializes once; NVML's functions are thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/status.h"

namespace assay {

// One reading of a device's state.
struct GpuTelemetry {
  int64_t at_ms = 0;                  // Unix ms
  std::optional<int> gpu_util_pct;    // over NVML's last sample period
  std::optional<int> mem_util_pct;
  std::optional<int64_t> memory_used_bytes;
  std::optional<int64_t> memory_total_bytes;
  std::optional<int> temperature_c;
  std::optional<double> power_w;
  std::optional<int> sm_clock_mhz;
  std::optional<int> mem_clock_mhz;
  std::optional<uint64_t> throttle_reasons;  // NVML clocks-event-reasons bit mask
  std::vector<std::string> throttle_reason_names;  // active reasons other than idle
};

class NvmlLib {
 public:
  // Driver version string ("580.159"), or "".
  virtual std::string DriverVersion() = 0;
  // Reading for the device with this PCI bus id / index. index is NVML's ordering,
  // which matches CUDA's when CUDA_DEVICE_ORDER=PCI_BUS_ID; pass the UUID to be exact.
  virtual Result<GpuTelemetry> Read(const std::string& uuid) = 0;
  virtual ~NvmlLib() = default;
};

// The loaded library, or why it is unavailable.
Result<NvmlLib*> Nvml();

nlohmann::json ToJson(const GpuTelemetry& t);

}  // namespace assay

// GPU enumeration through the CUDA driver API and NVML, both loaded at run
// time: the binary starts on a machine with no GPU driver and says so.
// Thread-safety: functions are safe to call concurrently.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace assay {

struct GpuInfo {
  int index = 0;                 // CUDA ordinal
  std::string name;              // "NVIDIA H100 80GB HBM3"
  std::string uuid;
  int cc_major = 0, cc_minor = 0;
  int64_t total_memory_bytes = 0;
  int sm_count = 0;
  int64_t l2_bytes = 0;
  int64_t max_persisting_l2_bytes = 0;
  int64_t shared_mem_per_block_optin = 0;
  int max_threads_per_block = 0;
  int64_t sm_clock_khz = 0;      // max
  int64_t mem_clock_khz = 0;     // max
  int mem_bus_width_bits = 0;
  std::string arch() const;      // "sm_90"
};

struct GpuInventory {
  Status status;                 // why there are no GPUs, when there are none (driver missing, ...)
  std::string driver_version;    // "580.159" (NVML) or ""
  int cuda_driver_version = 0;   // 13000
  std::vector<GpuInfo> gpus;
};

// Enumerates visible GPUs. Never fails hard: with no driver, status says so and gpus is empty.
GpuInventory ListGpus();

nlohmann::json ToJson(const GpuInfo& g);
nlohmann::json ToJson(const GpuInventory& inv);

}  // namespace assay

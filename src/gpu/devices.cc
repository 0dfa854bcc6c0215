#include "gpu/devices.h"

#include <cstdio>

#include "gpu/cuda_driver.h"
#include "gpu/nvml.h"

namespace assay {
namespace {

std::string FormatUuid(const CUuuid& u) {
  // NVML's form: GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx
  char buf[64];
  const auto* b = reinterpret_cast<const unsigned char*>(u.bytes);
  std::snprintf(buf, sizeof buf,
                "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
                b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
  return buf;
}

}  // namespace

std::string GpuInfo::arch() const { return "sm_" + std::to_string(cc_major) + std::to_string(cc_minor); }

GpuInventory ListGpus() {
  GpuInventory inv;
  auto drv = CudaDriver();
  if (!drv.ok()) {
    inv.status = drv.status();
    return inv;
  }
  const CudaDriverApi& cu = **drv;
  cu.cuDriverGetVersion(&inv.cuda_driver_version);
  if (auto nvml = Nvml(); nvml.ok()) inv.driver_version = (*nvml)->DriverVersion();
  int count = 0;
  if (CUresult r = cu.cuDeviceGetCount(&count); r != CUDA_SUCCESS) {
    inv.status = CuStatus(ErrorClass::kInfraError, r, "cuDeviceGetCount");
    return inv;
  }
  if (count == 0) {
    inv.status = Status::Infra("no GPU: the CUDA driver reports no device");
    return inv;
  }
  for (int i = 0; i < count; ++i) {
    CUdevice dev;
    if (cu.cuDeviceGet(&dev, i) != CUDA_SUCCESS) continue;
    GpuInfo g;
    g.index = i;
    char name[256] = {};
    cu.cuDeviceGetName(name, sizeof name, dev);
    g.name = name;
    CUuuid uuid{};
    if (cu.cuDeviceGetUuid(&uuid, dev) == CUDA_SUCCESS) g.uuid = FormatUuid(uuid);
    size_t mem = 0;
    cu.cuDeviceTotalMem(&mem, dev);
    g.total_memory_bytes = static_cast<int64_t>(mem);
    auto attr = [&](CUdevice_attribute a) {
      int v = 0;
      cu.cuDeviceGetAttribute(&v, a, dev);
      return v;
    };
    g.cc_major = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
    g.cc_minor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
    g.sm_count = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    g.l2_bytes = attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
    g.max_persisting_l2_bytes = attr(CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE);
    g.shared_mem_per_block_optin = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
    g.max_threads_per_block = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
    g.sm_clock_khz = attr(CU_DEVICE_ATTRIBUTE_CLOCK_RATE);
    g.mem_clock_khz = attr(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
    g.mem_bus_width_bits = attr(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
    inv.gpus.push_back(std::move(g));
  }
  return inv;
}

nlohmann::json ToJson(const GpuInfo& g) {
  return {
      {"index", g.index},
      {"name", g.name},
      {"uuid", g.uuid},
      {"compute_capability", std::to_string(g.cc_major) + "." + std::to_string(g.cc_minor)},
      {"arch", g.arch()},
      {"total_memory_bytes", g.total_memory_bytes},
      {"sm_count", g.sm_count},
      {"l2_bytes", g.l2_bytes},
      {"max_persisting_l2_bytes", g.max_persisting_l2_bytes},
      {"shared_mem_per_block_optin", g.shared_mem_per_block_optin},
      {"max_threads_per_block", g.max_threads_per_block},
      {"sm_clock_khz", g.sm_clock_khz},
      {"mem_clock_khz", g.mem_clock_khz},
      {"mem_bus_width_bits", g.mem_bus_width_bits},
  };
}

nlohmann::json ToJson(const GpuInventory& inv) {
  nlohmann::json gpus = nlohmann::json::array();
  for (const auto& g : inv.gpus) gpus.push_back(ToJson(g));
  nlohmann::json j = {{"gpus", gpus},
                      {"driver_version", inv.driver_version},
                      {"cuda_driver_version", inv.cuda_driver_version}};
  if (inv.gpus.empty()) j["reason"] = inv.status.ok() ? "no GPU" : inv.status.message();
  return j;
}

}  // namespace assay

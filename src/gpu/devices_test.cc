#include "gpu/devices.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "gpu/cuda_driver.h"
#include "gpu/nvml.h"

namespace assay {
namespace {

bool ExpectGpu() {
  const char* e = std::getenv("ASSAY_EXPECT_GPU");
  return e && std::string(e) == "1";
}

// Without a driver the inventory is empty with a reason, never a crash.
TEST(DevicesTest, InventoryExplainsMissingGpu) {
  GpuInventory inv = ListGpus();
  if (inv.gpus.empty()) {
    EXPECT_FALSE(inv.status.ok());
    EXPECT_FALSE(inv.status.message().empty());
    auto j = ToJson(inv);
    EXPECT_TRUE(j.contains("reason"));
    if (ExpectGpu()) FAIL() << "ASSAY_EXPECT_GPU=1 but no GPU: " << inv.status.ToString();
  } else {
    EXPECT_TRUE(inv.status.ok());
  }
}

TEST(DevicesTest, ReportsRealDeviceProperties) {
  GpuInventory inv = ListGpus();
  if (inv.gpus.empty()) {
    if (ExpectGpu()) FAIL() << inv.status.ToString();
    GTEST_SKIP() << "no GPU: " << inv.status.message();
  }
  const GpuInfo& g = inv.gpus[0];
  EXPECT_FALSE(g.name.empty());
  EXPECT_GE(g.cc_major, 7);
  EXPECT_GT(g.sm_count, 0);
  EXPECT_GT(g.l2_bytes, 1 << 20);
  EXPECT_GT(g.total_memory_bytes, 1LL << 30);
  EXPECT_EQ(g.uuid.rfind("GPU-", 0), 0u);
  EXPECT_GT(inv.cuda_driver_version, 12000);
  auto nvml = Nvml();
  ASSERT_TRUE(nvml.ok()) << nvml.status().ToString();
  auto t = (*nvml)->Read(g.uuid);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_TRUE(t->memory_total_bytes.has_value());
  EXPECT_TRUE(t->sm_clock_mhz.has_value());
}

}  // namespace
}  // namespace assay

// CPU parts of engine/transfers.h: how many bytes a job moves each way and the
// JSON a direction becomes. The copies themselves are timed in engine_test.cc.
#include "engine/transfers.h"

#include <gtest/gtest.h>

#include "common/util.h"
#include "engine/engine_test_util.h"
#include "engine/npy.h"

namespace assay {
namespace {

TEST(TransfersTest, CountsUploadedInputsAndReturnedOutputs) {
  nlohmann::json spec = engine_test::AddSpec(1000);  // x, y generated; out returned
  KernelJobInput in;
  in.spec = spec;
  in.module_image = in.reference_image = "image";
  auto generated = PlanJob(in);
  ASSERT_TRUE(generated.ok()) << generated.status().ToString();
  EXPECT_EQ(UploadBytes(*generated), 0u);
  EXPECT_EQ(OutputBytes(*generated), 4000u);

  std::string x = WriteNpy(DType::kF32, {1000}, std::string(4000, '\1'));
  in.spec["args"][0]["init"] = {{"kind", "blob"}, {"hash", Sha256Hex(x)}};
  in.spec["outputs"] = nlohmann::json::array();
  in.blobs[Sha256Hex(x)] = x;
  auto uploaded = PlanJob(in);
  ASSERT_TRUE(uploaded.ok()) << uploaded.status().ToString();
  EXPECT_EQ(UploadBytes(*uploaded), 4000u);  // element bytes, not the .npy file's
  EXPECT_EQ(OutputBytes(*uploaded), 0u);
}

TEST(TransfersTest, RateIsBytesOverDeviceTimeAndNullWhenNothingMoved) {
  TransferStats s;
  s.bytes = uint64_t{64} << 20;
  s.ms = 2.0;
  s.tensors = 1;
  nlohmann::json j = ToJson(s);
  EXPECT_EQ(j["bytes"], s.bytes);
  EXPECT_DOUBLE_EQ(j["bytes_per_s"].get<double>(), static_cast<double>(s.bytes) / 0.002);
  EXPECT_TRUE(j["pinned"].get<bool>());
  EXPECT_TRUE(ToJson(TransferStats{})["bytes_per_s"].is_null());
}

}  // namespace
}  // namespace assay

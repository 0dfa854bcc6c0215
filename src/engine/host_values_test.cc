#include "engine/host_values.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include <nlohmann/json.hpp>

namespace assay {
namespace {

TEST(HostValuesTest, HalfConversionRoundsToNearestEven) {
  EXPECT_EQ(FloatToHalf(1.0f), 0x3C00);
  EXPECT_EQ(FloatToHalf(-2.0f), 0xC000);
  EXPECT_EQ(FloatToHalf(65504.0f), 0x7BFF);
  EXPECT_EQ(FloatToHalf(1e6f), 0x7C00);
  EXPECT_EQ(FloatToHalf(5.9604645e-8f), 0x0001);  // smallest subnormal
  EXPECT_EQ(FloatToHalf(1.0f + 1.0f / 2048), 0x3C00);  // tie: to even
  EXPECT_TRUE(std::isnan(HalfToFloat(FloatToHalf(std::nanf("")))));
  for (uint32_t h = 0; h < 0x7C00; ++h) EXPECT_EQ(FloatToHalf(HalfToFloat(static_cast<uint16_t>(h))), h);
}

TEST(HostValuesTest, Bf16ConversionRoundsToNearestEven) {
  EXPECT_EQ(FloatToBf16(1.0f), 0x3F80);
  EXPECT_EQ(Bf16ToFloat(0x3F80), 1.0f);
  EXPECT_EQ(FloatToBf16(1.00390625f), 0x3F80);  // halfway: stays even
  EXPECT_TRUE(std::isnan(Bf16ToFloat(FloatToBf16(std::nanf("")))));
}

TEST(HostValuesTest, PoisonPatternsAreNaNsForFloatsAndA5ForIntegers) {
  EXPECT_EQ(PoisonBits(DType::kF32), 0x7FA5A5A5u);
  float f;
  uint32_t b = 0x7FA5A5A5;
  std::memcpy(&f, &b, 4);
  EXPECT_TRUE(std::isnan(f));
  EXPECT_TRUE(std::isnan(HalfToFloat(static_cast<uint16_t>(PoisonBits(DType::kF16)))));
  EXPECT_TRUE(std::isnan(Bf16ToFloat(static_cast<uint16_t>(PoisonBits(DType::kBF16)))));
  EXPECT_EQ(PoisonBits(DType::kI16), 0xA5A5u);
  EXPECT_EQ(PoisonBits(DType::kBool), 0xA5u);
}

TEST(HostValuesTest, CompareFollowsToleranceNaNAndInfRules) {
  const float c[] = {1.0f, 1.5f, NAN, INFINITY, NAN, 0.0f};
  const float r[] = {1.0f + 1e-6f, 1.0f, 1.0f, INFINITY, NAN, -0.0f};
  EXPECT_TRUE(CompareElement(DType::kF32, c, r, 0, 1e-5, 1e-5, false).ok);
  EXPECT_FALSE(CompareElement(DType::kF32, c, r, 1, 1e-5, 1e-5, false).ok);
  EXPECT_FALSE(CompareElement(DType::kF32, c, r, 2, 1e-5, 1e-5, false).ok);  // NaN where a number is expected
  EXPECT_TRUE(CompareElement(DType::kF32, c, r, 3, 0, 0, false).ok);
  EXPECT_FALSE(CompareElement(DType::kF32, c, r, 4, 0, 0, false).ok);       // NaN == NaN only with nan_equal
  EXPECT_TRUE(CompareElement(DType::kF32, c, r, 4, 0, 0, true).ok);
  EXPECT_TRUE(CompareElement(DType::kF32, c, r, 5, 0, 0, false).ok);
  const uint8_t bc[] = {2, 0xA5}, br[] = {1, 1};
  EXPECT_TRUE(CompareElement(DType::kBool, bc, br, 0, 0, 0, false).ok);  // truth values
  auto v = CompareElement(DType::kBool, bc, br, 1, 0, 0, false);
  EXPECT_FALSE(v.ok);
  EXPECT_TRUE(v.poisoned);
  EXPECT_EQ(ElementJson(DType::kF32, c, 2), "nan");
  EXPECT_EQ(ElementJson(DType::kF32, c, 3), "inf");
  EXPECT_EQ(ElementJson(DType::kBool, br, 0), true);
}

}  // namespace
}  // namespace assay

#include "engine/safetensors.h"

#include <gtest/gtest.h>

namespace assay {
namespace {

std::string File(const std::string& header, const std::string& payload) {
  std::string out;
  uint64_t n = header.size();
  for (int k = 0; k < 8; ++k) out += static_cast<char>((n >> (8 * k)) & 0xff);
  return out + header + payload;
}

const std::string kTwo = File(
    R"({"__metadata__": {"format": "pt"}, "x": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},)"
    R"( "m": {"dtype": "BF16", "shape": [1, 2], "data_offsets": [8, 12]}})",
    "AAAABBBBCCDD");

TEST(SafetensorsTest, SelectsTensorByName) {
  auto x = ParseSafetensors(kTwo, "x");
  ASSERT_TRUE(x.ok()) << x.status().ToString();
  EXPECT_EQ(x->dtype, DType::kF32);
  EXPECT_EQ(x->shape, std::vector<int64_t>{2});
  EXPECT_EQ(x->data, "AAAABBBB");
  auto m = ParseSafetensors(kTwo, "m");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->dtype, DType::kBF16);
  EXPECT_EQ(m->shape, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(m->data, "CCDD");
}

TEST(SafetensorsTest, EmptyNameNeedsASingleTensor) {
  auto none = ParseSafetensors(kTwo, "");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("2 tensors"), std::string::npos);
  auto one = ParseSafetensors(File(R"({"y": {"dtype": "I64", "shape": [], "data_offsets": [0, 8]}})", "12345678"), "");
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  EXPECT_EQ(one->name, "y");
  EXPECT_EQ(one->dtype, DType::kI64);
}

TEST(SafetensorsTest, RejectsBadFiles) {
  EXPECT_FALSE(ParseSafetensors(kTwo, "missing").ok());
  EXPECT_FALSE(ParseSafetensors(kTwo, "__metadata__").ok());
  EXPECT_FALSE(ParseSafetensors("short", "x").ok());
  // Offsets outside the payload, size that does not match shape, unknown dtype, header not JSON.
  EXPECT_FALSE(ParseSafetensors(File(R"({"x": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})", "AAAA"), "x").ok());
  EXPECT_FALSE(ParseSafetensors(File(R"({"x": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}})", "AAAABBBB"), "x").ok());
  EXPECT_FALSE(ParseSafetensors(File(R"({"x": {"dtype": "F8_E4M3", "shape": [8], "data_offsets": [0, 8]}})", "AAAABBBB"), "x").ok());
  EXPECT_FALSE(ParseSafetensors(File("{not json", ""), "x").ok());
  std::string huge(8, '\xff');
  EXPECT_FALSE(ParseSafetensors(huge + "{}", "x").ok());
  for (size_t n = 0; n < kTwo.size(); ++n) EXPECT_FALSE(ParseSafetensors(kTwo.substr(0, n), "m").ok()) << n;
}

}  // namespace
}  // namespace assay

#include "engine/npy.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace assay {
namespace {

std::string Header(const std::string& dict, int major = 1) {
  std::string h = "\x93NUMPY";
  h += static_cast<char>(major);
  h += '\0';
  std::string d = dict;
  size_t prefix = major == 1 ? 10 : 12;
  while ((prefix + d.size() + 1) % 64) d += ' ';
  d += '\n';
  h += static_cast<char>(d.size() & 0xff);
  h += static_cast<char>(d.size() >> 8);
  if (major != 1) h += std::string(2, '\0');
  return h + d;
}

TEST(NpyTest, ParsesWhatNumpyWrites) {
  std::vector<float> v = {1, 2, 3, 4, 5, 6};
  std::string file = Header("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }") +
                     std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4);
  auto a = ParseNpy(file);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->dtype, DType::kF32);
  EXPECT_EQ(a->shape, (std::vector<int64_t>{2, 3}));
  ASSERT_EQ(a->data.size(), 24u);
  float x;
  std::memcpy(&x, a->data.data() + 20, 4);
  EXPECT_EQ(x, 6.0f);
}

TEST(NpyTest, ParsesVersion2AndOneDimensionalAndScalarShapes) {
  std::string one = Header("{'descr': '|u1', 'fortran_order': False, 'shape': (3,), }", 2) + "abc";
  auto a = ParseNpy(one);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->dtype, DType::kU8);
  EXPECT_EQ(a->shape, std::vector<int64_t>{3});
  std::string scalar = Header("{'descr': '<i8', 'fortran_order': False, 'shape': (), }") + std::string(8, '\1');
  auto s = ParseNpy(scalar);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_TRUE(s->shape.empty());
}

TEST(NpyTest, RoundTripsEveryDtype) {
  for (DType t : {DType::kF64, DType::kF32, DType::kF16, DType::kBF16, DType::kI64, DType::kI32, DType::kI16,
                  DType::kI8, DType::kU8, DType::kBool}) {
    std::string data(static_cast<size_t>(DTypeSize(t)) * 12, '\x01');
    std::string file = WriteNpy(t, {3, 4}, data);
    EXPECT_EQ(file.size() % 64, data.size() % 64) << "data must start 64-byte aligned";
    auto a = ParseNpy(file);
    ASSERT_TRUE(a.ok()) << DTypeName(t) << ": " << a.status().ToString();
    EXPECT_EQ(a->dtype, t);
    EXPECT_EQ(a->shape, (std::vector<int64_t>{3, 4}));
    EXPECT_EQ(a->data, data);
  }
  EXPECT_EQ(NpyDescr(DType::kBF16), "<V2");
  EXPECT_EQ(NpyDescr(DType::kBool), "|b1");
}

TEST(NpyTest, RejectsFortranOrderBigEndianAndBadSizes) {
  auto fortran = ParseNpy(Header("{'descr': '<f4', 'fortran_order': True, 'shape': (1,), }") + "abcd");
  EXPECT_EQ(fortran.status().error_class(), ErrorClass::kRejected);
  EXPECT_NE(fortran.status().message().find("Fortran"), std::string::npos);
  auto big = ParseNpy(Header("{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }") + "abcd");
  EXPECT_NE(big.status().message().find("big-endian"), std::string::npos);
  auto shortdata = ParseNpy(Header("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }") + "abcd");
  EXPECT_NE(shortdata.status().message().find("need"), std::string::npos);
  auto complexd = ParseNpy(Header("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }") + "abcdefgh");
  EXPECT_FALSE(complexd.ok());
  EXPECT_FALSE(ParseNpy("not an npy file").ok());
  EXPECT_FALSE(ParseNpy(std::string("\x93NUMPY\x01\x00\xff\xff", 10)).ok());  // header past the end
}

TEST(NpyTest, SurvivesTruncatedFiles) {
  std::string file = WriteNpy(DType::kI32, {5}, std::string(20, '\0'));
  for (size_t n = 0; n < file.size(); ++n) EXPECT_FALSE(ParseNpy(file.substr(0, n)).ok()) << n;
}

}  // namespace
}  // namespace assay

#include "common/util.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace assay {
namespace {

TEST(UtilTest, Sha256KnownVector) {
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(UtilTest, RandomIdsAreDistinctAndPrefixed) {
  auto a = RandomId("j_");
  auto b = RandomId("j_");
  EXPECT_EQ(a.size(), 26u);
  EXPECT_EQ(a.rfind("j_", 0), 0u);
  EXPECT_NE(a, b);
}

TEST(UtilTest, TempDirRemovedOnDestruction) {
  std::filesystem::path p;
  {
    auto dir = TempDir::Create("assay-test-");
    ASSERT_TRUE(dir.ok()) << dir.status().ToString();
    p = dir->path();
    ASSERT_TRUE(WriteFileAtomic(p / "f", "hello").ok());
    auto back = ReadFile(p / "f");
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, "hello");
  }
  EXPECT_FALSE(std::filesystem::exists(p));
}

TEST(UtilTest, ReadFileRefusesOversize) {
  auto dir = TempDir::Create("assay-test-");
  ASSERT_TRUE(dir.ok());
  ASSERT_TRUE(WriteFileAtomic(dir->path() / "big", std::string(100, 'x')).ok());
  auto r = ReadFile(dir->path() / "big", 10);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().error_class(), ErrorClass::kRejected);
}

TEST(UtilTest, TruncateUtf8KeepsWholeSequences) {
  bool t = false;
  std::string s = "ab\xC3\xA9";  // "abé"
  EXPECT_EQ(TruncateUtf8(s, 3, &t), "ab");
  EXPECT_TRUE(t);
  EXPECT_EQ(TruncateUtf8(s, 10, &t), s);
  EXPECT_FALSE(t);
}

TEST(UtilTest, SanitizeUtf8ReplacesInvalidBytes) {
  EXPECT_EQ(SanitizeUtf8("a\xFF" "b"), "a\xEF\xBF\xBD" "b");
  EXPECT_EQ(SanitizeUtf8("plain"), "plain");
}

}  // namespace
}  // namespace assay

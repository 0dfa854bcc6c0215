#include "common/status.h"

#include <gtest/gtest.h>

namespace assay {
namespace {

TEST(StatusTest, ErrorClassNamesRoundTrip) {
  for (auto c : {ErrorClass::kRejected, ErrorClass::kCompileError, ErrorClass::kLaunchError,
                 ErrorClass::kRuntimeError, ErrorClass::kWrongResult, ErrorClass::kTimeout,
                 ErrorClass::kCancelled, ErrorClass::kInfraError}) {
    auto back = ErrorClassFromName(ErrorClassName(c));
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(*back, c);
  }
  EXPECT_FALSE(ErrorClassFromName("bogus").has_value());
}

TEST(StatusTest, RejectedCarriesField) {
  Status s = Status::Rejected("must be positive", "launch.block[0]");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.error_class(), ErrorClass::kRejected);
  EXPECT_EQ(s.field(), "launch.block[0]");
  EXPECT_EQ(s.ToString(), "rejected: must be positive (field launch.block[0])");
}

TEST(StatusTest, ResultHoldsValueOrStatus) {
  Result<int> good = 7;
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(*good, 7);
  Result<int> bad = Status::Timeout("slow");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().error_class(), ErrorClass::kTimeout);
}

}  // namespace
}  // namespace assay

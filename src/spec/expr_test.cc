#include "spec/expr.h"

#include <gtest/gtest.h>

namespace assay {
namespace {

const std::map<std::string, int64_t> kVars = {{"n", 1000}, {"m", 7}, {"zero", 0},
                                              {"big", INT64_MAX}, {"small", INT64_MIN}};

int64_t Eval(std::string_view text) {
  Result<int64_t> r = EvalExpr(text, kVars);
  EXPECT_TRUE(r.ok()) << text << ": " << r.status().message();
  return r.ok() ? *r : -999;
}

std::string Error(std::string_view text) {
  Result<int64_t> r = EvalExpr(text, kVars);
  EXPECT_FALSE(r.ok()) << text << " evaluated to " << (r.ok() ? *r : 0);
  EXPECT_EQ(r.status().error_class(), ErrorClass::kRejected);
  return r.status().message();
}

TEST(ExprTest, Arithmetic) {
  EXPECT_EQ(Eval("42"), 42);
  EXPECT_EQ(Eval("n"), 1000);
  EXPECT_EQ(Eval("1 + 2 * 3"), 7);
  EXPECT_EQ(Eval("(1 + 2) * 3"), 9);
  EXPECT_EQ(Eval("10 - 2 - 3"), 5);  // left associative
  EXPECT_EQ(Eval("100 / 10 / 5"), 2);
  EXPECT_EQ(Eval("n % m"), 1000 % 7);
  EXPECT_EQ(Eval("-7 / 2"), -3);  // truncation toward zero, as in C
  EXPECT_EQ(Eval("-7 % 2"), -1);
  EXPECT_EQ(Eval("--3"), 3);
  EXPECT_EQ(Eval("-(n)"), -1000);
  EXPECT_EQ(Eval("  n\t*  2 "), 2000);
  EXPECT_EQ(Eval("9223372036854775807"), INT64_MAX);
}

TEST(ExprTest, Functions) {
  EXPECT_EQ(Eval("ceil_div(n, 256)"), 4);
  EXPECT_EQ(Eval("ceil_div(1024, 256)"), 4);
  EXPECT_EQ(Eval("ceil_div(0, 256)"), 0);
  EXPECT_EQ(Eval("min(n, m)"), 7);
  EXPECT_EQ(Eval("max(n, m * 1000)"), 7000);
  EXPECT_EQ(Eval("max(1, min(n, ceil_div(n, m)))"), 143);
  EXPECT_EQ(Eval("ceil_div(big, 1)"), INT64_MAX);  // no overflow from a + b - 1
}

TEST(ExprTest, DivisionByZero) {
  EXPECT_NE(Error("n / zero").find("division by zero"), std::string::npos);
  EXPECT_NE(Error("n % 0").find("division by zero"), std::string::npos);
  EXPECT_NE(Error("ceil_div(n, 0)").find("b > 0"), std::string::npos);
  EXPECT_NE(Error("ceil_div(-1, 2)").find("a >= 0"), std::string::npos);
}

TEST(ExprTest, Overflow) {
  EXPECT_NE(Error("big + 1").find("overflow"), std::string::npos);
  EXPECT_NE(Error("small - 1").find("overflow"), std::string::npos);
  EXPECT_NE(Error("big * 2").find("overflow"), std::string::npos);
  EXPECT_NE(Error("-small").find("overflow"), std::string::npos);
  EXPECT_NE(Error("small / -1").find("overflow"), std::string::npos);
  EXPECT_NE(Error("small % -1").find("overflow"), std::string::npos);
  EXPECT_NE(Error("9223372036854775808").find("out of range"), std::string::npos);
}

TEST(ExprTest, SyntaxErrorsNameTheColumn) {
  EXPECT_EQ(Error("n +"), "unexpected end of expression at column 4");
  EXPECT_EQ(Error("q"), "unknown name 'q' at column 1");
  EXPECT_EQ(Error("1 + q * 2"), "unknown name 'q' at column 5");
  EXPECT_NE(Error("pow(n, 2)").find("unknown function 'pow'"), std::string::npos);
  EXPECT_NE(Error("min(n)").find("two arguments"), std::string::npos);
  EXPECT_NE(Error("min(n, m, 1)").find("two arguments"), std::string::npos);
  EXPECT_NE(Error("(n").find("expected ')'"), std::string::npos);
  EXPECT_NE(Error("n)").find("unexpected ')'"), std::string::npos);
  EXPECT_NE(Error("2n").find("after a number"), std::string::npos);
  EXPECT_NE(Error("n ** 2").find("unexpected '*'"), std::string::npos);
  EXPECT_NE(Error("1.5").find("unexpected '.'"), std::string::npos);
  EXPECT_EQ(Error(""), "empty expression");
  EXPECT_EQ(Error("   "), "empty expression");
  EXPECT_NE(Error("n +* m").find("column"), std::string::npos);
}

TEST(ExprTest, LengthAndDepthAreBounded) {
  std::string deep = std::string(40, '(') + "1" + std::string(40, ')');
  EXPECT_NE(Error(deep).find("nested too deeply"), std::string::npos);
  EXPECT_NE(Error(std::string(40, '-') + "1").find("nested too deeply"), std::string::npos);
  std::string ok_depth = std::string(20, '(') + "1" + std::string(20, ')');
  EXPECT_EQ(Eval(ok_depth), 1);
  std::string long_sum = "1";
  while (long_sum.size() <= kMaxExprLength) long_sum += "+1";
  EXPECT_NE(Error(long_sum).find("longer than"), std::string::npos);
  // A hostile input far beyond the limits fails fast, without recursion.
  EXPECT_FALSE(EvalExpr(std::string(1 << 20, '('), kVars).ok());
}

TEST(ExprTest, CheckExprValidatesNamesWithoutEvaluating) {
  std::set<std::string> names = {"n", "m"};
  EXPECT_TRUE(CheckExpr("ceil_div(n, m)", names).ok());
  EXPECT_TRUE(CheckExpr("n / 0", names).ok());  // not evaluated
  Status s = CheckExpr("n + k", names);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "unknown name 'k' at column 5");
  EXPECT_FALSE(CheckExpr("n +", names).ok());
}

}  // namespace
}  // namespace assay

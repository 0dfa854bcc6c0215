#include "compile/compile_json.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace assay {
namespace {

TEST(CompileJsonTest, RequestRoundTrips) {
  CompileRequest r;
  r.source = "__global__ void k() {}";
  r.compiler = "nvcc";
  r.arch = "sm_80";
  r.flags = {"-O3", "-DX=1"};
  r.want_sass = true;
  r.output = CompileOutputKind::kExecutable;
  nlohmann::json j = CompileRequestToJson(r);
  EXPECT_EQ(j["v"], 1);
  Result<CompileRequest> back = CompileRequestFromJson(j);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->source, r.source);
  EXPECT_EQ(back->flags, r.flags);
  EXPECT_EQ(back->output, CompileOutputKind::kExecutable);
  EXPECT_TRUE(back->want_sass);
}

TEST(CompileJsonTest, OutputRoundTripsWithStatusClass) {
  CompileOutput o;
  o.status = Status::CompileError("k.cu(3): error: x");
  o.log = "log";
  o.kernels["_Z1kv"].registers = 40;
  o.kernels["_Z1kv"].demangled = "k()";
  Result<CompileOutput> back = CompileOutputFromJson(CompileOutputToJson(o));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->status.error_class(), ErrorClass::kCompileError);
  EXPECT_EQ(back->status.message(), "k.cu(3): error: x");
  EXPECT_EQ(back->kernels.at("_Z1kv").registers, 40);
  EXPECT_EQ(back->kernels.at("_Z1kv").demangled, "k()");
}

TEST(CompileJsonTest, WrongVersionOrShapeIsRejected) {
  EXPECT_FALSE(CompileRequestFromJson(nlohmann::json{{"v", 2}, {"source", "x"}}).ok());
  EXPECT_FALSE(CompileRequestFromJson(nlohmann::json{{"v", 1}}).ok());
  EXPECT_FALSE(CompileRequestFromJson(nlohmann::json{{"v", 1}, {"source", 3}}).ok());
  EXPECT_FALSE(CompileRequestFromJson(nlohmann::json{{"v", 1}, {"source", "x"}, {"output", "elf"}}).ok());
  EXPECT_FALSE(CompileOutputFromJson(nlohmann::json::array()).ok());
}

}  // namespace
}  // namespace assay

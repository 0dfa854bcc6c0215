#include "spec/result.h"

#include <gtest/gtest.h>

namespace assay {
namespace {

TEST(ResultTest, SkeletonHasEverySection) {
  nlohmann::json r = MakeResultSkeleton("j_abc", JobKind::kCudaProgram);
  EXPECT_EQ(r["schema_version"], 1);
  EXPECT_EQ(r["job_id"], "j_abc");
  EXPECT_EQ(r["kind"], "cuda_program");
  EXPECT_EQ(r["state"], "queued");
  EXPECT_TRUE(r["error"].is_null());
  for (const char* key : {"compile", "program", "correctness", "timing", "telemetry", "gpu"}) {
    ASSERT_TRUE(r.contains(key)) << key;
    EXPECT_TRUE(r[key].is_null()) << key;
  }
  EXPECT_TRUE(r["outputs"].is_object());
  EXPECT_TRUE(r["timestamps"].is_object());
}

TEST(ResultTest, SetErrorCarriesClassFieldAndDetail) {
  nlohmann::json r = MakeResultSkeleton("j_1", JobKind::kCuda);
  SetError(r, Status::Rejected("unknown dtype 'f33'", "args[2].dtype"));
  EXPECT_EQ(r["error"]["class"], "rejected");
  EXPECT_EQ(r["error"]["message"], "unknown dtype 'f33'");
  EXPECT_EQ(r["error"]["field"], "args[2].dtype");
  EXPECT_TRUE(r["error"]["detail"].is_null());

  SetError(r, Status::RuntimeError("illegal address"), {{"cuda_error", "CUDA_ERROR_ILLEGAL_ADDRESS"}});
  EXPECT_EQ(r["error"]["class"], "runtime_error");
  EXPECT_FALSE(r["error"].contains("field"));
  EXPECT_EQ(r["error"]["detail"]["cuda_error"], "CUDA_ERROR_ILLEGAL_ADDRESS");

  SetError(r, Status::Ok());
  EXPECT_TRUE(r["error"].is_null());
}

TEST(ResultTest, SetErrorSanitizesInvalidUtf8) {
  nlohmann::json r = MakeResultSkeleton("j_1", JobKind::kCuda);
  SetError(r, Status::CompileError(std::string("bad \xff byte")));
  EXPECT_NO_THROW(r.dump());
}

TEST(ResultTest, SetStateRecordsTimestamps) {
  nlohmann::json r = MakeResultSkeleton("j_1", JobKind::kCuda);
  SetState(r, JobState::kRunning, 1'700'000'000'123);
  SetState(r, JobState::kDone, 1'700'000'001'000);
  EXPECT_EQ(r["state"], "done");
  EXPECT_EQ(r["timestamps"]["running"], "2023-11-14T22:13:20.123Z");
  EXPECT_EQ(r["timestamps"]["done"], "2023-11-14T22:13:21.000Z");
}

}  // namespace
}  // namespace assay

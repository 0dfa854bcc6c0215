#include "worker/protocol.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <thread>

#include <gtest/gtest.h>

#include "common/util.h"
#include "proc/unique_fd.h"

namespace assay {
namespace {

class ProtocolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    signal(SIGPIPE, SIG_IGN);
    int fds[2];
    ASSERT_EQ(pipe2(fds, O_CLOEXEC), 0);
    r_.Reset(fds[0]);
    w_.Reset(fds[1]);
  }
  void WriteRaw(const std::string& bytes) {
    ASSERT_EQ(write(w_.get(), bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  }
  static std::string Le32(uint32_t v) {
    std::string s(4, '\0');
    for (int i = 0; i < 4; ++i) s[i] = static_cast<char>(v >> (8 * i));
    return s;
  }
  UniqueFd r_, w_;
};

TEST_F(ProtocolTest, RoundTripsJsonAndPayload) {
  Frame f{NewMessage("run"), std::string("\0\1\2binary", 9)};
  f.json["job_id"] = "j_1";
  ASSERT_TRUE(WriteFrame(w_.get(), f).ok());
  Frame g{NewMessage("heartbeat"), {}};
  ASSERT_TRUE(WriteFrame(w_.get(), g).ok());

  auto a = ReadFrame(r_.get(), 1000);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->json, f.json);
  EXPECT_EQ(a->payload, f.payload);
  auto b = ReadFrame(r_.get(), 1000);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*MessageType(b->json), "heartbeat");
  EXPECT_TRUE(b->payload.empty());
}

TEST_F(ProtocolTest, FrameLayoutIsLittleEndianLengthsThenBytes) {
  ASSERT_TRUE(WriteFrame(w_.get(), Frame{nlohmann::json{{"v", 1}, {"type", "x"}}, "PP"}).ok());
  char buf[64];
  ssize_t n = read(r_.get(), buf, sizeof buf);
  std::string json = R"({"type":"x","v":1})";
  ASSERT_EQ(n, static_cast<ssize_t>(8 + json.size() + 2));
  EXPECT_EQ(std::string(buf, 4), Le32(static_cast<uint32_t>(json.size())));
  EXPECT_EQ(std::string(buf + 4, 4), Le32(2));
  EXPECT_EQ(std::string(buf + 8, json.size()), json);
  EXPECT_EQ(std::string(buf + 8 + json.size(), 2), "PP");
}

TEST_F(ProtocolTest, LargePayloadCrossesThePipeWhileBeingRead) {
  std::string payload(8 << 20, 'z');
  std::thread writer([&] { EXPECT_TRUE(WriteFrame(w_.get(), Frame{NewMessage("blob"), payload}).ok()); });
  auto f = ReadFrame(r_.get(), 5000);
  writer.join();
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->payload.size(), payload.size());
}

TEST_F(ProtocolTest, EofBetweenFramesIsEof) {
  w_.Reset();
  FrameError why;
  auto f = ReadFrame(r_.get(), 1000, &why);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(why, FrameError::kEof);
  EXPECT_EQ(f.status().error_class(), ErrorClass::kInfraError);
}

TEST_F(ProtocolTest, TruncatedFrameIsMalformed) {
  WriteRaw(Le32(100) + Le32(0) + "{\"v\":1");
  w_.Reset();
  FrameError why;
  auto f = ReadFrame(r_.get(), 1000, &why);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(why, FrameError::kMalformed);
  EXPECT_NE(f.status().message().find("truncated"), std::string::npos);
}

TEST_F(ProtocolTest, TruncatedHeaderIsMalformed) {
  WriteRaw("abc");
  w_.Reset();
  FrameError why;
  EXPECT_FALSE(ReadFrame(r_.get(), 1000, &why).ok());
  EXPECT_EQ(why, FrameError::kMalformed);
}

TEST_F(ProtocolTest, OversizedLengthsAreRejectedBeforeReading) {
  WriteRaw(Le32(kMaxFrameJsonBytes + 1) + Le32(0));
  FrameError why;
  auto f = ReadFrame(r_.get(), 1000, &why);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(why, FrameError::kMalformed);
  EXPECT_NE(f.status().message().find("16 MiB"), std::string::npos);

  WriteRaw(Le32(2) + Le32(kMaxFramePayloadBytes + 1));
  f = ReadFrame(r_.get(), 1000, &why);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(why, FrameError::kMalformed);
}

TEST_F(ProtocolTest, WriterRefusesOversizedJson) {
  Frame f{NewMessage("big"), {}};
  f.json["data"] = std::string(kMaxFrameJsonBytes, 'a');
  Status s = WriteFrame(w_.get(), f);
  EXPECT_EQ(s.error_class(), ErrorClass::kInfraError);
  // Nothing was written: the next frame is still readable.
  ASSERT_TRUE(WriteFrame(w_.get(), Frame{NewMessage("ok"), {}}).ok());
  auto g = ReadFrame(r_.get(), 1000);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(*MessageType(g->json), "ok");
}

TEST_F(ProtocolTest, NonObjectJsonIsMalformed) {
  WriteRaw(Le32(5) + Le32(0) + "[1,2]");
  FrameError why;
  EXPECT_FALSE(ReadFrame(r_.get(), 1000, &why).ok());
  EXPECT_EQ(why, FrameError::kMalformed);
}

TEST_F(ProtocolTest, ReadTimesOutWhenNothingArrives) {
  FrameError why;
  int64_t t0 = MonotonicMs();
  auto f = ReadFrame(r_.get(), 150, &why);
  int64_t elapsed = MonotonicMs() - t0;
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(why, FrameError::kTimeout);
  EXPECT_EQ(f.status().error_class(), ErrorClass::kTimeout);
  EXPECT_GE(elapsed, 140);
  EXPECT_LT(elapsed, 2000);
}

TEST_F(ProtocolTest, WriteTimesOutOnAFullNonBlockingPipe) {
  fcntl(w_.get(), F_SETFL, O_NONBLOCK);
  std::string big(1 << 20, 'x');  // more than a pipe holds
  Status s = WriteFrame(w_.get(), Frame{NewMessage("blob"), big}, 100);
  EXPECT_EQ(s.error_class(), ErrorClass::kInfraError);
  EXPECT_NE(s.message().find("timed out"), std::string::npos);
}

TEST_F(ProtocolTest, WriteToClosedReaderFails) {
  r_.Reset();
  Status s = WriteFrame(w_.get(), Frame{NewMessage("x"), {}});
  EXPECT_EQ(s.error_class(), ErrorClass::kInfraError);
}

TEST(ProtocolMessageTest, VersionIsChecked) {
  EXPECT_EQ(*MessageType(NewMessage("hello")), "hello");
  EXPECT_FALSE(MessageType(nlohmann::json{{"v", 2}, {"type", "hello"}}).ok());
  EXPECT_FALSE(MessageType(nlohmann::json{{"type", "hello"}}).ok());
  EXPECT_FALSE(MessageType(nlohmann::json{{"v", 1}}).ok());
}

TEST(ProtocolMessageTest, StatusRoundTrips) {
  Status s = StatusFromJson(StatusToJson(Status::RuntimeError("boom")));
  EXPECT_EQ(s.error_class(), ErrorClass::kRuntimeError);
  EXPECT_EQ(s.message(), "boom");
  EXPECT_TRUE(StatusFromJson(StatusToJson(Status::Ok())).ok());
  EXPECT_EQ(StatusFromJson(nlohmann::json{{"class", "bogus"}}).error_class(), ErrorClass::kInfraError);
}

}  // namespace
}  // namespace assay

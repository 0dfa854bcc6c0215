#include "compile/resource_usage.h"

#include <gtest/gtest.h>

namespace assay {
namespace {

// ptxas 13's words, as NVRTC puts them in the program log.
constexpr const char* kLog = R"(ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_Z2lbPf' for 'sm_90'
ptxas info    : Function properties for _Z2lbPf
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 12 registers, used 1 barriers, 400 bytes smem
ptxas info    : Compile time = 3.760 ms
ptxas info    : Function properties for _Z6helperv
ptxas         .     64 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Compiling entry function 'big' for 'sm_90'
ptxas info    : Function properties for big
ptxas         .     1296 bytes stack frame, 1492 bytes spill stores, 2080 bytes spill loads
ptxas info    : Used 24 registers, used 0 barriers, 1296 bytes cumulative stack size, 360 bytes cmem[0]
)";

TEST(ResourceUsageTest, ParsesPtxasReportPerEntry) {
  auto k = ParsePtxasLog(kLog);
  ASSERT_EQ(k.size(), 2u);
  EXPECT_EQ(k["_Z2lbPf"].registers, 12);
  EXPECT_EQ(k["_Z2lbPf"].shared_bytes, 400);
  EXPECT_EQ(k["_Z2lbPf"].local_bytes, 0);
  EXPECT_EQ(k["big"].registers, 24);
  EXPECT_EQ(k["big"].local_bytes, 1296);
  EXPECT_EQ(k["big"].spill_stores, 1492);
  EXPECT_EQ(k["big"].spill_loads, 2080);
  EXPECT_EQ(k["big"].const_bytes, 360);
}

TEST(ResourceUsageTest, MaxThreadsFollowsTheRegisterFile) {
  EXPECT_EQ(MaxThreadsPerBlock(32, 0), 1024);
  EXPECT_EQ(MaxThreadsPerBlock(64, 0), 1024);
  EXPECT_EQ(MaxThreadsPerBlock(72, 0), 896);   // 2304 regs/warp -> 28 warps
  EXPECT_EQ(MaxThreadsPerBlock(255, 0), 256);  // 8192 regs/warp -> 8 warps
  EXPECT_EQ(MaxThreadsPerBlock(32, 128), 128);
  EXPECT_EQ(MaxThreadsPerBlock(0, 0), 1024);
}

TEST(ResourceUsageTest, DemanglesTemplatesAndKeepsPlainNames) {
  EXPECT_EQ(Demangle("_Z3bigILi256EEvPf"), "void big<256>(float*)");
  EXPECT_EQ(Demangle("add"), "add");
  EXPECT_EQ(Demangle("_Zgarbage"), "_Zgarbage");
}

TEST(ResourceUsageTest, MalformedCubinYieldsNothing) {
  EXPECT_TRUE(ReadCubinKernels("").empty());
  EXPECT_TRUE(ReadCubinKernels("\x7f" "ELF garbage that is far too short").empty());
  std::string junk(4096, '\xff');
  junk.replace(0, 4, "\x7f" "ELF");
  EXPECT_TRUE(ReadCubinKernels(junk).empty());
}

}  // namespace
}  // namespace assay

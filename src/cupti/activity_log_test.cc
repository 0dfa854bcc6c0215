// The injection library's writer against the report's reader: what
// libassay_cupti.so writes must be exactly what kernel_report.cc accepts.
#include "cupti/activity_log.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "common/util.h"
#include "cupti/kernel_report.h"

namespace assay::cupti {
namespace {

using nlohmann::json;

KernelRecord Rec(uint64_t start_ns, uint64_t end_ns, uint32_t stream = 7) {
  KernelRecord r;
  r.grid[0] = 8;
  r.grid[1] = 2;
  r.grid[2] = 1;
  r.block[0] = 64;
  r.block[1] = 2;
  r.block[2] = 1;
  r.static_smem_bytes = 1024;
  r.registers = 16;
  r.stream = stream;
  r.correlation = 5;
  r.start_ns = start_ns;
  r.end_ns = end_ns;
  return r;
}

class ActivityLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = TempDir::Create("cupti_log_");
    ASSERT_TRUE(d.ok());
    dir_.emplace(std::move(*d));
    path_ = (dir_->path() / "cupti.json").string();
  }
  json ReadDoc() {
    auto text = ReadFile(path_);
    EXPECT_TRUE(text.ok());
    return json::parse(*text);
  }
  std::optional<TempDir> dir_;
  std::string path_;
};

TEST_F(ActivityLogTest, WrittenFileRoundTripsThroughTheReport) {
  ActivityLog log(100);
  log.AddKernel("_ZN5probe5scaleEPffi", Rec(1000, 3000));
  log.AddKernel("_ZN5probe5scaleEPffi", Rec(5000, 6000));
  log.AddKernel("triton_poi_fused_add_0", Rec(2000, 4000, 13));
  log.AddCopy({"HtoD", 4096, 7, 0, 1, 500, 900});
  log.AddDropped(2);
  std::string error;
  ASSERT_TRUE(log.WriteJsonFile(path_, true, &error)) << error;

  json doc = ReadDoc();
  EXPECT_EQ(doc["v"], 1);
  EXPECT_EQ(doc["complete"], true);
  ASSERT_EQ(doc["names"].size(), 2u);
  EXPECT_EQ(doc["names"][0]["name"], "probe::scale(float*, float, int)");
  EXPECT_EQ(doc["names"][0]["mangled"], "_ZN5probe5scaleEPffi");
  EXPECT_FALSE(doc["names"][1].contains("mangled"));  // not mangled: one spelling

  auto r = KernelReportFromFile(path_);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ((*r)["kernels"].size(), 3u);
  EXPECT_EQ((*r)["kernels"][1]["name"], "triton_poi_fused_add_0");
  EXPECT_EQ((*r)["kernels"][0]["grid"], json({8, 2, 1}));
  EXPECT_EQ((*r)["kernels"][0]["static_smem_bytes"], 1024);
  EXPECT_DOUBLE_EQ((*r)["gpu_time_ms"].get<double>(), 0.005);   // 2000 + 1000 + 2000 ns
  EXPECT_DOUBLE_EQ((*r)["gpu_busy_ms"].get<double>(), 0.004);   // [1000,4000) + [5000,6000)
  EXPECT_EQ((*r)["kernel_records_dropped"], 2);
  EXPECT_EQ((*r)["memcpy_totals"][0]["bytes"], 4096);
  EXPECT_FALSE(std::filesystem::exists(path_ + ".tmp." + std::to_string(::getpid())));
}

TEST_F(ActivityLogTest, RecordsPastTheCapAreCountedNotKept) {
  ActivityLog log(2);
  for (int i = 0; i < 5; ++i) log.AddKernel("k", Rec(100 * (i + 1), 100 * (i + 1) + 50));
  ASSERT_TRUE(log.WriteJsonFile(path_, true, nullptr));
  json doc = ReadDoc();
  EXPECT_EQ(doc["kernels"].size(), 2u);
  EXPECT_EQ(doc["truncated"], true);
  EXPECT_EQ(doc["truncated_kernels"], 3);
  auto r = KernelReportFromFile(path_);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)["kernel_records_truncated"], true);
}

TEST_F(ActivityLogTest, UntimedRecordsAreCountedAsInvalid) {
  ActivityLog log(10);
  log.AddKernel("k", Rec(0, 0));        // CUPTI could not time it
  log.AddKernel("k", Rec(500, 400));    // ends before it starts
  log.AddKernel("k", Rec(500, 600));
  ASSERT_TRUE(log.WriteJsonFile(path_, false, nullptr));
  json doc = ReadDoc();
  EXPECT_EQ(doc["invalid"], 2);
  EXPECT_EQ(doc["kernels"].size(), 1u);
  EXPECT_EQ(doc["complete"], false);
}

TEST_F(ActivityLogTest, NamesThatNeedEscapingStayValidJson) {
  ActivityLog log(10);
  log.AddKernel("we\"ird\\na\nme\x01\xff", Rec(1, 2));
  log.AddWarning("line\nbreak");
  ASSERT_TRUE(log.WriteJsonFile(path_, true, nullptr));
  json doc = ReadDoc();
  EXPECT_EQ(doc["names"][0]["name"], "we\"ird\\na\nme\x01?");
  EXPECT_EQ(doc["warnings"][0], "line\nbreak");
  EXPECT_TRUE(KernelReportFromFile(path_).ok());
}

TEST_F(ActivityLogTest, ErrorDocumentReachesTheReportAsAnError) {
  ASSERT_TRUE(WriteErrorJsonFile(path_, "cannot load libcupti", nullptr));
  auto r = KernelReportFromFile(path_);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("cannot load libcupti"), std::string::npos);
}

TEST_F(ActivityLogTest, UnwritableDirectoryIsReportedNotThrown) {
  ActivityLog log(10);
  std::string error;
  EXPECT_FALSE(log.WriteJsonFile("/nonexistent-dir/cupti.json", true, &error));
  EXPECT_NE(error.find("/nonexistent-dir"), std::string::npos);
}

// CUPTI delivers buffers on its own thread while another thread may write a
// snapshot: every file written must parse, and no record may be lost.
TEST_F(ActivityLogTest, ConcurrentAddsAndWritesStayConsistent) {
  ActivityLog log(1000000);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&log, t] {
      for (uint64_t i = 1; i <= 2000; ++i) log.AddKernel(t % 2 ? "a" : "b", Rec(i * 10, i * 10 + 5, t));
    });
  }
  for (int w = 0; w < 5; ++w) {
    ASSERT_TRUE(log.WriteJsonFile(path_, false, nullptr));
    EXPECT_TRUE(KernelReportFromFile(path_).ok());
  }
  for (auto& th : threads) th.join();
  ASSERT_TRUE(log.WriteJsonFile(path_, true, nullptr));
  auto r = KernelReportFromFile(path_);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)["kernel_count"], 8000);
  EXPECT_EQ(log.kernel_count(), 8000u);
}

// Marks are written in every document and cut a phase out of the record.
TEST_F(ActivityLogTest, MarksRoundTripIntoAPhaseSummary) {
  ActivityLog log(100);
  log.AddKernel("before", Rec(1000, 2000));
  log.AddMark("timed.begin", 2500);
  log.AddKernel("_ZN5probe5scaleEPffi", Rec(3000, 4000));
  log.AddKernel("assay_l2_flush", Rec(4000, 4500));
  log.AddKernel("_ZN5probe5scaleEPffi", Rec(5000, 7000));
  log.AddMark("timed.end", 8000);
  log.AddKernel("after", Rec(9000, 9100));
  log.AddMark("untimed", 0);  // no timestamp: dropped, counted
  log.AddMarksDropped(2);      // taken before CUPTI was up
  ASSERT_TRUE(log.WriteJsonFile(path_, false, nullptr));  // a snapshot carries them too
  json doc = ReadDoc();
  ASSERT_EQ(doc["marks"].size(), 2u);
  EXPECT_EQ(doc["marks"][0], json({{"label", "timed.begin"}, {"ts_ns", 2500}}));
  EXPECT_EQ(doc["marks_dropped"], 3);

  auto s = SummarizePhase(path_, "timed.begin", "timed.end", {"assay_l2_flush"});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->kernels, 2u);
  EXPECT_EQ(s->excluded_kernels, 1u);
  EXPECT_DOUBLE_EQ(s->kernel_sum_ms, 0.003);
  ASSERT_EQ(s->top.size(), 1u);
  EXPECT_EQ(s->top[0].name, "probe::scale(float*, float, int)");
  EXPECT_EQ(s->marks_dropped, 3u);
  EXPECT_FALSE(s->complete);
  // Excluding by the mangled spelling works as well.
  auto m = SummarizePhase(path_, "timed.begin", "timed.end", {"_ZN5probe5scaleEPffi"});
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->kernels, 1u);
}

TEST_F(ActivityLogTest, MarkLabelsAreSanitisedAndMarksCapped) {
  EXPECT_EQ(SanitizeMarkLabel(nullptr), "");
  EXPECT_EQ(SanitizeMarkLabel("a\tb\"c\xc3\xa9"), "a_b\"c__");
  EXPECT_EQ(SanitizeMarkLabel(std::string(100, 'x').c_str()), std::string(kMaxMarkLabelBytes, 'x'));
  ActivityLog log(10);
  for (size_t i = 0; i < kMaxMarks + 5; ++i) log.AddMark("m", 100 + i);
  log.AddMark("q\"\\\n", 1);
  ASSERT_TRUE(log.WriteJsonFile(path_, true, nullptr));
  json doc = ReadDoc();
  EXPECT_EQ(doc["marks"].size(), kMaxMarks);
  EXPECT_EQ(doc["marks_dropped"], 6);
  EXPECT_TRUE(KernelReportFromFile(path_).ok());
  // A label that needs JSON escaping survives the round trip.
  ActivityLog small(10);
  small.AddMark("q\"\\", 1);
  ASSERT_TRUE(small.WriteJsonFile(path_, true, nullptr));
  EXPECT_EQ(ReadDoc()["marks"][0]["label"], "q\"\\");
}

TEST(JsonQuoteTest, EscapesControlCharactersAndQuotes) {
  EXPECT_EQ(JsonQuote("a\"b"), "\"a\\\"b\"");
  EXPECT_EQ(JsonQuote(std::string("\x1f", 1)), "\"\\u001f\"");
  EXPECT_EQ(JsonQuote("\xc3\xa9"), "\"??\"");
}

}  // namespace
}  // namespace assay::cupti

#include "cupti/kernel_report.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "common/util.h"

namespace assay {
namespace {

using nlohmann::json;

json KernelRec(int name_id, uint64_t start_ns, uint64_t end_ns, int stream = 7) {
  return {{"name_id", name_id},     {"grid", {4, 2, 1}},     {"block", {128, 1, 1}},
          {"static_smem_bytes", 0}, {"dynamic_smem_bytes", 256}, {"registers", 32},
          {"stream", stream},       {"device", 0},           {"context", 1},
          {"correlation", 100},     {"start_ns", start_ns},  {"end_ns", end_ns},
          {"duration_ns", end_ns - start_ns}};
}

json Doc(json kernels, json memcpy = json::array()) {
  return {{"v", 1},
          {"pid", 42},
          {"complete", true},
          {"max_records", 1000000},
          {"names", {{{"name", "void fast(int*)"}, {"mangled", "_Z4fastPi"}}, {{"name", "slow"}}}},
          {"kernels", std::move(kernels)},
          {"memcpy", std::move(memcpy)},
          {"warnings", json::array()},
          {"dropped", 3},
          {"invalid", 0},
          {"truncated", false},
          {"truncated_kernels", 0},
          {"truncated_memcpy", 0}};
}

constexpr uint64_t kMs = 1000000;  // ns

TEST(KernelReportTest, ListsLaunchesByStartTimeRelativeToTheFirst) {
  json doc = Doc({KernelRec(1, 50 * kMs, 53 * kMs), KernelRec(0, 10 * kMs, 11 * kMs)});
  auto r = KernelReportFromText(doc.dump());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const json& k = (*r)["kernels"];
  ASSERT_EQ(k.size(), 2u);
  EXPECT_EQ(k[0]["name"], "void fast(int*)");
  EXPECT_DOUBLE_EQ(k[0]["start_ms"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(k[0]["duration_ms"].get<double>(), 1.0);
  EXPECT_EQ(k[1]["name"], "slow");
  EXPECT_DOUBLE_EQ(k[1]["start_ms"].get<double>(), 40.0);
  EXPECT_EQ(k[1]["grid"], json({4, 2, 1}));
  EXPECT_EQ(k[1]["block"], json({128, 1, 1}));
  EXPECT_EQ(k[1]["dynamic_smem_bytes"], 256);
  EXPECT_EQ(k[1]["registers"], 32);
  EXPECT_EQ(k[1]["stream"], 7);
  EXPECT_EQ(k[1]["correlation"], 100);
  EXPECT_EQ((*r)["kernel_count"], 2);
  EXPECT_EQ((*r)["kernels_truncated"], false);
  EXPECT_EQ((*r)["kernels_complete"], true);
  EXPECT_EQ((*r)["kernel_records_dropped"], 3);
}

TEST(KernelReportTest, TotalsPerNameSortedByTotalTime) {
  // fast: 1, 2, 3, 10 ms (4 launches, total 16); slow: 20 ms once.
  json doc = Doc({KernelRec(0, 0, 1 * kMs), KernelRec(0, 100 * kMs, 102 * kMs), KernelRec(0, 200 * kMs, 203 * kMs),
                  KernelRec(0, 300 * kMs, 310 * kMs), KernelRec(1, 400 * kMs, 420 * kMs)});
  auto r = KernelReportFromText(doc.dump());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const json& t = (*r)["kernel_totals"];
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0]["name"], "slow");
  EXPECT_EQ(t[0]["launches"], 1);
  EXPECT_DOUBLE_EQ(t[0]["median_ms"].get<double>(), 20.0);
  EXPECT_EQ(t[1]["name"], "void fast(int*)");
  EXPECT_EQ(t[1]["launches"], 4);
  EXPECT_DOUBLE_EQ(t[1]["total_ms"].get<double>(), 16.0);
  EXPECT_DOUBLE_EQ(t[1]["mean_ms"].get<double>(), 4.0);
  EXPECT_DOUBLE_EQ(t[1]["min_ms"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(t[1]["max_ms"].get<double>(), 10.0);
  EXPECT_DOUBLE_EQ(t[1]["median_ms"].get<double>(), 2.5);  // even count: mean of the middle two
  EXPECT_DOUBLE_EQ((*r)["gpu_time_ms"].get<double>(), 36.0);
  EXPECT_DOUBLE_EQ((*r)["gpu_busy_ms"].get<double>(), 36.0);  // nothing overlaps
}

TEST(KernelReportTest, BusyTimeCountsOverlappingStreamsOnce) {
  // [0,10) and [5,15) overlap on two streams; [12,14) nests inside; [20,30)
  // stands alone; [30,31) touches it. Union: [0,15) + [20,31) = 26 ms.
  json doc = Doc({KernelRec(0, 0, 10 * kMs, 7), KernelRec(1, 5 * kMs, 15 * kMs, 13),
                  KernelRec(0, 12 * kMs, 14 * kMs, 7), KernelRec(1, 20 * kMs, 30 * kMs, 13),
                  KernelRec(0, 30 * kMs, 31 * kMs, 7)});
  auto r = KernelReportFromText(doc.dump());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_DOUBLE_EQ((*r)["gpu_time_ms"].get<double>(), 33.0);
  EXPECT_DOUBLE_EQ((*r)["gpu_busy_ms"].get<double>(), 26.0);
}

TEST(KernelReportTest, ListIsCappedButTotalsCoverEveryLaunch) {
  json ks = json::array();
  for (int i = 0; i < 5; ++i) ks.push_back(KernelRec(0, (10 + i) * kMs, (10 + i) * kMs + kMs / 2));
  KernelReportOptions opts;
  opts.max_kernels = 2;
  auto r = KernelReportFromText(Doc(ks).dump(), opts);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)["kernels"].size(), 2u);
  EXPECT_EQ((*r)["kernels_truncated"], true);
  EXPECT_EQ((*r)["kernel_count"], 5);
  EXPECT_EQ((*r)["kernel_totals"][0]["launches"], 5);
  EXPECT_DOUBLE_EQ((*r)["gpu_time_ms"].get<double>(), 2.5);
}

TEST(KernelReportTest, MemcpyTotalsByKind) {
  json copies = {{{"kind", "HtoD"}, {"bytes", 1000}, {"stream", 7}, {"device", 0}, {"correlation", 1},
                  {"start_ns", 0}, {"end_ns", kMs}, {"duration_ns", kMs}},
                 {{"kind", "HtoD"}, {"bytes", 24}, {"stream", 7}, {"device", 0}, {"correlation", 2},
                  {"start_ns", 2 * kMs}, {"end_ns", 4 * kMs}, {"duration_ns", 2 * kMs}},
                 {{"kind", "memset"}, {"bytes", 8}, {"stream", 7}, {"device", 0}, {"correlation", 3},
                  {"start_ns", 5 * kMs}, {"end_ns", 5 * kMs + 1000}, {"duration_ns", 1000}}};
  auto r = KernelReportFromText(Doc(json::array(), copies).dump());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const json& m = (*r)["memcpy_totals"];
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0]["kind"], "HtoD");
  EXPECT_EQ(m[0]["count"], 2);
  EXPECT_EQ(m[0]["bytes"], 1024);
  EXPECT_DOUBLE_EQ(m[0]["total_ms"].get<double>(), 3.0);
  EXPECT_EQ(m[1]["kind"], "memset");
  EXPECT_EQ((*r)["kernel_count"], 0);
  EXPECT_DOUBLE_EQ((*r)["gpu_busy_ms"].get<double>(), 0.0);
}

TEST(KernelReportTest, MissingFileMeansNoCudaActivity) {
  auto dir = TempDir::Create("cupti_report_");
  ASSERT_TRUE(dir.ok());
  auto r = KernelReportFromFile(dir->path() / "cupti.json");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, EmptyKernelReport());
  EXPECT_TRUE((*r)["kernels"].empty());
}

TEST(KernelReportTest, MalformedDocumentsAreErrors) {
  const json good = Doc({KernelRec(0, 0, kMs)});
  const std::string text = good.dump();
  struct Case {
    const char* what;
    std::string text;
  };
  json bad_version = good;
  bad_version["v"] = 2;
  json backwards = Doc({KernelRec(0, 5 * kMs, kMs)});
  json bad_name = Doc({KernelRec(9, 0, kMs)});
  json negative = Doc({KernelRec(0, 0, kMs)});
  negative["kernels"][0]["start_ns"] = -5;
  json bad_grid = Doc({KernelRec(0, 0, kMs)});
  bad_grid["kernels"][0]["grid"] = {1, 2};
  json no_names = good;
  no_names.erase("names");
  json string_field = Doc({KernelRec(0, 0, kMs)});
  string_field["kernels"][0]["stream"] = "7";
  const Case cases[] = {
      {"empty", ""},
      {"not json", "kernels: many"},
      {"cut short", text.substr(0, text.size() / 2)},
      {"array root", "[1,2]"},
      {"wrong version", bad_version.dump()},
      {"ends before start", backwards.dump()},
      {"name_id out of range", bad_name.dump()},
      {"negative time", negative.dump()},
      {"grid of 2", bad_grid.dump()},
      {"no names", no_names.dump()},
      {"string stream", string_field.dump()},
  };
  for (const Case& c : cases) {
    auto r = KernelReportFromText(c.text);
    EXPECT_FALSE(r.ok()) << c.what;
    if (!r.ok()) {
      EXPECT_EQ(r.status().error_class(), ErrorClass::kInfraError) << c.what;
      EXPECT_FALSE(r.status().message().empty()) << c.what;
    }
  }
  EXPECT_TRUE(KernelReportFromText(text).ok());
}

TEST(KernelReportTest, LibraryErrorDocumentIsAnErrorWithItsMessage) {
  auto r = KernelReportFromText(R"({"v":1,"pid":9,"error":"cannot load libcupti (tried x): nope"})");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("cannot load libcupti"), std::string::npos);
}

TEST(KernelReportTest, OversizedFileIsRefused) {
  auto dir = TempDir::Create("cupti_report_");
  ASSERT_TRUE(dir.ok());
  const auto path = dir->path() / "cupti.json";
  ASSERT_TRUE(WriteFileAtomic(path, Doc({KernelRec(0, 0, kMs)}).dump()).ok());
  KernelReportOptions opts;
  opts.max_file_bytes = 64;
  auto r = KernelReportFromFile(path, opts);
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(KernelReportFromFile(path).ok());
}

TEST(KernelReportTest, AttachMergesIntoProgramAndKeepsErrorsOutOfTheJobStatus) {
  auto dir = TempDir::Create("cupti_report_");
  ASSERT_TRUE(dir.ok());
  const auto path = dir->path() / "cupti.json";
  ASSERT_TRUE(WriteFileAtomic(path, Doc({KernelRec(1, 0, 2 * kMs)}).dump()).ok());
  json program = {{"exit_code", 0}, {"stdout", "hi"}};
  AttachKernelReport(path, &program);
  EXPECT_EQ(program["exit_code"], 0);
  EXPECT_EQ(program["kernels"].size(), 1u);
  EXPECT_EQ(program["kernel_totals"][0]["name"], "slow");
  EXPECT_DOUBLE_EQ(program["gpu_time_ms"].get<double>(), 2.0);
  EXPECT_FALSE(program.contains("kernels_error"));

  ASSERT_TRUE(WriteFileAtomic(path, "{\"v\":1,\"kernels\":[{\"name_id\":").ok());
  json broken = {{"exit_code", 0}};
  AttachKernelReport(path, &broken);
  EXPECT_TRUE(broken["kernels"].empty());
  EXPECT_DOUBLE_EQ(broken["gpu_time_ms"].get<double>(), 0.0);
  ASSERT_TRUE(broken.contains("kernels_error"));
  EXPECT_NE(broken["kernels_error"].get<std::string>().find("not valid JSON"), std::string::npos);
}

TEST(KernelReportTest, IncompleteSnapshotIsFlagged) {
  json doc = Doc({KernelRec(0, 0, kMs)});
  doc["complete"] = false;
  doc["truncated_kernels"] = 12;
  doc["warnings"] = {"no memset records: x"};
  auto r = KernelReportFromText(doc.dump());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)["kernels_complete"], false);
  EXPECT_EQ((*r)["kernel_records_truncated"], true);
  EXPECT_EQ((*r)["kernel_warnings"], json({"no memset records: x"}));
}

}  // namespace
}  // namespace assay

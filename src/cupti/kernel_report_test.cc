#include "cupti/kernel_report.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <climits>
#include <filesystem>
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

// ---- SummarizePhase -------------------------------------------------------

// testdata/ is copied next to this binary at configure time, so the build
// folder can travel; the source tree is the fallback.
std::filesystem::path TestData(const std::string& name) {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n > 0) {
    auto p = std::filesystem::path(std::string(buf, static_cast<size_t>(n))).parent_path() / "testdata" / name;
    if (std::filesystem::exists(p)) return p;
  }
  return std::filesystem::path(ASSAY_SOURCE_DIR) / "src/cupti/testdata" / name;
}

// phase_marks.json: marks listed out of time order (the summary sorts them);
// "timed.begin" at 10 us and 60 us, "timed.end" at 50 us and 70 us.
// Between 10 and 50 us: gemm at [10,12) (starts on the mark), an excluded
// flush at [12,13), gemm [13,17), reduce [14,16) on a second stream (overlaps),
// reduce [20,21), gemm [50,53) (starts on the end mark: in, whole duration).
// Outside: gemm at 9 us, reduce at 50.001 us, gemm at 61 us.
TEST(PhaseSummaryTest, SumsKernelsBetweenTheFirstBeginAndTheNextEnd) {
  auto r = SummarizePhase(TestData("phase_marks.json"), "timed.begin", "timed.end", {"assay_l2_flush"});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const PhaseSummary& s = *r;
  EXPECT_TRUE(s.begin_found);
  EXPECT_TRUE(s.end_found);
  EXPECT_EQ(s.begin_ns, 10000u);
  EXPECT_EQ(s.end_ns, 50000u);
  EXPECT_DOUBLE_EQ(s.span_ms, 0.04);
  EXPECT_EQ(s.kernels, 5u);
  EXPECT_EQ(s.excluded_kernels, 1u);
  EXPECT_DOUBLE_EQ(s.kernel_sum_ms, 0.012);   // 2 + 4 + 2 + 1 + 3 us
  EXPECT_DOUBLE_EQ(s.kernel_busy_ms, 0.010);  // [10,12) [13,17) [20,21) [50,53)
  ASSERT_EQ(s.top.size(), 2u);
  EXPECT_EQ(s.top[0].name, "void gemm<float>(float*)");
  EXPECT_EQ(s.top[0].launches, 3u);
  EXPECT_DOUBLE_EQ(s.top[0].total_ms, 0.009);
  EXPECT_EQ(s.top[1].name, "reduce");
  EXPECT_EQ(s.top[1].launches, 2u);
  EXPECT_DOUBLE_EQ(s.top[1].total_ms, 0.003);
  EXPECT_TRUE(s.complete);
  EXPECT_EQ(s.records_dropped, 0u);
  EXPECT_FALSE(s.records_truncated);
  EXPECT_EQ(s.marks_dropped, 2u);

  nlohmann::json j = ToJson(s);
  EXPECT_EQ(j["kernels"], 5);
  EXPECT_EQ(j["top"][0]["launches"], 3);
  EXPECT_EQ(j["marks_dropped"], 2);
  EXPECT_DOUBLE_EQ(j["kernel_busy_ms"].get<double>(), 0.010);
}

TEST(PhaseSummaryTest, WithoutExclusionsTheFlushCounts) {
  auto r = SummarizePhase(TestData("phase_marks.json"), "timed.begin", "timed.end", {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->kernels, 6u);
  EXPECT_EQ(r->excluded_kernels, 0u);
  EXPECT_DOUBLE_EQ(r->kernel_sum_ms, 0.013);
  EXPECT_DOUBLE_EQ(r->kernel_busy_ms, 0.011);  // the flush fills [12,13)
}

TEST(PhaseSummaryTest, ExcludesByMangledNameAndCapsTheTopList) {
  auto r = SummarizePhase(TestData("phase_marks.json"), "timed.begin", "timed.end", {"_Z4gemmIfEvPf", "assay_l2_flush"},
                          /*top_n=*/1);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->kernels, 2u);
  EXPECT_EQ(r->excluded_kernels, 4u);
  ASSERT_EQ(r->top.size(), 1u);
  EXPECT_EQ(r->top[0].name, "reduce");
}

TEST(PhaseSummaryTest, EndIsTheFirstEndMarkAfterTheBegin) {
  // Begin at the first timed.end (50 us), end at the next timed.begin (60 us).
  auto r = SummarizePhase(TestData("phase_marks.json"), "timed.end", "timed.begin", {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->begin_ns, 50000u);
  EXPECT_EQ(r->end_ns, 60000u);
  EXPECT_EQ(r->kernels, 2u);  // gemm at 50 us, reduce at 50.001 us
  // The same label for both: the end is the next mark so named.
  auto same = SummarizePhase(TestData("phase_marks.json"), "timed.begin", "timed.begin", {});
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->begin_ns, 10000u);
  EXPECT_EQ(same->end_ns, 60000u);
}

TEST(PhaseSummaryTest, MissingMarksAreReportedNotErrors) {
  auto no_end = SummarizePhase(TestData("phase_marks.json"), "timed.begin", "never", {});
  ASSERT_TRUE(no_end.ok()) << no_end.status().ToString();
  EXPECT_TRUE(no_end->begin_found);
  EXPECT_FALSE(no_end->end_found);
  EXPECT_EQ(no_end->kernels, 0u);
  EXPECT_DOUBLE_EQ(no_end->kernel_sum_ms, 0.0);
  // An end mark only before the begin does not count.
  auto backwards = SummarizePhase(TestData("phase_marks.json"), "timed.end", "early", {});
  ASSERT_TRUE(backwards.ok());
  EXPECT_TRUE(backwards->begin_found);
  EXPECT_FALSE(backwards->end_found);
  auto no_begin = SummarizePhase(TestData("phase_marks.json"), "never", "timed.end", {});
  ASSERT_TRUE(no_begin.ok());
  EXPECT_FALSE(no_begin->begin_found);
  EXPECT_FALSE(no_begin->end_found);
  // A document without any marks (written before marks existed) is valid.
  json doc = Doc({KernelRec(0, 0, kMs)});
  auto old = SummarizePhaseText(doc.dump(), "a", "b", {});
  ASSERT_TRUE(old.ok()) << old.status().ToString();
  EXPECT_FALSE(old->begin_found);
  EXPECT_EQ(old->records_dropped, 3u);
}

TEST(PhaseSummaryTest, ErrorsAreInfraErrors) {
  auto dir = TempDir::Create("cupti_phase_");
  ASSERT_TRUE(dir.ok());
  auto missing = SummarizePhase(dir->path() / "cupti.json", "a", "b", {});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().error_class(), ErrorClass::kInfraError);
  EXPECT_NE(missing.status().message().find("missing"), std::string::npos);

  auto lib_error = SummarizePhaseText(R"({"v":1,"pid":9,"error":"cannot load libcupti"})", "a", "b", {});
  ASSERT_FALSE(lib_error.ok());
  EXPECT_NE(lib_error.status().message().find("cannot load libcupti"), std::string::npos);

  json bad_mark = Doc(json::array());
  bad_mark["marks"] = {{{"label", 5}, {"ts_ns", 1}}};
  EXPECT_FALSE(SummarizePhaseText(bad_mark.dump(), "a", "b", {}).ok());
  bad_mark["marks"] = {{{"label", "a"}, {"ts_ns", -1}}};
  EXPECT_FALSE(SummarizePhaseText(bad_mark.dump(), "a", "b", {}).ok());
  // The report of a file with marks is unchanged by them.
  json with_marks = Doc({KernelRec(0, 0, kMs)});
  with_marks["marks"] = {{{"label", "a"}, {"ts_ns", 1}}};
  auto report = KernelReportFromText(with_marks.dump());
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ((*report)["kernel_count"], 1);
}

TEST(PhaseSummaryTest, IncompleteFilesSaySo) {
  json doc = Doc({KernelRec(0, 10, 20)});
  doc["complete"] = false;
  doc["truncated_kernels"] = 4;
  doc["marks"] = {{{"label", "b"}, {"ts_ns", 5}}, {{"label", "e"}, {"ts_ns", 30}}};
  auto r = SummarizePhaseText(doc.dump(), "b", "e", {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->kernels, 1u);
  EXPECT_FALSE(r->complete);
  EXPECT_TRUE(r->records_truncated);
}

}  // namespace
}  // namespace assay

// The worker side of the Python kinds without torch or a GPU: request building
// (python_request.h), result mapping and the two clocks (python_result.h), and
// the runner itself against a small fake harness run by a real interpreter
// (the real harness is exercised by tests/python_server_test.cc).
#include "worker/python_runner.h"

#include <sys/stat.h>

#include <fstream>

#include <gtest/gtest.h>

#include "common/util.h"
#include "engine/npy.h"
#include "proc/sandbox.h"
#include "worker/python_request.h"
#include "worker/python_result.h"

namespace assay {
namespace {

using nlohmann::json;

JobSpec Parse(const json& doc) {
  auto r = ParseJobSpecJson(doc);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : JobSpec{};
}

json TorchDoc() {
  return {{"kind", "torch_cuda"},
          {"source", {{"text", "class Model: pass\n"}}},
          {"reference", {{"kind", "torch"}, {"source", {{"text", "class Ref: pass\n"}}}, {"entry", "Ref"}}},
          {"args",
           {{{"name", "x"}, {"role", "in"}, {"dtype", "f32"}, {"shape", {"n", 2}},
             {"init", {{"kind", "uniform"}, {"low", -1}, {"high", 1}}}},
            {{"name", "n"}, {"role", "scalar"}, {"dtype", "i32"}, {"value", 8}},
            {{"name", "k"}, {"role", "scalar"}, {"dtype", "bool"}, {"value", true}},
            {{"name", "acc"}, {"role", "inout"}, {"dtype", "f16"}, {"shape", {"n"}},
             {"init", {{"kind", "int"}, {"low", 0}, {"high", 5}}}},
            {{"name", "y"}, {"role", "out"}, {"dtype", "f32"}, {"shape", {"n * 2"}},
             {"tolerance", {{"atol", 0.5}, {"rtol", 0.25}}}}}},
          {"correctness", {{"trials", 2}, {"atol", {{"f16", 0.125}}}}},
          {"timing", {{"mode", "hot"}, {"min_samples", 7}}},
          {"outputs", {"y"}}};
}

TEST(PythonRequestTest, ArgsComeResolvedWithTolerancesFilledIn) {
  JobSpec spec = Parse(TorchDoc());
  PythonRequestOptions o;
  o.l2_bytes = 52428800;
  o.cupti_marks = true;
  auto r = BuildPythonRequest(spec, "/j", o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const json& req = *r;
  EXPECT_EQ(req["v"], 1);
  EXPECT_EQ(req["mode"], "run");
  EXPECT_EQ(req["kind"], "torch_cuda");
  EXPECT_EQ(req["device"], "cuda");
  EXPECT_EQ(req["candidate"], json({{"kind", "torch_cuda"}, {"path", "/j/candidate.py"}, {"entry", "Model"}}));
  EXPECT_EQ(req["reference"], json({{"kind", "torch"}, {"path", "/j/reference.py"}, {"entry", "Ref"}}));
  EXPECT_EQ(req["problem"], nullptr);
  const json& a = req["args"];
  ASSERT_EQ(a.size(), 5u);
  EXPECT_EQ(a[0]["shape"], json({8, 2}));  // "n" resolved
  EXPECT_EQ(a[0]["init"], json({{"kind", "uniform"}, {"a", -1.0}, {"b", 1.0}}));
  EXPECT_FALSE(a[0].contains("atol"));      // inputs are compared bit for bit
  EXPECT_EQ(a[1], json({{"name", "n"}, {"role", "scalar"}, {"dtype", "i32"}, {"value", 8}}));
  EXPECT_EQ(a[2]["value"], true);
  EXPECT_EQ(a[3]["init"], json({{"kind", "int"}, {"a", 0}, {"b", 5}}));
  EXPECT_EQ(a[3]["atol"], 0.125);                                   // the job's f16 tolerance
  EXPECT_EQ(a[3]["rtol"], DefaultTolerance(DType::kF16).rtol);      // default where not given
  EXPECT_EQ(a[4]["shape"], json({16}));
  EXPECT_EQ(a[4]["atol"], 0.5);                                     // the argument's own override
  EXPECT_EQ(a[4]["rtol"], 0.25);
  EXPECT_FALSE(a[4].contains("init"));
  EXPECT_EQ(req["correctness"]["trials"], 2);
  EXPECT_EQ(req["correctness"]["seed"], nullptr);  // the harness draws a secret one
  EXPECT_EQ(req["timing"]["mode"], "hot");
  EXPECT_EQ(req["timing"]["min_samples"], 7);
  EXPECT_EQ(req["outputs"], json({"y"}));
  EXPECT_EQ(req["output_dir"], "/j/out");
  EXPECT_EQ(req["l2_bytes"], 52428800);
  EXPECT_EQ(req["cupti_marks"], true);
  EXPECT_EQ(req["expected"], json::object());
}

TEST(PythonRequestTest, KernelbenchTakesKernelbenchSeedUnlessTheJobSetsSeedOrTolerance) {
  json doc = {{"kind", "kernelbench"},
              {"problem", {{"text", "class Model: pass"}}},
              {"candidate", {{"text", "class ModelNew: pass"}}},
              {"num_trials", 7}};
  auto r = BuildPythonRequest(Parse(doc), "/k", {});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)["candidate"]["entry"], "ModelNew");
  EXPECT_EQ((*r)["problem"], json({{"path", "/k/problem.py"}, {"entry", "Model"}}));
  EXPECT_EQ((*r)["reference"], nullptr);
  EXPECT_EQ((*r)["args"], json::array());
  EXPECT_EQ((*r)["num_trials"], 7);
  EXPECT_EQ((*r)["correctness"]["seed"], 42);
  EXPECT_FALSE((*r)["correctness"].contains("atol"));  // the harness picks KernelBench's, per precision
  EXPECT_FALSE((*r)["correctness"].contains("rtol"));
  // The job's own seed and tolerance win.
  doc["correctness"] = {{"seed", 7u}, {"atol", {{"f32", 1e-3}}}, {"rtol", {{"f32", 2e-3}}}};
  r = BuildPythonRequest(Parse(doc), "/k", {});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)["correctness"]["seed"], 7);
  EXPECT_EQ((*r)["correctness"]["atol"], 1e-3);
  EXPECT_EQ((*r)["correctness"]["rtol"], 2e-3);
}

TEST(PythonRequestTest, WritesSourcesBlobsAndExpectedAsNpy) {
  auto dir = TempDir::Create("pyreq_");
  ASSERT_TRUE(dir.ok());
  // Uploaded data: an input as npy, an expected output as raw f32.
  std::string raw(8 * sizeof(float), '\0');
  for (int i = 0; i < 8; ++i) reinterpret_cast<float*>(raw.data())[i] = static_cast<float>(i);
  const std::string npy = WriteNpy(DType::kF32, {8}, raw);
  const std::string in_hash = Sha256Hex(npy), out_hash = Sha256Hex(raw), src_hash = Sha256Hex("class Model: pass\n");
  BlobFiles blobs = {{in_hash, dir->path() / "in.blob"}, {out_hash, dir->path() / "out.blob"},
                     {src_hash, dir->path() / "src.blob"}};
  ASSERT_TRUE(WriteFileAtomic(blobs[in_hash], npy).ok());
  ASSERT_TRUE(WriteFileAtomic(blobs[out_hash], raw).ok());
  ASSERT_TRUE(WriteFileAtomic(blobs[src_hash], "class Model: pass\n").ok());
  json doc = {{"kind", "torch"},
              {"source", {{"blob", src_hash}}},
              {"args",
               {{{"name", "x"}, {"role", "in"}, {"dtype", "f32"}, {"shape", {8}},
                 {"init", {{"kind", "blob"}, {"hash", in_hash}, {"format", "npy"}}}},
                {{"name", "y"}, {"role", "out"}, {"dtype", "f32"}, {"shape", {8}}}}},
              {"reference", {{"expected", {{"y", {{"blob", out_hash}, {"format", "raw"}}}}}}}};
  const auto job = dir->path() / "job";
  std::filesystem::create_directories(job);
  auto r = WritePythonJob(Parse(doc), job, blobs, {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(ReadFile(job / "candidate.py").value(), "class Model: pass\n");
  EXPECT_FALSE(std::filesystem::exists(job / "reference.py"));
  EXPECT_EQ(ReadFile(job / "blobs" / in_hash).value(), npy);
  EXPECT_EQ((*r)["blob_files"][in_hash], (job / "blobs" / in_hash).string());
  EXPECT_EQ((*r)["args"][0]["init"], json({{"kind", "blob"}, {"blob", in_hash}, {"format", "npy"}}));
  ASSERT_EQ((*r)["expected"]["y"], (job / "expected_y.npy").string());
  auto expected = ReadFile(job / "expected_y.npy");
  ASSERT_TRUE(expected.ok());
  auto parsed = ParseNpy(*expected);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->shape, std::vector<int64_t>({8}));
  EXPECT_EQ(std::string(parsed->data), raw);
  EXPECT_TRUE(std::filesystem::is_directory(job / "out"));
  EXPECT_EQ(json::parse(ReadFile(job / "request.json").value()), *r);

  // Raw data of the wrong size is the user's error, named by its field.
  ASSERT_TRUE(WriteFileAtomic(blobs[out_hash], raw.substr(4)).ok());
  auto bad = WritePythonJob(Parse(doc), job, blobs, {});
  EXPECT_EQ(bad.status().error_class(), ErrorClass::kRejected);
  EXPECT_EQ(bad.status().field(), "reference.expected.y");
}

TEST(PythonRequestTest, PrepareOnlyWhereExtensionsMayBeBuilt) {
  EXPECT_TRUE(NeedsPythonPrepare(JobKind::kTorchCuda, "class Model: pass"));
  EXPECT_TRUE(NeedsPythonPrepare(JobKind::kKernelbench, "class ModelNew: pass"));
  EXPECT_FALSE(NeedsPythonPrepare(JobKind::kTorch, "class Model: pass"));
  EXPECT_TRUE(NeedsPythonPrepare(JobKind::kTorch, "from torch.utils.cpp_extension import load_inline"));
  EXPECT_FALSE(NeedsPythonPrepare(JobKind::kTriton, "import triton"));
}

TEST(PythonRequestTest, ExtensionKeyFollowsSourceVersionsAndArch) {
  json probe = {{"python", "3.12.3"}, {"torch", "2.11.0"}, {"torch_cuda", "13.0"}, {"triton", "3.6.0"},
                {"cuda", true}, {"device_count", 1}};
  const std::string k = PythonExtensionKey("src", probe, "9.0");
  EXPECT_EQ(k.size(), 64u);
  EXPECT_EQ(k, PythonExtensionKey("src", probe, "9.0"));
  EXPECT_NE(k, PythonExtensionKey("src2", probe, "9.0"));
  EXPECT_NE(k, PythonExtensionKey("src", probe, "10.0"));
  json other = probe;
  other["torch"] = "2.10.0";
  EXPECT_NE(k, PythonExtensionKey("src", other, "9.0"));
  // What is not a build input does not change the key (the server and the
  // worker may see CUDA differently).
  other = probe;
  other["cuda"] = false;
  other.erase("device_count");
  EXPECT_EQ(k, PythonExtensionKey("src", other, "9.0"));
}

TEST(PythonRequestTest, TorchArchList) {
  EXPECT_EQ(TorchArchList("sm_90"), "9.0");
  EXPECT_EQ(TorchArchList("sm_90a"), "9.0");
  EXPECT_EQ(TorchArchList("sm_100a"), "10.0");
  EXPECT_EQ(TorchArchList("sm_120"), "12.0");
  EXPECT_EQ(TorchArchList("compute_90"), "");
  EXPECT_EQ(TorchArchList("sm_9"), "");
}

// ---- result mapping ---------------------------------------------------------

json OkDoc() {
  return {{"v", 1},
          {"status", {{"class", "ok"}, {"message", ""}, {"phase", "timing"}}},
          {"versions", {{"python", "3.12.3"}, {"torch", "2.11.0"}}},
          {"compiled", true},
          {"load_ms", 812.0},
          {"correctness", {{"passed", true}, {"trials", 3}}},
          {"timing",
           {{"candidate", {{"clock", "cuda_event"}, {"median_ms", 0.01}, {"samples", 100},
                           {"samples_ms", json::array()}, {"marks", {"cand.begin", "cand.end"}}}},
            {"reference", {{"clock", "cuda_event"}, {"median_ms", 0.02}}},
            {"speedup", 2.0}}},
          {"warnings", {"from the harness"}}};
}

HarnessRun Exited(int code, json doc = nullptr) {
  HarnessRun run;
  run.process.exit_code = code;
  run.process.stdout_data = "printed by the user\n";
  run.process.stdout_bytes = run.process.stdout_data.size();
  run.result = std::move(doc);
  run.timeout_ms = 30'000;
  return run;
}

TEST(PythonResultTest, OkResultIsFlattenedIntoTheSections) {
  WorkOutcome o = MapHarnessRun(Exited(0, OkDoc()));
  EXPECT_TRUE(o.status.ok()) << o.status.ToString();
  const json& r = o.result;
  EXPECT_EQ(r["timing"]["median_ms"], 0.01);
  EXPECT_EQ(r["timing"]["samples"], 100);
  EXPECT_EQ(r["timing"]["source"], "cuda_event");
  EXPECT_EQ(r["timing"]["reference"]["median_ms"], 0.02);
  EXPECT_EQ(r["timing"]["speedup"], 2.0);
  EXPECT_EQ(r["correctness"]["passed"], true);
  EXPECT_EQ(r["python"]["stdout"], "printed by the user\n");
  EXPECT_EQ(r["python"]["exit_code"], 0);
  EXPECT_EQ(r["python"]["versions"]["torch"], "2.11.0");
  EXPECT_EQ(r["python"]["load_ms"], 812.0);
  EXPECT_EQ(r["python"]["phase"], "timing");
  EXPECT_EQ(r["warnings"], json({"from the harness"}));
  EXPECT_FALSE(r.contains("error"));
  EXPECT_FALSE(r.contains("kernelbench"));
}

TEST(PythonResultTest, HarnessClassesBecomeStatuses) {
  json doc = OkDoc();
  doc["status"] = {{"class", "wrong_result"}, {"message", "output 'y': 3 of 8 elements differ"}};
  WorkOutcome o = MapHarnessRun(Exited(0, doc));
  EXPECT_EQ(o.status.error_class(), ErrorClass::kWrongResult);
  EXPECT_EQ(o.status.message(), "output 'y': 3 of 8 elements differ");
  EXPECT_TRUE(o.result.contains("correctness"));

  doc["status"] = {{"class", "compile_error"}, {"message", "SyntaxError: invalid syntax"}, {"detail", "line 2"}};
  o = MapHarnessRun(Exited(0, doc));
  EXPECT_EQ(o.status.error_class(), ErrorClass::kCompileError);
  EXPECT_EQ(o.result["error"]["detail"], json({{"log", "line 2"}}));

  doc["status"] = {{"class", "runtime_error"}, {"message", "RuntimeError: CUDA error: an illegal memory access"},
                   {"detail", "Traceback ..."}, {"cuda_error", "CUDA_ERROR_ILLEGAL_ADDRESS"}};
  o = MapHarnessRun(Exited(0, doc));
  EXPECT_EQ(o.status.error_class(), ErrorClass::kRuntimeError);
  EXPECT_EQ(o.result["error"]["detail"],
            json({{"traceback", "Traceback ..."}, {"cuda_error", "CUDA_ERROR_ILLEGAL_ADDRESS"}}));

  doc["status"] = {{"class", "rejected"}, {"message", "no entry 'Model'"}, {"field", "entry"}};
  o = MapHarnessRun(Exited(0, doc));
  EXPECT_EQ(o.status.error_class(), ErrorClass::kRejected);
  EXPECT_EQ(o.status.field(), "entry");

  for (const char* bad : {"not_found", "oops", ""}) {
    doc["status"] = {{"class", bad}};
    EXPECT_EQ(MapHarnessRun(Exited(0, doc)).status.error_class(), ErrorClass::kInfraError) << bad;
  }
}

TEST(PythonResultTest, HarnessDeathIsClassified) {
  HarnessRun run = Exited(0);
  run.process.exit_code = -1;
  run.process.signal = 11;
  WorkOutcome o = MapHarnessRun(run);
  EXPECT_EQ(o.status.error_class(), ErrorClass::kRuntimeError);
  EXPECT_NE(o.status.message().find("SIGSEGV"), std::string::npos) << o.status.message();
  EXPECT_EQ(o.result["python"]["signal_name"], "SIGSEGV");

  run = Exited(1, OkDoc());  // a result next to a failed exit does not count
  run.process.stderr_data = "Traceback (most recent call last):\n  ...\nMemoryError: out of memory\n";
  o = MapHarnessRun(run);
  EXPECT_EQ(o.status.error_class(), ErrorClass::kRuntimeError);
  EXPECT_EQ(o.status.message(), "the Python process exited with code 1: MemoryError: out of memory");
  EXPECT_NE(o.result["error"]["detail"]["stderr_tail"].get<std::string>().find("Traceback"), std::string::npos);
  EXPECT_FALSE(o.result.contains("timing"));

  run = Exited(0);
  run.process.timed_out = true;
  o = MapHarnessRun(run);
  EXPECT_EQ(o.status.error_class(), ErrorClass::kTimeout);
  EXPECT_EQ(o.status.message(), "Python job timed out after 30 s");
  EXPECT_EQ(o.result["python"]["stdout"], "printed by the user\n");  // kept

  run = Exited(0);
  run.process.cancelled = true;
  EXPECT_EQ(MapHarnessRun(run).status.error_class(), ErrorClass::kCancelled);

  run = Exited(0);  // exit 0, but nothing usable
  run.result_error = "result.json is not a JSON object";
  o = MapHarnessRun(run);
  EXPECT_EQ(o.status.error_class(), ErrorClass::kInfraError);
  EXPECT_NE(o.status.message().find("not a JSON object"), std::string::npos);
}

TEST(PythonResultTest, ParseRefusesHostileDocuments) {
  std::string err;
  EXPECT_TRUE(ParseHarnessResult(std::nullopt, &err).is_null());
  EXPECT_TRUE(ParseHarnessResult(std::string(100000, '[') + std::string(100000, ']'), &err).is_null());
  EXPECT_NE(err.find("deeply"), std::string::npos);
  EXPECT_TRUE(ParseHarnessResult(std::string("{\"v\": 2}"), &err).is_null());
  EXPECT_TRUE(ParseHarnessResult(std::string("[1]"), &err).is_null());
  EXPECT_TRUE(ParseHarnessResult(std::string(kMaxHarnessResultBytes + 1, ' '), &err).is_null());
  EXPECT_TRUE(ParseHarnessResult(std::string("{\"v\": 1}"), &err).is_object());
}

TEST(PythonResultTest, OutputsMustBeFilesInTheOutputDirectory) {
  auto dir = TempDir::Create("pyres_");
  ASSERT_TRUE(dir.ok());
  const auto out = dir->path() / "out";
  std::filesystem::create_directories(out);
  std::string data(16, '\1');
  ASSERT_TRUE(WriteFileAtomic(out / "y.npy", WriteNpy(DType::kF32, {4}, data)).ok());
  ASSERT_TRUE(WriteFileAtomic(dir->path() / "secret.npy", WriteNpy(DType::kF32, {4}, data)).ok());
  std::filesystem::create_symlink(dir->path() / "secret.npy", out / "link.npy");
  ASSERT_TRUE(WriteFileAtomic(out / "junk.npy", "not npy").ok());
  json doc = OkDoc();
  doc["outputs"] = {{"y", (out / "y.npy").string()},
                    {"a", (dir->path() / "secret.npy").string()},
                    {"b", (out / "link.npy").string()},
                    {"c", (out / "junk.npy").string()},
                    {"not_asked", (out / "y.npy").string()}};
  HarnessRun run = Exited(0, doc);
  run.dir = dir->path();
  run.outputs = {"y", "a", "b", "c", "missing"};
  WorkOutcome o = MapHarnessRun(run);
  EXPECT_TRUE(o.status.ok());
  ASSERT_EQ(o.blobs.size(), 1u);
  EXPECT_EQ(o.blobs["y"], ReadFile(out / "y.npy").value());
  EXPECT_EQ(o.result["warnings"].size(), 5u) << o.result["warnings"].dump(2);  // harness + a, b, c, missing
  EXPECT_FALSE(o.result.contains("outputs"));  // paths stay on the worker
}

TEST(PythonResultTest, AnOutputDirectoryReplacedByALinkIsNotFollowed) {
  auto dir = TempDir::Create("pyres_");
  ASSERT_TRUE(dir.ok());
  // Someone else's data, and the job's out/ pointing at it.
  const auto elsewhere = dir->path() / "elsewhere";
  std::filesystem::create_directories(elsewhere);
  ASSERT_TRUE(WriteFileAtomic(elsewhere / "y.npy", WriteNpy(DType::kF32, {1}, std::string(4, '\2'))).ok());
  const auto job = dir->path() / "job";
  std::filesystem::create_directories(job);
  std::filesystem::create_directory_symlink(elsewhere, job / "out");
  json doc = OkDoc();
  doc["outputs"] = {{"y", (job / "out" / "y.npy").string()}};
  HarnessRun run = Exited(0, doc);
  run.dir = job;
  run.outputs = {"y"};
  WorkOutcome o = MapHarnessRun(run);
  EXPECT_TRUE(o.blobs.empty());
  EXPECT_EQ(o.result["warnings"].size(), 2u) << o.result["warnings"].dump(2);

  // ReadJobFile itself.
  ASSERT_TRUE(WriteFileAtomic(job / "result.json", "{}").ok());
  EXPECT_EQ(ReadJobFile(job, {"result.json"}, 100).value(), "{}");
  EXPECT_EQ(ReadJobFile(job, {"result.json"}, 1).status().error_class(), ErrorClass::kRejected);
  EXPECT_EQ(ReadJobFile(job, {"none.json"}, 100).status().error_class(), ErrorClass::kNotFound);
  EXPECT_EQ(ReadJobFile(job, {"out", "y.npy"}, 1000).status().error_class(), ErrorClass::kRejected);
  EXPECT_EQ(ReadJobFile(job, {"..", "elsewhere", "y.npy"}, 1000).status().error_class(), ErrorClass::kRejected);
  std::filesystem::create_symlink(elsewhere / "y.npy", job / "link.json");
  EXPECT_EQ(ReadJobFile(job, {"link.json"}, 1000).status().error_class(), ErrorClass::kRejected);
}

// ---- two clocks ---------------------------------------------------------------

// A CUPTI document (docs/cupti.md, v1) with the candidate's kernels between its marks.
std::string CuptiDoc(const std::vector<std::pair<uint64_t, uint64_t>>& kernels, bool with_flush) {
  json ks = json::array();
  uint64_t corr = 1;
  auto add = [&](int name_id, uint64_t start, uint64_t end) {
    ks.push_back({{"name_id", name_id}, {"grid", {1, 1, 1}}, {"block", {32, 1, 1}}, {"static_smem_bytes", 0},
                  {"dynamic_smem_bytes", 0}, {"registers", 16}, {"stream", 7}, {"device", 0}, {"context", 1},
                  {"correlation", corr++}, {"start_ns", start}, {"end_ns", end}, {"duration_ns", end - start}});
  };
  for (auto [s, e] : kernels) add(0, s, e);
  if (with_flush) add(1, 1'000'500, 1'900'000);  // a long flush: excluded by name
  add(0, 50'000'000, 50'001'000);                 // after the end mark: not in the phase
  json doc = {{"v", 1}, {"pid", 1}, {"complete", true}, {"max_records", 1000000},
              {"names", {{{"name", "add_kernel"}}, {{"name", "assay_l2_flush"}}}},
              {"kernels", ks}, {"memcpy", json::array()},
              {"marks", {{{"label", "cand.begin"}, {"ts_ns", 1'000'000}}, {{"label", "cand.end"}, {"ts_ns", 10'000'000}}}},
              {"warnings", json::array()}, {"dropped", 0}, {"invalid", 0}, {"truncated", false},
              {"truncated_kernels", 0}, {"truncated_memcpy", 0}};
  return doc.dump();
}

PhaseClock Clock(const std::string& text, int64_t samples) {
  auto s = SummarizePhaseText(text, "cand.begin", "cand.end", {kL2FlushKernelName, kBlockingKernelName});
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return PhaseClock{s.ok() ? *s : PhaseSummary{}, samples};
}

TEST(TwoClocksTest, AgreeingClocksRideAlong) {
  // 2 samples of 10 us each, on the events 0.0105 ms.
  PhaseClock c = Clock(CuptiDoc({{2'000'000, 2'010'000}, {3'000'000, 3'010'000}}, true), 2);
  json timing = {{"median_ms", 0.0105}, {"source", "cuda_event"}};
  json warnings = json::array();
  EXPECT_FALSE(ApplyTwoClocks(c, &timing, &warnings, nullptr));
  EXPECT_DOUBLE_EQ(timing["cupti"]["kernel_busy_ms"].get<double>(), 0.01);
  EXPECT_DOUBLE_EQ(timing["cupti"]["kernel_sum_ms"].get<double>(), 0.01);
  EXPECT_DOUBLE_EQ(timing["cupti"]["kernels_per_call"].get<double>(), 1.0);
  EXPECT_EQ(timing["cupti"]["names"], json({"add_kernel"}));
  EXPECT_EQ(timing["cupti"]["excluded_kernels"], 1);  // the flush
  EXPECT_EQ(timing["median_ms"], 0.0105);
  EXPECT_EQ(timing["source"], "cuda_event");
  EXPECT_FALSE(timing.contains("disagreement"));
  EXPECT_TRUE(warnings.empty());
}

TEST(TwoClocksTest, WorkTheEventsMissedWins) {
  // The events saw 0.01 ms per call; the GPU ran the candidate's kernels for
  // 1 ms per call (a side stream the events did not cover).
  PhaseClock c = Clock(CuptiDoc({{2'000'000, 3'000'000}, {4'000'000, 5'000'000}}, false), 2);
  json timing = {{"median_ms", 0.01}, {"source", "cuda_event"}};
  json kb = {{"runtime", 0.011}, {"ref_runtime", 2.0}, {"speedup", 181.8}};
  json warnings = json::array();
  EXPECT_TRUE(ApplyTwoClocks(c, &timing, &warnings, &kb));
  EXPECT_EQ(timing["source"], "cupti");
  EXPECT_DOUBLE_EQ(timing["median_ms"].get<double>(), 1.0);
  EXPECT_EQ(timing["event_median_ms"], 0.01);
  EXPECT_DOUBLE_EQ(timing["disagreement"]["kernel_busy_ms"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(timing["disagreement"]["threshold_ms"].get<double>(), 0.01 * 1.10 + 0.005);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_DOUBLE_EQ(kb["runtime"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(kb["speedup"].get<double>(), 2.0);
  EXPECT_EQ(kb["event_runtime"], 0.011);
}

TEST(TwoClocksTest, TimedCallsWithoutGpuWorkAreACache) {
  // 100 timed calls, but only 2 kernels between the marks: the calls returned
  // a result computed before (a cache keyed on the unchanged input).
  PhaseClock idle = Clock(CuptiDoc({{2'000'000, 2'010'000}, {3'000'000, 3'010'000}}, true), 100);
  Status s = CheckTimedCallsDidWork(idle);
  EXPECT_EQ(s.error_class(), ErrorClass::kWrongResult) << s.ToString();
  EXPECT_NE(s.message().find("0.02 GPU kernels per timed call"), std::string::npos) << s.message();
  // One kernel per call is work; so is a record that cannot be trusted (no conclusion).
  EXPECT_TRUE(CheckTimedCallsDidWork(Clock(CuptiDoc({{2'000'000, 2'010'000}, {3'000'000, 3'010'000}}, true), 2)).ok());
  PhaseClock lossy = idle;
  lossy.summary.records_dropped = 5;
  EXPECT_TRUE(CheckTimedCallsDidWork(lossy).ok());
  PhaseClock unmarked = idle;
  unmarked.summary.end_found = false;
  EXPECT_TRUE(CheckTimedCallsDidWork(unmarked).ok());
}

TEST(TwoClocksTest, ThresholdHasSlackForTinyKernels) {
  // 0.013 ms busy against 0.008 ms on the events: under 0.008 * 1.1 + 0.005.
  PhaseClock c = Clock(CuptiDoc({{2'000'000, 2'013'000}}, false), 1);
  json timing = {{"median_ms", 0.008}};
  json warnings = json::array();
  EXPECT_FALSE(ApplyTwoClocks(c, &timing, &warnings, nullptr));
  timing = {{"median_ms", 0.007}};
  EXPECT_TRUE(ApplyTwoClocks(c, &timing, &warnings, nullptr));
}

TEST(TwoClocksTest, NotComparedWhenForeignKernelsAreInThePhase) {
  PhaseClock c = Clock(CuptiDoc({{2'000'000, 3'000'000}}, false), 1);
  json timing = {{"median_ms", 0.01}, {"l2_flush", "torch.fill_"}};
  json warnings = json::array();
  EXPECT_FALSE(ApplyTwoClocks(c, &timing, &warnings, nullptr));
  EXPECT_EQ(timing["cupti"]["compared"], false);
  EXPECT_FALSE(timing.contains("disagreement"));
  timing = {{"median_ms", 0.01}, {"blocking_timeouts", 1}};
  EXPECT_FALSE(ApplyTwoClocks(c, &timing, &warnings, nullptr));
  EXPECT_EQ(timing["cupti"]["compared"], false);
  // A candidate that names the helper kernels (hiding its own work behind them).
  timing = {{"median_ms", 0.01}, {"l2_flush", "assay_l2_flush"}};
  EXPECT_FALSE(ApplyTwoClocks(c, &timing, &warnings, nullptr, /*helper_name_in_source=*/true));
  EXPECT_EQ(timing["cupti"]["compared"], false);
  EXPECT_EQ(warnings.size(), 1u);
  EXPECT_TRUE(MentionsHelperKernel("__global__ void assay_l2_flush() {}"));
  EXPECT_FALSE(MentionsHelperKernel("__global__ void add() {}"));
  // The real flush kernel is compared.
  EXPECT_TRUE(ApplyTwoClocks(c, &timing, &warnings, nullptr));
}

TEST(TwoClocksTest, MapHarnessRunAppliesTheRule) {
  HarnessRun run = Exited(0, OkDoc());
  run.candidate_clock = Clock(CuptiDoc({{2'000'000, 3'000'000}, {4'000'000, 5'000'000}}, false), 2);
  WorkOutcome o = MapHarnessRun(run);
  EXPECT_TRUE(o.status.ok());
  EXPECT_EQ(o.result["timing"]["source"], "cupti");
  EXPECT_TRUE(o.result["timing"].contains("disagreement"));
  EXPECT_EQ(o.result["warnings"].size(), 2u);
}

// ---- the runner, with a fake harness --------------------------------------------

// Behaves per the candidate's first line: OK, EXIT n, ESCAPE (an output outside
// out/), NORESULT; always reports the environment it saw, the argv and (as
// `standby`) the job line it read.
const char* kFakeHarness = R"(import json, os, sys
if sys.argv[1:] == ["--probe"]:
    print("noise from an import")
    print(json.dumps({"python": "3.0", "torch": "9.9", "cuda": False, "triton": None}))
    sys.exit(0)
line = None
if sys.argv[1:] == ["standby"]:
    print("standby ready", flush=True)
    line = sys.stdin.readline()
    job = json.loads(line)
    mode, req_path, res_path = job["mode"], job["request"], job["result"]
    once = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "vanish_once")
    if os.path.exists(once):  # dies as if killed while it waited: before `accepted`
        os.unlink(once)
        os.kill(os.getpid(), 9)
    open(os.path.join(os.path.dirname(req_path), "accepted"), "w").write(str(os.getpid()))
else:
    mode, req_path, res_path = sys.argv[1], sys.argv[3], sys.argv[5]
req = json.load(open(req_path))
what = open(req["candidate"]["path"]).read().split("\n")[0]
print("fake harness " + what)
if what.startswith("EXIT"):
    sys.stderr.write("Traceback\nSystemExit: gave up\n")
    sys.exit(int(what.split()[1]))
if what == "NORESULT":
    sys.exit(0)
env = {k: os.environ.get(k) for k in ("HOME", "TMPDIR", "TORCH_EXTENSIONS_DIR", "TRITON_CACHE_DIR",
                                      "CUDA_VISIBLE_DEVICES", "TORCH_CUDA_ARCH_LIST")}
ext = os.environ["TORCH_EXTENSIONS_DIR"]
open(os.path.join(ext, "built.so"), "w").write("x")  # the job's own build directory is writable
sys.stderr.write(json.dumps({"cwd": os.getcwd(), "ext": ext, "cache": req.get("extension_cache")}) + "\n")
os.makedirs(req["output_dir"], exist_ok=True)
import struct
hdr = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }"
hdr += " " * (63 - (10 + len(hdr)) % 64) + "\n"
npy = b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode() + struct.pack("<2f", 1.0, 2.0)
outdir = req["output_dir"] if what != "ESCAPE" else os.path.dirname(req["output_dir"])
open(os.path.join(outdir, "y.npy"), "wb").write(npy)
json.dump({"v": 1, "status": {"class": "ok", "message": "", "phase": "timing"}, "versions": {"torch": "9.9"},
           "env": env, "argv": sys.argv[1:], "line": line, "request": req, "pid": os.getpid(),
           "process": {"standby": line is not None, "pid": os.getpid()},
           "timing": {"candidate": {"clock": "host", "median_ms": 0.5, "samples": 10}},
           "outputs": {"y": os.path.join(outdir, "y.npy")}, "warnings": []}, open(res_path, "w"))
)";

std::string TestInterpreter() { return std::filesystem::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3"; }

class PythonRunnerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto d = TempDir::Create("pyrunner_");
    ASSERT_TRUE(d.ok());
    dir_ = new TempDir(std::move(d).value());
    ASSERT_TRUE(WriteFileAtomic(dir_->path() / "fake_harness.py", kFakeHarness).ok());
    py_.interpreter = TestInterpreter();
    py_.device = "cpu";
    py_.cache_dir = dir_->path() / "cache";
    py_.harness = dir_->path() / "fake_harness.py";
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }

  WorkOutcome RunJob(const std::string& candidate, bool sandbox = true) {
    spec_ = {{"kind", "torch"},
             {"source", {{"text", candidate + "\nclass Model: pass\n"}}},
             {"args", {{{"name", "y"}, {"role", "out"}, {"dtype", "f32"}, {"shape", {2}}}}},
             {"outputs", {"y"}}};
    spec_ = ToJson(Parse(spec_));
    RunContext ctx;
    ctx.job_id = "j_test";
    ctx.spec = &spec_;
    ctx.timeout_ms = 60'000;
    ctx.device = -1;
    ctx.work_dir = dir_->path() / "work";
    std::filesystem::create_directories(ctx.work_dir);
    ctx.sandbox = sandbox;
    ctx.cancel = &cancel_;
    ctx.python = &py_;
    ctx.progress = [this](const std::string& phase, json) { phases_.push_back(phase); };
    return RunPythonJob(ctx);
  }

  static TempDir* dir_;
  static PythonWorkerOptions py_;
  json spec_;
  std::atomic<bool> cancel_{false};
  std::vector<std::string> phases_;
};

TempDir* PythonRunnerTest::dir_ = nullptr;
PythonWorkerOptions PythonRunnerTest::py_;

TEST_F(PythonRunnerTest, ProbeReadsTheLastLine) {
  PythonProbe p = RunPythonProbe(py_, -1, py_.harness, dir_->path());
  EXPECT_TRUE(p.ok) << p.error;
  EXPECT_FALSE(p.triton);
  EXPECT_EQ(p.info["torch"], "9.9");
  EXPECT_EQ(PythonKinds(p), std::vector<std::string>({"torch", "torch_cuda", "kernelbench"}));
  EXPECT_EQ(PythonHelloJson(py_, p)["device"], "cpu");

  PythonWorkerOptions gpu = py_;
  gpu.device = "cuda";
  p = RunPythonProbe(gpu, -1, py_.harness, dir_->path());
  EXPECT_FALSE(p.ok);
  EXPECT_NE(p.error.find("no GPU"), std::string::npos) << p.error;
  PythonWorkerOptions missing = py_;
  missing.interpreter = "/nonexistent/python3";
  p = RunPythonProbe(missing, -1, py_.harness, dir_->path());
  EXPECT_FALSE(p.ok);
  EXPECT_NE(p.error.find("/nonexistent/python3"), std::string::npos) << p.error;
  EXPECT_TRUE(PythonKinds(p).empty());
}

std::vector<std::filesystem::path> JobDirs(const std::filesystem::path& work) {
  std::vector<std::filesystem::path> dirs;
  for (const auto& e : std::filesystem::directory_iterator(work))
    if (e.is_directory()) dirs.push_back(e.path());
  return dirs;
}

TEST_F(PythonRunnerTest, RunsTheHarnessInTheJobDirectoryUnderTheSandbox) {
  ReleasePythonStandby();
  WorkOutcome o = RunJob("OK");
  ASSERT_TRUE(o.status.ok()) << o.status.ToString() << "\n" << o.result.dump(2);
  const json& py = o.result["python"];
  // Started as a standby and handed its job on stdin.
  EXPECT_EQ(py["stdout"], "standby ready\nfake harness OK\n");
  EXPECT_EQ(py["device"], "cpu");
  EXPECT_EQ(py["prestarted"], false);
  EXPECT_EQ(py["process"]["standby"], true);
  EXPECT_EQ(o.result["timing"]["source"], "host");
  EXPECT_EQ(o.result["timing"]["median_ms"], 0.5);
  ASSERT_EQ(o.blobs.count("y"), 1u);
  EXPECT_EQ(phases_, std::vector<std::string>({"running", "finished"}));
  // The job's directory is gone; the next jobs' processes wait in their own.
  EXPECT_EQ(py_.standby, 3);
  EXPECT_EQ(JobDirs(dir_->path() / "work").size(), 3u);
  ReleasePythonStandby();
  EXPECT_TRUE(JobDirs(dir_->path() / "work").empty()) << "the standby's directory is removed with it";
}

TEST_F(PythonRunnerTest, TheNextJobTakesTheStandbyAndEachProcessRunsOneJob) {
  ReleasePythonStandby();
  WorkOutcome a = RunJob("OK");
  WorkOutcome b = RunJob("OK");
  ASSERT_TRUE(a.status.ok() && b.status.ok()) << a.status.ToString() << b.status.ToString();
  EXPECT_EQ(a.result["python"]["prestarted"], false);
  EXPECT_EQ(b.result["python"]["prestarted"], true);
  EXPECT_NE(a.result["python"]["process"]["pid"], b.result["python"]["process"]["pid"]);
  // A job of another kind releases the standby: the next Python job starts its own.
  ReleasePythonStandby();
  WorkOutcome c = RunJob("OK");
  EXPECT_EQ(c.result["python"]["prestarted"], false);
  // Without standbys, nothing waits between jobs.
  PythonWorkerOptions saved = py_;
  py_.standby = 0;
  ReleasePythonStandby();
  WorkOutcome d = RunJob("OK");
  WorkOutcome e = RunJob("OK");
  py_ = saved;
  EXPECT_EQ(d.result["python"]["prestarted"], false);
  EXPECT_EQ(e.result["python"]["prestarted"], false);
  EXPECT_TRUE(JobDirs(dir_->path() / "work").empty());
}

// A standby that dies before it accepts its job (killed while it waited) is
// replaced once; a process started for the job that dies is the job's failure.
TEST_F(PythonRunnerTest, AStandbyLostBeforeAcceptingIsReplacedOnce) {
  // Unsandboxed: the fake harness must see (and remove) the marker outside its job directory.
  ReleasePythonStandby();
  ASSERT_TRUE(RunJob("OK", false).status.ok());  // leaves standbys waiting
  const auto once = dir_->path() / "vanish_once";
  ASSERT_TRUE(WriteFileAtomic(once, "").ok());
  WorkOutcome o = RunJob("OK", false);
  EXPECT_TRUE(o.status.ok()) << o.status.ToString() << o.result.dump(2);
  EXPECT_FALSE(std::filesystem::exists(once));
  EXPECT_EQ(o.result["python"]["prestarted"], false);  // the second attempt's process was started for it
  ReleasePythonStandby();
  ASSERT_TRUE(WriteFileAtomic(once, "").ok());
  o = RunJob("OK", false);  // not prestarted: no second chance
  EXPECT_EQ(o.status.error_class(), ErrorClass::kRuntimeError) << o.status.ToString();
  EXPECT_NE(o.status.message().find("SIGKILL"), std::string::npos) << o.status.message();
  std::filesystem::remove(once);
}

// The run builds (load_inline without a cached build) only in its own
// directory; the prepare step's cache is named in the request, read-only.
TEST_F(PythonRunnerTest, TheRunBuildsOnlyInItsOwnDirectoryAndReadsTheCache) {
  ReleasePythonStandby();
  WorkOutcome o = RunJob("OK");
  ASSERT_TRUE(o.status.ok()) << o.status.ToString();
  json seen = json::parse(o.result["python"]["stderr"].get<std::string>(), nullptr, false);
  ASSERT_TRUE(seen.is_object()) << o.result["python"].dump(2);
  const std::string cwd = seen["cwd"], ext = seen["ext"], cache = seen["cache"];
  EXPECT_EQ(ext, cwd + "/torch_ext");
  const std::string root = (py_.cache_dir / "torch_ext").string() + "/";
  ASSERT_EQ(cache.rfind(root, 0), 0u) << cache;
  EXPECT_EQ(cache.size(), root.size() + 64) << cache;  // <cache>/torch_ext/<sha-256 key>
  EXPECT_FALSE(std::filesystem::exists(cache + "/built.so"));
}

TEST_F(PythonRunnerTest, HarnessSeesTheContractsArgumentsAndEnvironment) {
  // MapHarnessRun keeps only known sections; the fake's echo is read from a direct RunHarness.
  auto job = dir_->path() / "direct";
  std::filesystem::create_directories(job);
  JobSpec spec = Parse({{"kind", "torch"}, {"source", {{"text", "OK\n"}}}});
  ASSERT_TRUE(WritePythonJob(spec, job, {}, {}).ok());
  std::filesystem::create_directories(dir_->path() / "cache");
  HarnessInvocation inv;
  const char* path = getenv("PATH");
  inv.interpreter = FindExecutable(TestInterpreter(), path ? path : "/usr/bin:/bin");
  inv.harness = py_.harness;
  inv.dir = job;
  inv.env = {{"TORCH_EXTENSIONS_DIR", (dir_->path() / "cache").string()}, {"CUDA_VISIBLE_DEVICES", ""}};
  inv.sandbox = false;
  auto r = RunHarness(inv);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_TRUE(r->result.is_object()) << r->result_error << r->process.stderr_data;
  const json& env = r->result["env"];
  EXPECT_EQ(env["HOME"], job.string());
  EXPECT_EQ(env["TMPDIR"], job.string());
  EXPECT_EQ(env["CUDA_VISIBLE_DEVICES"], "");
  EXPECT_EQ(r->result["argv"], json({"run", "--request", (job / "request.json").string(), "--result",
                                     (job / "result.json").string()}));
  EXPECT_TRUE(std::filesystem::exists(job / kHarnessFileName));  // copied beside the job
}

TEST_F(PythonRunnerTest, HarnessExitWithoutResultIsRuntimeErrorWithStderr) {
  WorkOutcome o = RunJob("EXIT 3");
  EXPECT_EQ(o.status.error_class(), ErrorClass::kRuntimeError);
  EXPECT_EQ(o.status.message(), "the Python process exited with code 3: SystemExit: gave up");
  EXPECT_EQ(o.result["python"]["exit_code"], 3);
  o = RunJob("NORESULT");
  EXPECT_EQ(o.status.error_class(), ErrorClass::kInfraError);
  EXPECT_NE(o.status.message().find("no result.json"), std::string::npos) << o.status.message();
}

TEST_F(PythonRunnerTest, AnOutputOutsideTheOutputDirectoryIsNotReturned) {
  WorkOutcome o = RunJob("ESCAPE");
  EXPECT_TRUE(o.status.ok()) << o.status.ToString();
  EXPECT_TRUE(o.blobs.empty());
  EXPECT_EQ(o.result["warnings"].size(), 1u) << o.result["warnings"].dump();
}

TEST_F(PythonRunnerTest, NoInterpreterIsRejected) {
  RunContext ctx;
  json spec = ToJson(Parse({{"kind", "torch"}, {"source", {{"text", "x"}}}}));
  ctx.spec = &spec;
  WorkOutcome o = RunPythonJob(ctx);
  EXPECT_EQ(o.status.error_class(), ErrorClass::kRejected);
}

}  // namespace
}  // namespace assay

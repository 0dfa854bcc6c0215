// The CLI's Python-kind paths: `assay run problem.py --candidate new.py`,
// `--kind torch`, `assay batch` and `assay eval` request bodies, their human
// output and exit codes. The same commands against a real server are in
// tests/batch_eval_test.cc.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/format.h"
#include "cli/spec_builder.h"
#include "common/util.h"

namespace assay::cli {
namespace {

using nlohmann::json;

constexpr char kProblem[] =
    "import torch\n\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return torch.relu(x)\n\n"
    "def get_inputs():\n    return [torch.randn(8)]\n\ndef get_init_inputs():\n    return []\n";
constexpr char kCandidate[] =
    "import torch\n\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return x.clamp_min(0)\n";

bool Contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

class PythonCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = TempDir::Create("assay-cli-py-");
    ASSERT_TRUE(dir.ok());
    dir_.emplace(std::move(*dir));
  }
  std::string Write(const std::string& name, const std::string& text) {
    auto path = dir_->path() / name;
    std::filesystem::create_directories(path.parent_path());
    EXPECT_TRUE(WriteFileAtomic(path, text).ok());
    return path.string();
  }
  static void ExpectRejected(const Result<json>& r, const std::string& field, const std::string& part) {
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().error_class(), ErrorClass::kRejected);
    EXPECT_EQ(r.status().field(), field) << r.status().message();
    EXPECT_TRUE(Contains(r.status().message(), part)) << r.status().message();
    EXPECT_EQ(ExitCodeFor(r.status()), kExitUsage);
  }
  std::optional<TempDir> dir_;
};

TEST_F(PythonCliTest, ProblemWithCandidateIsAKernelbenchJob) {
  SpecOptions o;
  o.file = Write("problem.py", kProblem);
  o.candidate = Write("my new.py", kCandidate);
  o.num_trials = 5;
  o.timeout_s = 90;
  auto spec = BuildSpec(o);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ((*spec)["kind"], "kernelbench");
  EXPECT_EQ((*spec)["problem"]["text"], kProblem);
  EXPECT_EQ((*spec)["problem"]["filename"], "problem.py");
  EXPECT_EQ((*spec)["candidate"]["text"], kCandidate);
  EXPECT_EQ((*spec)["candidate"]["filename"], "my_new.py") << "made acceptable to the server";
  EXPECT_EQ((*spec)["num_trials"], 5);
  EXPECT_EQ((*spec)["timeout_s"], 90);
  EXPECT_FALSE(spec->contains("source"));
}

TEST_F(PythonCliTest, KernelbenchMistakesAreExplained) {
  SpecOptions not_problem;
  not_problem.file = Write("model.py", "class Model:\n    pass\n");
  not_problem.candidate = Write("new.py", kCandidate);
  ExpectRejected(BuildSpec(not_problem), "file", "not a KernelBench problem");

  SpecOptions no_candidate;
  no_candidate.file = Write("problem.py", kProblem);
  ExpectRejected(BuildSpec(no_candidate), "kind", "--candidate NEW.py");

  SpecOptions wrong_kind;
  wrong_kind.file = Write("problem.py", kProblem);
  wrong_kind.candidate = Write("new.py", kCandidate);
  wrong_kind.kind = "torch";
  ExpectRejected(BuildSpec(wrong_kind), "kind", "--candidate makes a kernelbench job");

  SpecOptions missing;
  missing.file = Write("problem.py", kProblem);
  missing.candidate = (dir_->path() / "nope.py").string();
  auto r = BuildSpec(missing);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(Contains(r.status().message(), "nope.py")) << r.status().message();
}

TEST_F(PythonCliTest, PythonFileTakesItsKindFromTheFlagAndIsNeverAProgram) {
  SpecOptions o;
  o.file = Write("model.py", "import torch\nclass Model(torch.nn.Module):\n    pass\ndef main():\n    pass\n");
  ExpectRejected(BuildSpec(o), "kind", "--kind torch, torch_cuda or triton");
  o.kind = "torch_cuda";
  o.reference = Write("ref.py", "class Model: pass\n");
  auto spec = BuildSpec(o);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ((*spec)["kind"], "torch_cuda");
  EXPECT_EQ((*spec)["source"]["filename"], "model.py");
  EXPECT_EQ((*spec)["reference"]["kind"], "torch");
  EXPECT_EQ((*spec)["reference"]["source"]["text"], "class Model: pass\n");
  o.reference_kind = "triton";
  EXPECT_EQ((*BuildSpec(o))["reference"]["kind"], "triton");

  SpecOptions cuda;
  cuda.file = Write("k.cu", "/* assay: {\"kind\": \"cuda\", \"entry\": \"k\"} */\n");
  cuda.reference = o.reference;
  ExpectRejected(BuildSpec(cuda), "reference", "--reference is a Python reference");
}

TEST_F(PythonCliTest, SpecFileKernelbenchTakesProblemAndCandidateFiles) {
  SpecOptions o;
  o.spec_file = Write("kb.json", R"({"kind": "kernelbench", "num_trials": 3})");
  o.file = Write("problem.py", kProblem);
  o.candidate = Write("new.py", kCandidate);
  auto spec = BuildSpec(o);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ((*spec)["problem"]["text"], kProblem);
  EXPECT_EQ((*spec)["candidate"]["text"], kCandidate);
  EXPECT_EQ((*spec)["num_trials"], 3);
  EXPECT_FALSE(spec->contains("source"));
}

TEST_F(PythonCliTest, NonUtf8FilesAreRejected) {
  SpecOptions o;
  o.file = Write("bad.py", std::string("x = '\xff'\n"));
  o.kind = "torch";
  ExpectRejected(BuildSpec(o), "file", "not UTF-8");
}

TEST(SafeFilenameTest, KeepsWhatTheServerAccepts) {
  EXPECT_EQ(SafeFilename("/a/b/new_v2.py"), "new_v2.py");
  EXPECT_EQ(SafeFilename("dir/my kernel (1).py"), "my_kernel__1_.py");
  EXPECT_EQ(SafeFilename(".hidden.py"), "_.hidden.py");
  EXPECT_EQ(SafeFilename("ünï.py"), "__n__.py");
}

TEST_F(PythonCliTest, BatchRequestIsProblemThenCandidates) {
  BatchRequestOptions o;
  o.files = {Write("problem.py", kProblem), Write("v1.py", kCandidate), Write("v2.py", kCandidate + std::string("#2\n"))};
  o.name = "sweep";
  o.num_trials = 7;
  o.timeout_s = 30;
  auto body = BuildBatchRequest(o);
  ASSERT_TRUE(body.ok()) << body.status().ToString();
  EXPECT_EQ((*body)["name"], "sweep");
  const json& t = (*body)["template"];
  EXPECT_EQ(t["kind"], "kernelbench");
  EXPECT_EQ(t["problem"]["text"], kProblem);
  EXPECT_EQ(t["num_trials"], 7);
  EXPECT_EQ(t["timeout_s"], 30);
  ASSERT_EQ((*body)["candidates"].size(), 2u);
  EXPECT_EQ((*body)["candidates"][0]["name"], "v1.py");
  EXPECT_EQ((*body)["candidates"][1]["name"], "v2.py");
  EXPECT_EQ((*body)["candidates"][1]["source"]["text"], kCandidate + std::string("#2\n"));
}

TEST_F(PythonCliTest, BatchNamesStayUniqueAndMistakesAreExplained) {
  BatchRequestOptions same;
  std::string a = Write("a/new.py", kCandidate), b = Write("b/new.py", kCandidate);
  same.files = {Write("problem.py", kProblem), a, b};
  auto body = BuildBatchRequest(same);
  ASSERT_TRUE(body.ok()) << body.status().ToString();
  EXPECT_EQ((*body)["candidates"][0]["name"], a) << "two new.py: named by their paths";
  EXPECT_EQ((*body)["candidates"][1]["name"], b);
  EXPECT_EQ((*body)["candidates"][0]["source"]["filename"], "new.py");

  BatchRequestOptions twice;
  twice.files = {Write("problem.py", kProblem), a, a};
  ExpectRejected(BuildBatchRequest(twice), "file", "given twice");
  BatchRequestOptions none;
  none.files = {Write("problem.py", kProblem)};
  ExpectRejected(BuildBatchRequest(none), "file", "no candidate files");
  BatchRequestOptions not_problem;
  not_problem.files = {a, b};
  ExpectRejected(BuildBatchRequest(not_problem), "file", "--spec TEMPLATE.json");
  ExpectRejected(BuildBatchRequest({}), "file", "assay batch problem.py");
}

TEST_F(PythonCliTest, BatchWithATemplateTakesEveryFileAsACandidate) {
  BatchRequestOptions o;
  o.spec_file = Write("t.json", R"({"kind": "compile", "compile": {"arch": "sm_90"}})");
  o.files = {Write("k1.cu", "extern \"C\" __global__ void k() {}\n"), Write("k2.cu", "bad\n")};
  auto body = BuildBatchRequest(o);
  ASSERT_TRUE(body.ok()) << body.status().ToString();
  EXPECT_EQ((*body)["template"]["kind"], "compile");
  EXPECT_EQ((*body)["template"]["schema_version"], 1);
  EXPECT_FALSE(body->contains("name"));
  ASSERT_EQ((*body)["candidates"].size(), 2u);
  EXPECT_EQ((*body)["candidates"][0]["name"], "k1.cu");
  EXPECT_EQ((*body)["candidates"][1]["source"]["text"], "bad\n");
}

TEST_F(PythonCliTest, EvalRequestHasTheSeedsShape) {
  EvalRequestOptions o;
  o.ref = Write("ref.py", kProblem);
  o.custom = Write("new.py", kCandidate);
  o.custom_type = "triton";
  o.num_trials = 9;
  o.timeout_s = 45;
  auto body = BuildEvalRequest(o);
  ASSERT_TRUE(body.ok()) << body.status().ToString();
  EXPECT_EQ((*body)["ref_kernel"]["source_code"], kProblem);
  EXPECT_EQ((*body)["ref_kernel"]["kernel_type"], "torch");
  EXPECT_EQ((*body)["custom_kernel"]["source_code"], kCandidate);
  EXPECT_EQ((*body)["custom_kernel"]["kernel_type"], "triton");
  EXPECT_EQ((*body)["num_trials"], 9);
  EXPECT_EQ((*body)["timeout"], 45);

  o.legacy = true;
  o.num_trials = 0;
  o.timeout_s = 0;
  auto legacy = BuildEvalRequest(o);
  ASSERT_TRUE(legacy.ok());
  EXPECT_EQ(*legacy, json({{"ref_code", kProblem}, {"custom_code", kCandidate}}));

  EvalRequestOptions missing;
  missing.ref = o.ref;
  ExpectRejected(BuildEvalRequest(missing), "ref", "--custom NEW.py");
}

json BatchDoc() {
  return json::parse(R"({
    "batch_id": "b_1", "name": "sweep",
    "jobs": [
      {"name": "slow.py", "job_id": "j_1", "state": "done", "verdict": "correct", "correct": true,
       "runtime_ms": 2.0, "speedup": 0.5, "error": null},
      {"name": "fast.py", "job_id": "j_2", "state": "done", "verdict": "correct", "correct": true,
       "runtime_ms": 0.5, "speedup": 2.0, "error": null},
      {"name": "cheat.py", "job_id": "j_3", "state": "failed", "verdict": "wrong_result", "correct": false,
       "runtime_ms": 0.01, "speedup": 100.0,
       "error": {"class": "wrong_result", "message": "output 0: 8 of 8 elements differ\nsecond line"}},
      {"name": "later.py", "job_id": "j_4", "state": "running", "verdict": "running", "correct": null,
       "runtime_ms": null, "speedup": null, "error": null}],
    "summary": {"total": 4, "finished": 3, "all_finished": false, "correct": 2,
                "by_state": {"done": 2, "failed": 1, "running": 1},
                "fastest_correct": {"name": "fast.py", "job_id": "j_2", "runtime_ms": 0.5, "speedup": 2.0}}})");
}

TEST(BatchFormatTest, TableHasOneRowPerCandidateAndTheWinner) {
  std::string text = FormatBatch(BatchDoc());
  EXPECT_TRUE(Contains(text, "Batch b_1  sweep  4 candidates")) << text;
  EXPECT_TRUE(Contains(text, "candidate  verdict       runtime  speedup  job")) << text;
  EXPECT_TRUE(Contains(text, "fast.py    correct       500 µs   2.00x    j_2")) << text;
  EXPECT_TRUE(Contains(text, "cheat.py   wrong_result  10.0 µs  100.00x  j_3")) << text;
  EXPECT_TRUE(Contains(text, "later.py   running       -        -        j_4")) << text;
  EXPECT_TRUE(Contains(text, "2 of 4 correct; fastest correct: fast.py (500 µs, 2.00x)")) << text;
  EXPECT_TRUE(Contains(text, "  cheat.py: output 0: 8 of 8 elements differ\n")) << text;
  EXPECT_FALSE(Contains(text, "second line")) << text;
  EXPECT_EQ(FormatBatchProgress(BatchDoc(), 4.25), "b_1  3/4 finished (1 running, 0 queued)  4.2 s");
}

TEST(BatchFormatTest, ExitCodeIsTheWorstCandidate) {
  json all_done = {{"jobs", {{{"state", "done"}}, {{"state", "done"}}}}};
  EXPECT_EQ(ExitCodeForBatch(all_done), kExitOk);
  json doc = BatchDoc();
  doc["jobs"][3]["state"] = "done";
  EXPECT_EQ(ExitCodeForBatch(doc), kExitJobFailed);
  doc["jobs"][3] = {{"state", "cancelled"}};
  EXPECT_EQ(ExitCodeForBatch(doc), kExitJobFailed) << "a failure outranks a cancel";
  EXPECT_EQ(ExitCodeForBatch({{"jobs", {{{"state", "done"}}, {{"state", "cancelled"}}}}}), kExitCancelled);
  EXPECT_EQ(ExitCodeForBatch({{"jobs", {{{"state", "timed_out"}}}}}), kExitJobFailed);
  doc["jobs"][0] = {{"state", "failed"}, {"error", {{"class", "infra_error"}}}};
  EXPECT_EQ(ExitCodeForBatch(doc), kExitInfra) << "an outage outranks everything";
  EXPECT_EQ(ExitCodeForBatch({{"jobs", {{{"state", "failed"}, {"error", {{"class", "rejected"}}}}}}}), kExitUsage);
}

TEST(EvalFormatTest, ShowsTheSeedFieldsErrorAndWarnings) {
  json e = {{"job_id", "j_9"},   {"status", "success"}, {"state", "done"},   {"compiled", true},
            {"correctness", true}, {"runtime", 0.013},   {"ref_runtime", 0.025}, {"speedup", 1.923},
            {"error", nullptr},  {"warnings", {"'ref_kernel.io' is ignored: ..."}}};
  std::string text = FormatEval(e);
  EXPECT_TRUE(Contains(text, "Job j_9  status success (done)")) << text;
  EXPECT_TRUE(Contains(text, "yes       yes          13.0 µs  25.0 µs      1.92x")) << text;
  EXPECT_TRUE(Contains(text, "warning: 'ref_kernel.io' is ignored")) << text;
  e["status"] = "failed";
  e["compiled"] = false;
  e["runtime"] = nullptr;
  e["error"] = {{"class", "compile_error"}, {"message", "load_inline failed"}};
  text = FormatEval(e);
  EXPECT_TRUE(Contains(text, "error: compile_error: load_inline failed")) << text;
  EXPECT_TRUE(Contains(text, "no        yes          -")) << text;
}

}  // namespace
}  // namespace assay::cli

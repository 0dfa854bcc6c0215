// Seed 002 request mapping: every accepted shape, every rejection path (each
// naming the seed's field), and the answer built from a job document.
#include "spec/seed002.h"

#include <gtest/gtest.h>

#include "spec/job_spec.h"

namespace assay {
namespace {

using nlohmann::json;

constexpr char kProblem[] = R"(import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)

def get_inputs():
    return [torch.randn(16, 16)]

def get_init_inputs():
    return []
)";

constexpr char kCandidate[] = R"(import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def forward(self, x):
        return x.clamp_min(0)
)";

json Kernel(const std::string& source, const std::string& type) {
  return {{"source_code", source}, {"kernel_type", type}};
}

json NewForm(const std::string& ref_type = "torch", const std::string& custom_type = "torch_cuda") {
  return {{"ref_kernel", Kernel(kProblem, ref_type)}, {"custom_kernel", Kernel(kCandidate, custom_type)}};
}

json Legacy() { return {{"ref_code", kProblem}, {"custom_code", kCandidate}}; }

// Expects a rejection naming `field` whose message contains `part`.
void ExpectRejected(const json& body, const std::string& field, const std::string& part = "",
                    const SpecLimits& limits = {}) {
  auto m = MapSeed002Request(body, limits);
  ASSERT_FALSE(m.ok()) << body.dump();
  EXPECT_EQ(m.status().error_class(), ErrorClass::kRejected);
  EXPECT_EQ(m.status().field(), field) << m.status().message();
  EXPECT_NE(m.status().message().find(part), std::string::npos) << m.status().message();
}

TEST(Seed002Test, NewFormMapsToAValidKernelbenchSpec) {
  json body = NewForm();
  body["num_trials"] = 25;
  body["timeout"] = 300;
  auto m = MapSeed002Request(body);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_FALSE(m->legacy);
  EXPECT_TRUE(m->warnings.empty());
  const json& s = m->spec;
  EXPECT_EQ(s["kind"], "kernelbench");
  EXPECT_EQ(s["problem"]["text"], kProblem);
  EXPECT_EQ(s["problem"]["filename"], "problem.py");
  EXPECT_EQ(s["candidate"]["text"], kCandidate);
  EXPECT_EQ(s["candidate"]["filename"], "candidate.py");
  EXPECT_EQ(s["num_trials"], 25);
  EXPECT_EQ(s["timeout_s"], 300);
  EXPECT_EQ(s["name"], "eval: torch_cuda vs torch");
  // The mapped spec is a valid Assay job spec.
  auto spec = ParseJobSpecJson(s);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->kind, JobKind::kKernelbench);
  EXPECT_EQ(spec->num_trials, 25);
  EXPECT_EQ(spec->timeout_s, 300);
  ASSERT_TRUE(spec->candidate.has_value());
  EXPECT_EQ(spec->candidate->data, kCandidate);
}

TEST(Seed002Test, DefaultsAreTheSeeds) {
  auto m = MapSeed002Request(NewForm());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->spec["num_trials"], kSeed002DefaultNumTrials);
  EXPECT_EQ(m->spec["timeout_s"], kSeed002DefaultTimeoutS);
}

TEST(Seed002Test, KernelTypeIsCaseInsensitiveLikeTheSeedsEnumNames) {
  for (auto [ref, custom] : {std::pair{"TORCH", "TORCH_CUDA"}, {"Torch", "Triton"}, {"torch_cuda", "TORCH"},
                             {"triton", "torch"}}) {
    auto m = MapSeed002Request(NewForm(ref, custom));
    ASSERT_TRUE(m.ok()) << ref << "/" << custom << ": " << m.status().ToString();
    EXPECT_EQ(m->spec["kind"], "kernelbench");
  }
  auto m = MapSeed002Request(NewForm("TORCH", "TRITON"));
  EXPECT_EQ(m->spec["name"], "eval: triton vs torch");
}

TEST(Seed002Test, IntegralFloatsAreIntegers) {
  json body = NewForm();
  body["num_trials"] = 50.0;
  body["timeout"] = 1e2;
  auto m = MapSeed002Request(body);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->spec["num_trials"], 50);
  EXPECT_EQ(m->spec["timeout_s"], 100);
}

TEST(Seed002Test, LegacyFormIsTorchAgainstTorchCuda) {
  json body = Legacy();
  body["num_trials"] = 7;
  body["timeout"] = 60;
  auto m = MapSeed002Request(body);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_TRUE(m->legacy);
  EXPECT_EQ(m->spec["kind"], "kernelbench");
  EXPECT_EQ(m->spec["problem"]["text"], kProblem);
  EXPECT_EQ(m->spec["candidate"]["text"], kCandidate);
  EXPECT_EQ(m->spec["num_trials"], 7);
  EXPECT_EQ(m->spec["timeout_s"], 60);
  EXPECT_EQ(m->spec["name"], "eval: torch_cuda vs torch");
  EXPECT_TRUE(ParseJobSpecJson(m->spec).ok());
  auto defaults = MapSeed002Request(Legacy());
  ASSERT_TRUE(defaults.ok());
  EXPECT_EQ(defaults->spec["num_trials"], 100);
  EXPECT_EQ(defaults->spec["timeout_s"], 120);
}

TEST(Seed002Test, IoContractAndMetadataAreAcceptedAndIgnoredWithAWarning) {
  json body = NewForm();
  body["ref_kernel"]["io"] = {{"args", json::array()}};
  body["custom_kernel"]["metadata"] = {{"kernel_name", "relu"}};
  body["custom_kernel"]["io"] = nullptr;  // null is absent
  auto m = MapSeed002Request(body);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ASSERT_EQ(m->warnings.size(), 2u);
  EXPECT_NE(m->warnings[0].find("'ref_kernel.io' is ignored"), std::string::npos) << m->warnings[0];
  EXPECT_NE(m->warnings[0].find("get_inputs()"), std::string::npos) << m->warnings[0];
  EXPECT_NE(m->warnings[1].find("'custom_kernel.metadata' is ignored"), std::string::npos) << m->warnings[1];
  EXPECT_FALSE(m->spec.contains("io"));
}

TEST(Seed002Test, ParsesText) {
  auto m = ParseSeed002Request(Legacy().dump());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->spec["kind"], "kernelbench");

  auto bad = ParseSeed002Request("{\"ref_code\": ");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().field(), "");
  EXPECT_NE(bad.status().message().find("malformed JSON at byte"), std::string::npos) << bad.status().message();

  SpecLimits small;
  small.max_spec_bytes = 64;
  auto big = ParseSeed002Request(Legacy().dump(), small);
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("the limit is 64"), std::string::npos) << big.status().message();

  auto deep = ParseSeed002Request(std::string(100, '[') + std::string(100, ']'));
  ASSERT_FALSE(deep.ok());
  EXPECT_NE(deep.status().message().find("nests deeper"), std::string::npos) << deep.status().message();
}

TEST(Seed002Test, DocumentShapeRejections) {
  ExpectRejected(json::array(), "", "JSON object");
  ExpectRejected(json::object(), "ref_kernel", "needs ref_kernel and custom_kernel");
  json mixed = NewForm();
  mixed["ref_code"] = kProblem;
  ExpectRejected(mixed, "ref_code", "mixes the two seed-002 forms");
  json unknown = NewForm();
  unknown["num_trails"] = 3;
  ExpectRejected(unknown, "num_trails", "did you mean 'num_trials'");
  json unknown_legacy = Legacy();
  unknown_legacy["device"] = "cuda:0";
  ExpectRejected(unknown_legacy, "device", "legacy seed-002 request has ref_code");
}

TEST(Seed002Test, MissingAndMistypedFieldsAreNamed) {
  json no_custom = NewForm();
  no_custom.erase("custom_kernel");
  ExpectRejected(no_custom, "custom_kernel", "missing required field");
  json no_legacy_custom = Legacy();
  no_legacy_custom.erase("custom_code");
  ExpectRejected(no_legacy_custom, "custom_code", "missing required field");
  json legacy_type = Legacy();
  legacy_type["ref_code"] = 42;
  ExpectRejected(legacy_type, "ref_code", "must be a string");

  json not_object = NewForm();
  not_object["ref_kernel"] = "class Model: ...";
  ExpectRejected(not_object, "ref_kernel", "must be an object");
  json typo = NewForm();
  typo["ref_kernel"]["kernel_typ"] = "torch";
  ExpectRejected(typo, "ref_kernel.kernel_typ", "did you mean 'kernel_type'");
  json no_source = NewForm();
  no_source["custom_kernel"].erase("source_code");
  ExpectRejected(no_source, "custom_kernel.source_code", "missing required field");
  json source_type = NewForm();
  source_type["custom_kernel"]["source_code"] = json::array();
  ExpectRejected(source_type, "custom_kernel.source_code", "must be a string");
  json no_type = NewForm();
  no_type["ref_kernel"].erase("kernel_type");
  ExpectRejected(no_type, "ref_kernel.kernel_type", "torch, torch_cuda, triton, cuda");
  ExpectRejected(NewForm("torch", "cupy"), "custom_kernel.kernel_type", "unknown kernel_type 'cupy'");
  json io = NewForm();
  io["custom_kernel"]["io"] = "x";
  ExpectRejected(io, "custom_kernel.io", "must be an object");
  json metadata = NewForm();
  metadata["ref_kernel"]["metadata"] = 3;
  ExpectRejected(metadata, "ref_kernel.metadata", "must be an object");
}

TEST(Seed002Test, NumbersOutOfRangeAreNamed) {
  for (json bad : {json(0), json(10001), json("5"), json(1.5)}) {
    json body = NewForm();
    body["num_trials"] = bad;
    ExpectRejected(body, "num_trials");
  }
  for (json bad : {json(0), json(3601), json(-1)}) {
    json body = Legacy();
    body["timeout"] = bad;
    ExpectRejected(body, "timeout");
  }
  SpecLimits small;
  small.max_source_bytes = 16;
  ExpectRejected(NewForm(), "ref_kernel.source_code", "the limit is 16", small);
  ExpectRejected(Legacy(), "ref_code", "the limit is 16", small);
}

TEST(Seed002Test, RawCudaPointsAtTheCudaKind) {
  ExpectRejected(NewForm("torch", "cuda"), "custom_kernel.kernel_type", "POST /v1/jobs");
  ExpectRejected(NewForm("torch", "CUDA"), "custom_kernel.kernel_type", "kind 'cuda'");
  ExpectRejected(NewForm("cuda", "torch_cuda"), "ref_kernel.kernel_type", "not a KernelBench problem");
}

TEST(Seed002Test, ReferenceMustBeAKernelBenchProblem) {
  json no_inputs = NewForm();
  no_inputs["ref_kernel"]["source_code"] = "class Model:\n    pass\n";
  ExpectRejected(no_inputs, "ref_kernel.source_code", "does not define `def get_inputs()`");
  json no_model = NewForm();
  no_model["ref_kernel"]["source_code"] = "def get_inputs():\n    return []\n";
  ExpectRejected(no_model, "ref_kernel.source_code", "does not define `class Model`");
  json neither = Legacy();
  neither["ref_code"] = "import torch\n";
  ExpectRejected(neither, "ref_code", "`class Model` and `def get_inputs()`");
  // An IO-contract reference is told where it runs.
  ExpectRejected(neither, "ref_code", "kind 'torch', 'torch_cuda' or 'triton' with 'args'");
}

TEST(Seed002Test, CandidateMustDefineModelNew) {
  json body = NewForm();
  body["custom_kernel"]["source_code"] = "class Model2:\n    pass\nModelNewer = 1\n";
  ExpectRejected(body, "custom_kernel.source_code", "does not define `ModelNew`");
  json legacy = Legacy();
  legacy["custom_code"] = kProblem;
  ExpectRejected(legacy, "custom_code", "ModelNew");
}

TEST(Seed002Test, SpecErrorsMapBackToSeedFields) {
  auto m = MapSeed002Request(NewForm());
  ASSERT_TRUE(m.ok());
  json spec = m->spec;
  spec["problem"]["text"] = std::string("class Model: pass\0", 18);
  auto parsed = ParseJobSpecJson(spec);
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().field(), "problem.text");
  EXPECT_EQ(Seed002Field(parsed.status().field(), false), "ref_kernel.source_code");
  EXPECT_EQ(Seed002Field("problem.text", true), "ref_code");
  EXPECT_EQ(Seed002Field("candidate", false), "custom_kernel.source_code");
  EXPECT_EQ(Seed002Field("candidate.base64", true), "custom_code");
  EXPECT_EQ(Seed002Field("timeout_s", false), "timeout");
  EXPECT_EQ(Seed002Field("num_trials", true), "num_trials");
  EXPECT_EQ(Seed002Field("kind", false), "");
  EXPECT_EQ(Seed002Field("problems", false), "");
}

TEST(Seed002Test, PythonTopLevelNames) {
  EXPECT_TRUE(DefinesPythonName("class Model(nn.Module):\n", "Model"));
  EXPECT_TRUE(DefinesPythonName("x = 1\nclass Model:\n", "Model"));
  EXPECT_TRUE(DefinesPythonName("def get_inputs():\n", "get_inputs"));
  EXPECT_TRUE(DefinesPythonName("async def  get_inputs ():\n", "get_inputs"));
  EXPECT_TRUE(DefinesPythonName("ModelNew = Model\n", "ModelNew"));
  EXPECT_TRUE(DefinesPythonName("ModelNew: type = Model\r\n", "ModelNew"));
  EXPECT_FALSE(DefinesPythonName("class Model2(nn.Module):\n", "Model"));
  EXPECT_FALSE(DefinesPythonName("    class Model:\n", "Model")) << "nested, not top level";
  EXPECT_FALSE(DefinesPythonName("# class Model:\n", "Model"));
  EXPECT_FALSE(DefinesPythonName("Model == x\n", "Model"));
  EXPECT_FALSE(DefinesPythonName("Model.forward = f\n", "Model"));
  EXPECT_FALSE(DefinesPythonName("", "Model"));
  EXPECT_TRUE(IsKernelBenchProblem(kProblem));
  EXPECT_FALSE(IsKernelBenchProblem(kCandidate));
}

TEST(Seed002Test, IsSeed002RequestLooksForItsFields) {
  EXPECT_TRUE(IsSeed002Request(NewForm()));
  EXPECT_TRUE(IsSeed002Request(Legacy()));
  EXPECT_TRUE(IsSeed002Request(json{{"custom_code", ""}}));
  EXPECT_FALSE(IsSeed002Request(json{{"kind", "cuda"}}));
  EXPECT_FALSE(IsSeed002Request(json::array()));
}

TEST(Seed002Test, ResponseOfAPendingJob) {
  json job = {{"id", "j_1"}, {"state", "queued"}, {"queue_position", 3}, {"error", nullptr}, {"result", nullptr}};
  json r = Seed002Response(job, {"w"});
  EXPECT_EQ(r["job_id"], "j_1");
  EXPECT_EQ(r["status"], "pending");
  EXPECT_EQ(r["state"], "queued");
  EXPECT_EQ(r["queue_position"], 3);
  EXPECT_TRUE(r["kernel_exec_result"].is_null());
  EXPECT_TRUE(r["compiled"].is_null());
  EXPECT_TRUE(r["result"].is_null());
  EXPECT_EQ(r["warnings"], json::array({"w"}));
}

TEST(Seed002Test, ResponseOfADoneJobCarriesTheKernelbenchFieldsFlatAndNested) {
  json kb = {{"compiled", true},     {"correctness", true}, {"runtime", 0.013}, {"ref_runtime", 0.025},
             {"speedup", 1.92},      {"runtime_stats", {{"mean", 0.013}, {"num_trials", 100}}},
             {"ref_runtime_stats", {{"mean", 0.025}}},
             {"metadata", {{"correctness_trials", "(5 / 5)"}}}};
  json job = {{"id", "j_2"},
              {"state", "done"},
              {"queue_position", nullptr},
              {"error", nullptr},
              {"result", {{"job_id", "j_2"}, {"kind", "kernelbench"}, {"kernelbench", kb}, {"timing", {{"x", 1}}}}}};
  json r = Seed002Response(job);
  EXPECT_EQ(r["status"], "success");
  EXPECT_EQ(r["compiled"], true);
  EXPECT_EQ(r["correctness"], true);
  EXPECT_EQ(r["runtime"], 0.013);
  EXPECT_EQ(r["ref_runtime"], 0.025);
  EXPECT_EQ(r["speedup"], 1.92);
  EXPECT_EQ(r["runtime_stats"]["num_trials"], 100);
  EXPECT_EQ(r["ref_runtime_stats"]["mean"], 0.025);
  EXPECT_EQ(r["metadata"]["correctness_trials"], "(5 / 5)");
  EXPECT_EQ(r["kernel_exec_result"]["runtime"], 0.013);
  EXPECT_EQ(r["kernel_exec_result"]["correctness"], true);
  EXPECT_FALSE(r["kernel_exec_result"].contains("speedup"));
  EXPECT_EQ(r["result"]["timing"]["x"], 1) << "the whole Assay result rides along";
  EXPECT_TRUE(r["error"].is_null());
}

TEST(Seed002Test, ResponseOfAFailedJobWithoutAHarnessReport) {
  json job = {{"id", "j_3"},
              {"state", "failed"},
              {"error", {{"class", "compile_error"}, {"message", "load_inline failed"}}},
              {"result", {{"kernelbench", nullptr}}}};
  json r = Seed002Response(job);
  EXPECT_EQ(r["status"], "failed");
  EXPECT_EQ(r["compiled"], false);
  EXPECT_EQ(r["correctness"], false);
  EXPECT_EQ(r["kernel_exec_result"]["compiled"], false);
  EXPECT_EQ(r["error"]["class"], "compile_error");

  job["error"] = {{"class", "runtime_error"}, {"message", "boom"}};
  EXPECT_EQ(Seed002Response(job)["compiled"], true);
  job["state"] = "cancelled";
  job["error"] = {{"class", "cancelled"}, {"message", "by request"}};
  r = Seed002Response(job);
  EXPECT_TRUE(r["compiled"].is_null()) << "nothing is known about a job cancelled before it ran";
  EXPECT_EQ(r["status"], "failed");
}

}  // namespace
}  // namespace assay

#include "spec/job_spec.h"

#include <gtest/gtest.h>

#include "spec/base64.h"
#include "spec/spec_test_util.h"

namespace assay {
namespace {
using nlohmann::json;
using testing::Apply;
using testing::kHash;
using testing::ParseAndRoundTrip;
using testing::VectorAddSpec;

TEST(JobSpecTest, ParsesVectorAddWithDefaults) {
  Result<JobSpec> r = ParseAndRoundTrip(VectorAddSpec());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const JobSpec& s = *r;
  EXPECT_EQ(s.kind, JobKind::kCuda);
  EXPECT_EQ(s.entry, "add");
  EXPECT_EQ(s.timeout_s, 60);
  EXPECT_EQ(s.source.form, SourceSpec::Form::kText);
  EXPECT_EQ(s.source.filename, "kernel.cu");
  ASSERT_TRUE(s.compile.has_value());
  EXPECT_EQ(s.compile->compiler, "nvrtc");
  EXPECT_EQ(s.compile->arch, "");
  ASSERT_EQ(s.args.size(), 4u);
  EXPECT_EQ(s.args[0].role, ArgRole::kIn);
  ASSERT_TRUE(s.args[0].init.has_value());
  EXPECT_EQ(s.args[0].init->kind, InitSpec::Kind::kUniform);  // default for floats
  EXPECT_EQ(s.args[0].init->a, -1);
  EXPECT_EQ(s.args[1].init->kind, InitSpec::Kind::kNormal);
  EXPECT_EQ(s.args[1].init->b, 2);
  EXPECT_FALSE(s.args[2].init.has_value());
  EXPECT_EQ(std::get<int64_t>(s.args[3].value), 1024);
  ASSERT_TRUE(s.correctness.has_value());
  EXPECT_EQ(s.correctness->trials, 3);
  EXPECT_EQ(s.correctness->tolerance.size(), 10u);
  EXPECT_EQ(s.correctness->tolerance.at(DType::kF32).rtol, 1e-4);
  EXPECT_TRUE(s.correctness->check_after_timing);
  ASSERT_TRUE(s.timing.has_value());
  EXPECT_EQ(s.timing->mode, TimingSpec::Mode::kCold);
  EXPECT_EQ(s.timing->min_samples, 10);
  EXPECT_EQ(s.timing->max_samples, 1000);
  EXPECT_EQ(s.timing->noise_target, 0.005);
  EXPECT_EQ(s.timing->time_budget_ms, 2000);
  EXPECT_EQ(s.timing->warmup_ms, 100);
  ASSERT_TRUE(s.reference && s.reference->kernel);
  EXPECT_EQ(s.reference->kernel->entry, "ref");
  EXPECT_EQ(s.outputs, std::vector<std::string>{"c"});
  EXPECT_FALSE(s.program.has_value());
}

TEST(JobSpecTest, ResolvesShapesAndLaunch) {
  json doc = Apply(VectorAddSpec(), {{"/args/3/value", 1000},
                                     {"/launch/block", json::array({128, 2})},
                                     {"/launch/shared_mem_bytes", "n * 4"}});
  Result<JobSpec> r = ParseAndRoundTrip(doc);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  auto shape = ResolveShape(*r, r->args[0]);
  ASSERT_TRUE(shape.ok());
  EXPECT_EQ(*shape, std::vector<int64_t>{1000});
  auto launch = ResolveLaunch(*r, *r->launch);
  ASSERT_TRUE(launch.ok());
  EXPECT_EQ(launch->grid[0], 4);  // ceil_div(1000, 256)
  EXPECT_EQ(launch->grid[1], 1);
  EXPECT_EQ(launch->block[0], 128);
  EXPECT_EQ(launch->block[1], 2);
  EXPECT_EQ(launch->block[2], 1);
  EXPECT_EQ(launch->shared_mem_bytes, 4000);
  EXPECT_EQ(ScalarVars(*r), (std::map<std::string, int64_t>{{"n", 1000}}));
}

TEST(JobSpecTest, ShapesMayNameScalarsDeclaredLater) {
  json doc = VectorAddSpec();
  json n = doc["args"][3];
  doc["args"].erase(3);
  doc["args"].push_back(n);
  doc["args"][0]["shape"] = {"n", 2};
  ASSERT_TRUE(ParseAndRoundTrip(doc).ok());
}

TEST(JobSpecTest, ScalarValuesAreExact) {
  json doc = VectorAddSpec();
  doc["args"].push_back({{"name", "big"}, {"role", "scalar"}, {"dtype", "i64"},
                         {"value", 9007199254740993LL}});
  doc["args"].push_back({{"name", "flag"}, {"role", "scalar"}, {"dtype", "bool"}, {"value", true}});
  doc["args"].push_back({{"name", "alpha"}, {"role", "scalar"}, {"dtype", "f32"}, {"value", 0.5}});
  Result<JobSpec> r = ParseAndRoundTrip(doc);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(std::get<int64_t>(r->args[4].value), 9007199254740993LL);
  EXPECT_EQ(std::get<int64_t>(r->args[5].value), 1);
  EXPECT_EQ(ToJson(*r)["args"][5]["value"], true);
  EXPECT_EQ(std::get<double>(r->args[6].value), 0.5);
}

TEST(JobSpecTest, ToleranceOverrides) {
  json doc = Apply(VectorAddSpec(), {{"/correctness", {{"atol", 0.5}, {"rtol", {{"f16", 0.25}}}}},
                                     {"/args/2/tolerance", {{"rtol", 1e-3}}}});
  Result<JobSpec> r = ParseAndRoundTrip(doc);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->correctness->tolerance.at(DType::kI8).atol, 0.5);  // a number: every dtype
  EXPECT_EQ(r->correctness->tolerance.at(DType::kF16).rtol, 0.25);
  EXPECT_EQ(r->correctness->tolerance.at(DType::kF32).rtol, 1e-4);
  ASSERT_TRUE(r->args[2].tolerance.has_value());
  EXPECT_EQ(r->args[2].tolerance->rtol, 1e-3);
  EXPECT_EQ(r->args[2].tolerance->atol, DefaultTolerance(DType::kF32).atol);
}

TEST(JobSpecTest, ExpectedDataReference) {
  json doc = Apply(VectorAddSpec(),
                   {{"/reference", {{"expected", {{"c", {{"blob", std::string(64, 'A')},
                                                         {"format", "safetensors"},
                                                         {"tensor", "c"}}}}}}}});
  Result<JobSpec> r = ParseAndRoundTrip(doc);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_FALSE(r->reference->kernel.has_value());
  EXPECT_EQ(r->reference->expected.at("c").hash, std::string(64, 'a'));  // normalized lower case
  EXPECT_EQ(r->reference->expected.at("c").tensor, "c");
}

TEST(JobSpecTest, NullMeansAbsent) {
  json doc = Apply(VectorAddSpec(), {{"/name", nullptr}, {"/timing", nullptr}});
  doc["gpu"] = nullptr;
  Result<JobSpec> r = ParseAndRoundTrip(doc);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->timing->max_samples, 1000);
}

TEST(JobSpecTest, CompileKind) {
  json doc = {{"kind", "compile"},
              {"source", {{"text", "__global__ void k() {}"}}},
              {"compile", {{"arch", "sm_90a"}, {"flags", {"-O3", "-DN=4", "-maxrregcount=64", "-G"}},
                           {"ptx", true}, {"sass", true}}}};
  Result<JobSpec> r = ParseAndRoundTrip(doc);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->compile->arch, "sm_90a");
  EXPECT_EQ(r->compile->flags.size(), 4u);
  EXPECT_FALSE(r->correctness.has_value());
  EXPECT_FALSE(r->timing.has_value());
  EXPECT_FALSE(r->profile.has_value());
  json norm = ToJson(*r);
  EXPECT_FALSE(norm.contains("args"));
  EXPECT_FALSE(norm.contains("timing"));
  for (const char* key : {"args", "launch", "entry", "timing", "profile", "reference", "outputs",
                          "program", "correctness"}) {
    json bad = doc;
    bad[key] = json::object();
    Result<JobSpec> b = ParseJobSpec(bad.dump());
    ASSERT_FALSE(b.ok()) << key;
    EXPECT_EQ(b.status().field(), key);
    EXPECT_NE(b.status().message().find("does not apply to kind 'compile'"), std::string::npos);
  }
}

TEST(JobSpecTest, CudaProgramKind) {
  json doc = {{"kind", "cuda_program"},
              {"source", {{"text", "int main() { return 0; }"}, {"filename", "main.cu"}}},
              {"compile", {{"flags", {"-lcublas", "--expt-relaxed-constexpr"}}}},
              {"program", {{"argv", {"--size", "1024"}}, {"stdin", "x"},
                           {"env", {{"MY_SETTING", "1"}}}}}};
  Result<JobSpec> r = ParseAndRoundTrip(doc);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->compile->compiler, "nvcc");
  EXPECT_EQ(r->program->argv.size(), 2u);
  EXPECT_EQ(r->program->stdout_limit_bytes, 1 << 20);
  EXPECT_EQ(r->program->env.at("MY_SETTING"), "1");
  EXPECT_TRUE(r->profile.has_value());

  struct Case {
    std::vector<testing::Edit> edits;
    const char* field;
  } cases[] = {
      {{{"/compile/compiler", "nvrtc"}}, "compile.compiler"},
      {{{"/program/env/LD_PRELOAD", "x.so"}}, "program.env.LD_PRELOAD"},
      {{{"/program/env/CUDA_VISIBLE_DEVICES", "1"}}, "program.env.CUDA_VISIBLE_DEVICES"},
      {{{"/program/env/1X", "1"}}, "program.env.1X"},
      {{{"/program/env/X", 1}}, "program.env.X"},
      {{{"/program/stdout_limit_bytes", 17 << 20}}, "program.stdout_limit_bytes"},
      {{{"/program/stderr_limit_bytes", -1}}, "program.stderr_limit_bytes"},
      {{{"/program/argv/0", 1}}, "program.argv[0]"},
      {{{"/program/argc", 1}}, "program.argc"},
      {{{"/timing", json::object()}}, "timing"},
      {{{"/entry", "main"}}, "entry"},
      {{{"/compile/flags/0", "-lssl"}}, "compile.flags[0]"},
  };
  for (const Case& c : cases) {
    Result<JobSpec> b = ParseJobSpec(Apply(doc, c.edits).dump());
    ASSERT_FALSE(b.ok()) << c.field;
    EXPECT_EQ(b.status().field(), c.field) << b.status().message();
  }
}

TEST(JobSpecTest, CubinNeedsBinarySource) {
  json doc = VectorAddSpec();
  doc["kind"] = "cubin";
  doc.erase("compile");
  Result<JobSpec> r = ParseJobSpec(doc.dump());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().field(), "source.text");

  doc["source"] = {{"blob", std::string(64, 'B')}};
  r = ParseAndRoundTrip(doc);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->source.form, SourceSpec::Form::kBlob);
  EXPECT_EQ(r->source.blob, std::string(64, 'b'));
  EXPECT_EQ(r->source.filename, "kernel.cubin");
  EXPECT_FALSE(r->compile.has_value());

  std::string bytes("\x7f" "ELF\0\1\2\xff", 8);
  doc["source"] = {{"base64", Base64Encode(bytes)}};
  r = ParseAndRoundTrip(doc);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->source.data, bytes);

  doc["compile"] = json::object();
  r = ParseJobSpec(doc.dump());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().field(), "compile");
}

TEST(JobSpecTest, PtxAcceptsText) {
  json doc = VectorAddSpec();
  doc["kind"] = "ptx";
  doc.erase("compile");
  doc["source"] = {{"text", ".version 8.0\n.target sm_90\n"}};
  Result<JobSpec> r = ParseAndRoundTrip(doc);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->source.filename, "kernel.ptx");
}

TEST(JobSpecTest, PythonKinds) {
  json triton = {{"kind", "triton"},
                 {"source", {{"text", "import triton\ndef launch(x, y): pass\n"}}},
                 {"args", {{{"name", "x"}, {"role", "in"}, {"dtype", "f16"}, {"shape", {4096}}},
                           {{"name", "y"}, {"role", "out"}, {"dtype", "f16"}, {"shape", {4096}}}}},
                 {"reference", {{"kind", "torch"}, {"source", {{"text", "class Model: pass"}}}}}};
  Result<JobSpec> r = ParseAndRoundTrip(triton);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->entry, "launch");
  EXPECT_EQ(r->source.filename, "kernel.py");
  EXPECT_EQ(r->reference->kernel->entry, "Model");
  json bad = triton;
  bad["launch"] = {{"grid", {1}}, {"block", {1}}};
  r = ParseJobSpec(bad.dump());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().field(), "launch");

  json torch = {{"kind", "torch_cuda"}, {"source", {{"text", "class Model: pass"}}}};
  r = ParseAndRoundTrip(torch);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->entry, "Model");

  json kb = {{"kind", "kernelbench"},
             {"problem", {{"text", "class Model: pass"}}},
             {"candidate", {{"text", "class ModelNew: pass"}}},
             {"num_trials", 50}};
  r = ParseAndRoundTrip(kb);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->num_trials, 50);
  EXPECT_EQ(r->problem->filename, "problem.py");
  EXPECT_EQ(r->candidate->filename, "candidate.py");
  struct Case {
    std::vector<testing::Edit> edits;
    const char* field;
  } cases[] = {
      {{{"/candidate", nullptr}}, "candidate"},
      {{{"/num_trials", 0}}, "num_trials"},
      {{{"/source", {{"text", "x"}}}}, "source"},
      {{{"/args", json::array()}}, "args"},
      {{{"/problem", {{"text", "x"}, {"blob", kHash}}}}, "problem.blob"},
  };
  for (const Case& c : cases) {
    Result<JobSpec> b = ParseJobSpec(Apply(kb, c.edits).dump());
    ASSERT_FALSE(b.ok()) << c.field;
    EXPECT_EQ(b.status().field(), c.field) << b.status().message();
  }
}

TEST(JobSpecTest, EveryInitKindRoundTrips) {
  json doc = VectorAddSpec();
  doc["args"][0]["init"] = {{"kind", "int"}, {"low", -3}, {"high", 3}};
  doc["args"][1]["init"] = {{"kind", "const"}, {"value", 2.5}};
  doc["args"].push_back({{"name", "m"}, {"role", "in"}, {"dtype", "u8"}, {"shape", {4}}});
  doc["args"].push_back({{"name", "w"}, {"role", "inout"}, {"dtype", "bf16"}, {"shape", {"n", 2}},
                         {"init", {{"kind", "blob"}, {"hash", kHash}, {"format", "raw"}}}});
  doc["args"].push_back({{"name", "mask"}, {"role", "in"}, {"dtype", "bool"}, {"shape", {8}},
                         {"init", {{"kind", "const"}, {"value", true}}}});
  Result<JobSpec> r = ParseAndRoundTrip(doc);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->args[4].init->kind, InitSpec::Kind::kInt);  // default for integers
  EXPECT_EQ(r->args[4].init->a, 0);                        // clipped to u8
  EXPECT_EQ(r->args[4].init->b, 100);
  EXPECT_EQ(r->args[5].init->blob.format, "raw");
  EXPECT_EQ(r->args[6].init->a, 1);
}

TEST(JobSpecTest, SchemaVersionDefaultsToOne) {
  json doc = VectorAddSpec();
  doc.erase("schema_version");
  Result<JobSpec> r = ParseJobSpec(doc.dump());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(ToJson(*r)["schema_version"], 1);
}

}  // namespace
}  // namespace assay

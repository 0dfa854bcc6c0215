// Every way a vector-add spec can be broken, each asserting the exact JSON
// path of the field the rejection names.
#include <gtest/gtest.h>

#include "spec/spec_test_util.h"

namespace assay {
namespace {
using nlohmann::json;
using testing::Apply;
using testing::Edit;
using testing::kHash;
using testing::VectorAddSpec;

struct BadCase {
  const char* what;
  std::vector<Edit> edits;
  const char* field;
};

const BadCase kBadCases[] = {
    {"unknown dtype", {{"/args/2/dtype", "f33"}}, "args[2].dtype"},
    {"division by zero in grid", {{"/launch/grid/0", "ceil_div(n, 0)"}}, "launch.grid[0]"},
    {"unknown name in grid", {{"/launch/grid/0", "m + 1"}}, "launch.grid[0]"},
    {"grid expression syntax", {{"/launch/grid/0", "n +"}}, "launch.grid[0]"},
    {"grid not a number", {{"/launch/grid/0", true}}, "launch.grid[0]"},
    {"grid zero", {{"/launch/grid/0", "n - n"}}, "launch.grid[0]"},
    {"grid y too large", {{"/launch/grid", json::array({1, 70000})}}, "launch.grid[1]"},
    {"grid empty", {{"/launch/grid", json::array()}}, "launch.grid"},
    {"grid four dims", {{"/launch/grid", json::array({1, 1, 1, 1})}}, "launch.grid"},
    {"block too many threads", {{"/launch/block", json::array({1024, 2})}}, "launch.block"},
    {"block x too large", {{"/launch/block/0", 2048}}, "launch.block[0]"},
    {"block z too large", {{"/launch/block", json::array({1, 1, 65})}}, "launch.block[2]"},
    {"negative shared memory", {{"/launch/shared_mem_bytes", -1}}, "launch.shared_mem_bytes"},
    {"huge shared memory", {{"/launch/shared_mem_bytes", "n * 1024"}}, "launch.shared_mem_bytes"},
    {"launch unknown field", {{"/launch/grd", json::array({1})}}, "launch.grd"},
    {"missing launch", {{"/launch", nullptr}}, "launch"},
    {"missing block", {{"/launch/block", nullptr}}, "launch.block"},
    {"bad arch", {{"/compile/arch", "sm_9"}}, "compile.arch"},
    {"virtual arch", {{"/compile/arch", "compute_90"}}, "compile.arch"},
    {"arch suffix", {{"/compile/arch", "sm_90x"}}, "compile.arch"},
    {"include flag", {{"/compile/flags", json::array({"-O3", "-I/etc"})}}, "compile.flags[1]"},
    {"output flag", {{"/compile/flags", json::array({"-o/tmp/x"})}}, "compile.flags[0]"},
    {"define with quote", {{"/compile/flags", json::array({"-DX=\"a\""})}}, "compile.flags[0]"},
    {"maxrregcount range", {{"/compile/flags", json::array({"-maxrregcount=1000"})}},
     "compile.flags[0]"},
    {"link flag on cuda", {{"/compile/flags", json::array({"-lcublas"})}}, "compile.flags[0]"},
    {"flags not array", {{"/compile/flags", "-O3"}}, "compile.flags"},
    {"unknown compiler", {{"/compile/compiler", "clang"}}, "compile.compiler"},
    {"compile unknown field", {{"/compile/optimize", true}}, "compile.optimize"},
    {"unknown kind", {{"/kind", "cudaa"}}, "kind"},
    {"missing kind", {{"/kind", nullptr}}, "kind"},
    {"kind not string", {{"/kind", 3}}, "kind"},
    {"zero timeout", {{"/timeout_s", 0}}, "timeout_s"},
    {"long timeout", {{"/timeout_s", 4000}}, "timeout_s"},
    {"timeout string", {{"/timeout_s", "60"}}, "timeout_s"},
    {"long name", {{"/name", std::string(201, 'x')}}, "name"},
    {"schema version 2", {{"/schema_version", 2}}, "schema_version"},
    {"typo at top level", {{"/tmeout_s", 5}}, "tmeout_s"},
    {"two sources", {{"/source/blob", kHash}}, "source.blob"},
    {"no source content", {{"/source/text", nullptr}}, "source"},
    {"missing source", {{"/source", nullptr}}, "source"},
    {"bad blob hash", {{"/source", {{"blob", "abc"}}}}, "source.blob"},
    {"bad base64", {{"/source", {{"base64", "abc"}}}}, "source.base64"},
    {"filename with slash", {{"/source/filename", "../x.cu"}}, "source.filename"},
    {"NUL in source", {{"/source/text", std::string("a\0b", 3)}}, "source.text"},
    {"entry not identifier", {{"/entry", "my-kernel"}}, "entry"},
    {"missing entry", {{"/entry", nullptr}}, "entry"},
    {"arg name not identifier", {{"/args/0/name", "1a"}}, "args[0].name"},
    {"duplicate arg name", {{"/args/1/name", "a"}}, "args[1].name"},
    {"unknown role", {{"/args/0/role", "input"}}, "args[0].role"},
    {"missing role", {{"/args/0/role", nullptr}}, "args[0].role"},
    {"missing dtype", {{"/args/1/dtype", nullptr}}, "args[1].dtype"},
    {"scalar without value", {{"/args/3/value", nullptr}}, "args[3].value"},
    {"fractional int scalar", {{"/args/3/value", 1.5}}, "args[3].value"},
    {"scalar out of i32 range", {{"/args/3/value", 3000000000LL}}, "args[3].value"},
    {"scalar with shape", {{"/args/3/shape", json::array({1})}}, "args[3].shape"},
    {"tensor with value", {{"/args/0/value", 1}}, "args[0].value"},
    {"tensor without shape", {{"/args/0/shape", nullptr}}, "args[0].shape"},
    {"empty shape", {{"/args/0/shape", json::array()}}, "args[0].shape"},
    {"nine dims", {{"/args/0/shape", json::array({1, 1, 1, 1, 1, 1, 1, 1, 1})}}, "args[0].shape"},
    {"zero dim", {{"/args/0/shape/0", 0}}, "args[0].shape[0]"},
    {"fractional dim", {{"/args/0/shape/0", 1.5}}, "args[0].shape[0]"},
    {"too many elements", {{"/args/0/shape/0", "n * n * n * n"}}, "args[0].shape"},
    {"float scalar in shape", {{"/args/3/dtype", "f32"}}, "args[0].shape[0]"},
    {"arg unknown field", {{"/args/0/extra", 1}}, "args[0].extra"},
    {"args not array", {{"/args", json::object()}}, "args"},
    {"init on out", {{"/args/2/init", {{"kind", "uniform"}}}}, "args[2].init"},
    {"uniform low >= high", {{"/args/0/init", {{"kind", "uniform"}, {"low", 1}, {"high", 0}}}},
     "args[0].init.high"},
    {"normal std 0", {{"/args/1/init/std", 0}}, "args[1].init.std"},
    {"normal field on uniform", {{"/args/0/init", {{"kind", "uniform"}, {"std", 1}}}},
     "args[0].init.std"},
    {"unknown init kind", {{"/args/0/init", {{"kind", "gaussian"}}}}, "args[0].init.kind"},
    {"uniform on int", {{"/args/0/dtype", "i32"}, {"/args/0/init", {{"kind", "uniform"}}}},
     "args[0].init.kind"},
    {"int out of dtype range", {{"/args/0/dtype", "u8"}, {"/args/0/init", {{"kind", "int"}, {"low", -1}}}},
     "args[0].init.low"},
    {"const without value", {{"/args/0/init", {{"kind", "const"}}}}, "args[0].init.value"},
    {"blob bad hash", {{"/args/0/init", {{"kind", "blob"}, {"hash", "xyz"}}}}, "args[0].init.hash"},
    {"blob bad format", {{"/args/0/init", {{"kind", "blob"}, {"hash", kHash}, {"format", "csv"}}}},
     "args[0].init.format"},
    {"blob tensor on npy", {{"/args/0/init", {{"kind", "blob"}, {"hash", kHash}, {"tensor", "x"}}}},
     "args[0].init.tensor"},
    {"tolerance on input", {{"/args/0/tolerance", {{"atol", 1}}}}, "args[0].tolerance"},
    {"negative tolerance", {{"/args/2/tolerance", {{"atol", -1}}}}, "args[2].tolerance.atol"},
    {"reference of kind compile", {{"/reference/kind", "compile"}}, "reference.kind"},
    {"nested reference", {{"/reference/reference", json::object()}}, "reference.reference"},
    {"reference without launch", {{"/reference/launch", nullptr}}, "reference.launch"},
    {"reference bad grid", {{"/reference/launch/grid/0", "q"}}, "reference.launch.grid[0]"},
    {"reference args", {{"/reference/args", json::array()}}, "reference.args"},
    {"expected for an input",
     {{"/reference", {{"expected", {{"a", {{"blob", kHash}}}}}}}}, "reference.expected.a"},
    {"expected missing an output", {{"/reference", {{"expected", json::object()}}}},
     "reference.expected"},
    {"expected bad format",
     {{"/reference", {{"expected", {{"c", {{"blob", kHash}, {"format", "zip"}}}}}}}},
     "reference.expected.c.format"},
    {"expected and kernel",
     {{"/reference/expected", {{"c", {{"blob", kHash}}}}}}, "reference.expected"},
    {"zero trials", {{"/correctness", {{"trials", 0}}}}, "correctness.trials"},
    {"too many trials", {{"/correctness", {{"trials", 101}}}}, "correctness.trials"},
    {"tolerance for unknown dtype", {{"/correctness", {{"atol", {{"f99", 1}}}}}},
     "correctness.atol.f99"},
    {"negative seed", {{"/correctness", {{"seed", -1}}}}, "correctness.seed"},
    {"check_after_timing string", {{"/correctness", {{"check_after_timing", "yes"}}}},
     "correctness.check_after_timing"},
    {"unknown timing mode", {{"/timing", {{"mode", "warm"}}}}, "timing.mode"},
    {"max below min samples", {{"/timing", {{"min_samples", 100}, {"max_samples", 10}}}},
     "timing.max_samples"},
    {"zero noise target", {{"/timing", {{"noise_target", 0}}}}, "timing.noise_target"},
    {"negative flops", {{"/timing", {{"flops", -1}}}}, "timing.flops"},
    {"sections without ncu", {{"/profile", {{"sections", {"SpeedOfLight"}}}}}, "profile.sections"},
    {"bad section name", {{"/profile", {{"ncu", true}, {"sections", {"a b"}}}}}, "profile.sections[0]"},
    {"output that is an input", {{"/outputs", {"a"}}}, "outputs[0]"},
    {"output listed twice", {{"/outputs", {"c", "c"}}}, "outputs[1]"},
    {"program on a cuda job", {{"/program", json::object()}}, "program"},
    {"num_trials on a cuda job", {{"/num_trials", 5}}, "num_trials"},
    {"gpu type not a string", {{"/gpu", {{"type", 5}}}}, "gpu.type"},
    {"gpu unknown field", {{"/gpu", {{"typo", "H100"}}}}, "gpu.typo"},
};

class JobSpecRejectTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(JobSpecRejectTest, NamesTheBadField) {
  const BadCase& c = GetParam();
  json doc = Apply(VectorAddSpec(), c.edits);
  Result<JobSpec> r = ParseJobSpec(doc.dump());
  ASSERT_FALSE(r.ok()) << c.what;
  EXPECT_EQ(r.status().error_class(), ErrorClass::kRejected) << c.what;
  EXPECT_EQ(r.status().field(), c.field) << c.what << ": " << r.status().message();
  EXPECT_FALSE(r.status().message().empty());
}

INSTANTIATE_TEST_SUITE_P(All, JobSpecRejectTest, ::testing::ValuesIn(kBadCases),
                         [](const ::testing::TestParamInfo<BadCase>& info) {
                           std::string name = info.param.what;
                           for (char& ch : name)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return name;
                         });

TEST(JobSpecRejectTest, BaseSpecIsValid) {
  Result<JobSpec> r = testing::ParseAndRoundTrip(VectorAddSpec());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
}

TEST(JobSpecRejectTest, TypoSuggestsTheFieldMeant) {
  json doc = Apply(VectorAddSpec(), {{"/tmeout_s", 5}});
  Result<JobSpec> r = ParseJobSpec(doc.dump());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("did you mean 'timeout_s'"), std::string::npos)
      << r.status().message();
}

TEST(JobSpecRejectTest, UnknownNameListsTheScalars) {
  json doc = Apply(VectorAddSpec(), {{"/launch/grid/0", "m"}});
  Result<JobSpec> r = ParseJobSpec(doc.dump());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("integer scalar args: n"), std::string::npos)
      << r.status().message();
}

TEST(JobSpecRejectTest, BadDocumentsHaveNoField) {
  for (std::string text : {std::string("{"), std::string("[1, 2]"), std::string("null"),
                           std::string("\"cuda\""), std::string("{\"timeout_s\": 1e999}"), std::string(100, '[') + std::string(100, ']')}) {
    Result<JobSpec> r = ParseJobSpec(text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.status().error_class(), ErrorClass::kRejected);
    EXPECT_EQ(r.status().field(), "") << text;
  }
}

TEST(JobSpecRejectTest, LimitsApply) {
  SpecLimits small;
  small.max_spec_bytes = 100;
  Result<JobSpec> r = ParseJobSpec(VectorAddSpec().dump(), small);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("limit is 100"), std::string::npos);

  SpecLimits few;
  few.max_args = 3;
  r = ParseJobSpec(VectorAddSpec().dump(), few);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().field(), "args");

  SpecLimits tiny_source;
  tiny_source.max_source_bytes = 10;
  r = ParseJobSpec(VectorAddSpec().dump(), tiny_source);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().field(), "source.text");

  SpecLimits little_memory;
  little_memory.max_total_bytes = 8192;  // a and b fit (4 KiB each), c does not
  r = ParseJobSpec(VectorAddSpec().dump(), little_memory);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().field(), "args[2].shape");
}

}  // namespace
}  // namespace assay

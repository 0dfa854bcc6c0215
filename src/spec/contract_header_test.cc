#include "spec/contract_header.h"

#include <gtest/gtest.h>

#include "spec/job_spec.h"

namespace assay {
namespace {

TEST(ContractHeaderTest, NoHeaderIsAnEmptyObject) {
  auto r = ExtractContractHeader("__global__ void k() {}\n// assay is great\n");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->is_object());
  EXPECT_TRUE(r->empty());
}

TEST(ContractHeaderTest, BlockHeader) {
  auto r = ExtractContractHeader(
      "// Copyright\n"
      "/* assay: {\n"
      "  \"entry\": \"add\",\n"
      "  \"launch\": {\"grid\": [1], \"block\": [32]}\n"
      "} */\n"
      "extern \"C\" __global__ void add() {}\n");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)["entry"], "add");
  EXPECT_EQ((*r)["launch"]["block"][0], 32);
}

TEST(ContractHeaderTest, OneLineBlockHeader) {
  auto r = ExtractContractHeader("  /* assay: {\"kind\": \"compile\"} */ __global__ void k() {}");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)["kind"], "compile");
}

TEST(ContractHeaderTest, LineHeaderFragmentsAreJoined) {
  auto r = ExtractContractHeader(
      "// assay: {\"entry\": \"add\",\n"
      "   // assay:  \"args\": [\n"
      "// assay:    {\"name\": \"n\", \"role\": \"scalar\", \"dtype\": \"i32\", \"value\": 4}]}\n"
      "__global__ void add() {}\n");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)["args"][0]["value"], 4);
}

TEST(ContractHeaderTest, ErrorsNameTheLine) {
  auto r = ExtractContractHeader(
      "// line 1\n"
      "/* assay: {\n"
      "  \"entry\": \"add\",\n"
      "  \"launch\": {\"grid\": [1] \"block\": [32]}\n"
      "} */\n");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().error_class(), ErrorClass::kRejected);
  EXPECT_NE(r.status().message().find("line 4"), std::string::npos) << r.status().message();

  r = ExtractContractHeader("// assay: {\"a\": 1,\n// assay: \"b\": }\n");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("line 2"), std::string::npos) << r.status().message();

  r = ExtractContractHeader("\n\n/* assay: {\"a\": 1}\n");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("line 3"), std::string::npos);
  EXPECT_NE(r.status().message().find("never closed"), std::string::npos);

  r = ExtractContractHeader("\n/* assay: {\"a\": 1e99999} */");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("line 2"), std::string::npos) << r.status().message();

  r = ExtractContractHeader("/* assay: [1, 2] */");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("JSON object"), std::string::npos);
}

TEST(ContractHeaderTest, OnlyOneHeader) {
  auto r = ExtractContractHeader("/* assay: {} */\nint x;\n/* assay: {} */\n");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("line 3"), std::string::npos) << r.status().message();
  r = ExtractContractHeader("// assay: {\n// assay: }\nint x;\n// assay: {}\n");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("second assay header"), std::string::npos);
  r = ExtractContractHeader("// assay: {}\n/* assay: {} */\n");
  ASSERT_FALSE(r.ok());
}

TEST(ContractHeaderTest, TooDeepIsRejected) {
  std::string src = "/* assay: " + std::string(100, '[') + std::string(100, ']') + " */";
  auto r = ExtractContractHeader(src);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("deeper"), std::string::npos);
}

TEST(ContractHeaderTest, SpecFromSourceFileRejectsNonUtf8) {
  for (std::string bad : {std::string("int x;\n\xff\n"), std::string("int x;\n\xe0\x92\x9e"),
                          std::string("int x;\n\xed\xa0\x80"), std::string("int x;\n\xc3")}) {
    auto r = SpecFromSourceFile(bad, "k.cu");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().field(), "source.text");
    EXPECT_NE(r.status().message().find("line 2"), std::string::npos) << r.status().message();
  }
  auto ok = SpecFromSourceFile("// \xc3\xa9t\xc3\xa9 \xf0\x9f\x9a\x80\nint main() {}", "k.cu");
  ASSERT_TRUE(ok.ok());
  EXPECT_NO_THROW(ok->dump());
}

TEST(ContractHeaderTest, DetectsMain) {
  EXPECT_TRUE(HasMainFunction("int main() {}"));
  EXPECT_TRUE(HasMainFunction("int main (int argc, char** argv) {}"));
  EXPECT_FALSE(HasMainFunction("__global__ void domain(int* x) {}"));
  EXPECT_FALSE(HasMainFunction("int main_loop = 0;"));
}

TEST(ContractHeaderTest, SpecFromSourceFileDefaults) {
  const std::string kernel =
      "/* assay: {\"entry\": \"k\", \"launch\": {\"grid\": [1], \"block\": [1]}} */\n"
      "extern \"C\" __global__ void k() {}\n";
  auto spec = SpecFromSourceFile(kernel, "k.cu");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ((*spec)["kind"], "cuda");
  EXPECT_EQ((*spec)["source"]["text"], kernel);
  auto parsed = ParseJobSpec(spec->dump());
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->source.filename, "k.cu");

  auto program = SpecFromSourceFile("int main() { return 0; }\n", "main.cu");
  ASSERT_TRUE(program.ok());
  EXPECT_EQ((*program)["kind"], "cuda_program");
  EXPECT_TRUE(ParseJobSpec(program->dump()).ok());

  auto neither = SpecFromSourceFile("__global__ void k() {}\n", "k.cu");
  ASSERT_TRUE(neither.ok());
  EXPECT_FALSE(neither->contains("kind"));
  auto r = ParseJobSpec(neither->dump());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().field(), "kind");

  auto with_source = SpecFromSourceFile("/* assay: {\"source\": {}} */", "k.cu");
  ASSERT_FALSE(with_source.ok());
  EXPECT_EQ(with_source.status().field(), "source");
}

}  // namespace
}  // namespace assay

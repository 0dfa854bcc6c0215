#include "compile/compile_flags.h"

#include <gtest/gtest.h>

namespace assay {
namespace {

TEST(CompileFlagsTest, AllowedFlagsAreTranslatedPerCompiler) {
  const std::vector<std::string> flags = {"-O2", "-use_fast_math", "-lineinfo", "-std=c++20", "-DN=4",
                                          "-DDEBUG", "-maxrregcount=32", "-Xptxas=-O3", "--ftz=true"};
  Result<std::vector<std::string>> nvrtc = TranslateFlags(flags, "nvrtc");
  ASSERT_TRUE(nvrtc.ok()) << nvrtc.status().ToString();
  EXPECT_EQ((*nvrtc)[0], "--ptxas-options=-O2");
  EXPECT_EQ((*nvrtc)[1], "--use_fast_math");
  EXPECT_EQ((*nvrtc)[6], "--maxrregcount=32");
  EXPECT_EQ((*nvrtc)[7], "--ptxas-options=-O3");
  Result<std::vector<std::string>> nvcc = TranslateFlags(flags, "nvcc");
  ASSERT_TRUE(nvcc.ok());
  EXPECT_EQ((*nvcc)[0], "-O2");
  EXPECT_EQ((*nvcc)[7], "-Xptxas=-O3");
}

TEST(CompileFlagsTest, FlagsOutsideTheAllowListAreRejectedByName) {
  for (const std::string bad : {"-I/etc", "-o", "/etc/passwd", "--include-path=/", "-DX=$(id)", "-D1X",
                                "-DX=\"a b\"", "-Xptxas=--output-file=/tmp/x", "-maxrregcount=4",
                                "--pre-include=/etc/passwd", "-ccbin=/bin/sh"}) {
    Result<std::vector<std::string>> r = TranslateFlags({"-O3", bad}, "nvcc");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().error_class(), ErrorClass::kRejected);
    EXPECT_EQ(r.status().field(), "flags[1]") << bad;
  }
  EXPECT_FALSE(TranslateFlags({"--expt-relaxed-constexpr"}, "nvrtc").ok());
  EXPECT_TRUE(TranslateFlags({"--expt-relaxed-constexpr"}, "nvcc").ok());
}

TEST(CompileFlagsTest, ParsesArchitectures) {
  Result<Arch> a = ParseArch("sm_90a");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->major, 9);
  EXPECT_EQ(a->suffix, "a");
  Result<Arch> b = ParseArch("sm_120");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->major, 12);
  EXPECT_FALSE(ParseArch("sm_70").ok());
  EXPECT_FALSE(ParseArch("compute_90").ok());
  EXPECT_FALSE(ParseArch("sm_90; rm -rf /").ok());
}

TEST(CompileFlagsTest, SystemAndRelativeIncludesPass) {
  EXPECT_TRUE(CheckSourceIncludes("#include <cuda_fp16.h>\n#include \"helper.h\"\n  #  include <cstdint>\n").ok());
  EXPECT_TRUE(CheckSourceIncludes("const char* s = \"// #include </etc/passwd>\";\n").ok());
}

TEST(CompileFlagsTest, IncludesOfServerFilesAreRejected) {
  for (const std::string src : {
           "#include \"/etc/passwd\"\n",
           "#include </etc/passwd>\n",
           "#include \"../../secret.h\"\n",
           "#define P \"/etc/passwd\"\n#include P\n",
           "#/**/include \"/etc/passwd\"\n",
           "#\\\ninclude \"/etc/passwd\"\n",
           "%:include </etc/shadow>\n",
           "#include_next <stdio.h>\n",
           "asm(\".incbin \\\"/etc/passwd\\\"\");\n",
       }) {
    Status s = CheckSourceIncludes(src);
    EXPECT_EQ(s.error_class(), ErrorClass::kRejected) << src;
  }
}

}  // namespace
}  // namespace assay

// The in-process CUPTI tracer's refusals, which need no GPU. Each runs in a
// child process (gtest's threadsafe death-test style re-executes this binary):
// the tracer is created once per process, so the environment must be set
// before the first CuptiTracer::Get().
#include "measure/cupti_tracer.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

namespace assay {
namespace {

// Exits 0 when Get() fails with a message containing `needle`.
[[noreturn]] void ExitOnGetError(const char* needle) {
  auto t = CuptiTracer::Get();
  const bool ok = !t.ok() && t.status().error_class() == ErrorClass::kInfraError &&
                  t.status().message().find(needle) != std::string::npos;
  std::fprintf(stderr, "tracer: %s\n", t.ok() ? "started" : t.status().message().c_str());
  std::fflush(stderr);
  std::_Exit(ok ? 0 : 1);
}

TEST(CuptiTracerTest, RefusesInsideAnInjectedProcess) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        ::setenv("CUDA_INJECTION64_PATH", "/opt/x/libassay_cupti.so", 1);
        ExitOnGetError("CUPTI injection library");
      },
      ::testing::ExitedWithCode(0), "tracer: .*CUDA_INJECTION64_PATH");
}

TEST(CuptiTracerTest, MissingLibcuptiIsAnErrorNamingWhatWasTried) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        ::unsetenv("CUDA_INJECTION64_PATH");
        ::setenv("ASSAY_CUPTI_LIB", "/nonexistent/libcupti.so.13", 1);
        ExitOnGetError("/nonexistent/libcupti.so.13");
      },
      ::testing::ExitedWithCode(0), "tracer: cannot load libcupti \\(tried /nonexistent/libcupti.so.13\\)");
}

}  // namespace
}  // namespace assay

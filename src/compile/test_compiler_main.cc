// `assay_test_compiler internal-compile ARGS`: the child side of
// CompileIsolated, as `assay internal-compile` runs it, for the tests.
#include <cstdio>
#include <string>
#include <vector>

#include "compile/compiler.h"

int main(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) != "internal-compile") {
    std::fprintf(stderr, "usage: %s internal-compile --cache-dir D --cuda-root R\n", argv[0]);
    return 2;
  }
  const std::vector<std::string> args(argv + 2, argv + argc);
  assay::Result<assay::CompilerOptions> options = assay::ParseInternalCompileArgs(args);
  if (!options.ok()) {
    std::fprintf(stderr, "%s\n", options.status().ToString().c_str());
    return 2;
  }
  return assay::InternalCompileMain(*options);
}

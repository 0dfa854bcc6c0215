#!/usr/bin/env bash
# The whole test suite: installs what is needed, builds, runs every test (GPU
# tests skip cleanly without a GPU), then fuzzes the job-spec parser briefly.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/deps.sh
./scripts/build.sh
# The parser fuzz first, so the test runner's summary is the last thing printed.
if [ "${ASSAY_SKIP_FUZZ:-0}" != 1 ]; then
  cmake -S . -B build-fuzz -G Ninja -DASSAY_FUZZ=ON -DASSAY_BUILD_TESTS=OFF \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build build-fuzz --target assay_spec_fuzz
  ./fuzz/run.sh build-fuzz "${FUZZ_SECONDS:-60}"
fi
(cd build && ctest --output-on-failure -j "${JOBS:-$(nproc)}" --timeout 600)

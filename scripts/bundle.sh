#!/usr/bin/env bash
# Packs what the GPU machine needs from a build folder into a small, relocatable
# bundle (same layout as the build folder, binaries stripped, plus the shared
# libraries Debian has and the GPU machine lacks). Run it there with
#   LD_LIBRARY_PATH=<bundle>:/usr/local/cuda/lib64 ASSAY_BIN=<bundle>/assay ...
# Usage: scripts/bundle.sh BUILD_DIR BUNDLE_DIR
set -euo pipefail
B=${1:?build dir}
D=${2:?bundle dir}
rm -rf "$D"
mkdir -p "$D"
files=(
  assay libassay_cupti.so
  src/gpu/assay_gpu_test src/measure/assay_measure_test src/engine/assay_engine_test
  src/cupti/assay_cupti_gpu_test src/cupti/assay_cupti_probe src/cupti/assay_cupti_no_cuda_probe
  tests/assay_gpu_integration_test tests/assay_integration_test bench/assay_bench_timing
  tests/assay_python_gpu_test tests/assay_python_integration_test
)
for f in "${files[@]}"; do
  [ -e "$B/$f" ] || { echo "bundle: missing $B/$f" >&2; exit 1; }
  mkdir -p "$D/$(dirname "$f")"
  cp "$B/$f" "$D/$f"
  strip --strip-debug "$D/$f" 2>/dev/null || true
done
# The Python harness (issue 4) lives next to the binary.
[ -e "$B/assay_harness.py" ] && cp "$B/assay_harness.py" "$D/"
# Shared libraries from Debian that the GPU machine does not have.
for lib in $(ldd "$B/assay" | awk '/libcpp-httplib/ {print $3}'); do cp -L "$lib" "$D/"; done
du -sh "$D"

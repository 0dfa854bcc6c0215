#!/usr/bin/env bash
# Everything that needs a GPU, in one go, on the GPU machine, from the
# repository root with a bundle made by scripts/bundle.sh:
#   scripts/gpu-check.sh .devbundle [OUT_DIR]
# Prints a summary table last; full logs go to OUT_DIR.
set -u
BUNDLE=$(cd "${1:?bundle dir}" && pwd)
OUT=${2:-${OUT:-/tmp/assay-gpu-check}}
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$BUNDLE:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
export ASSAY_BIN="$BUNDLE/assay" ASSAY_EXPECT_GPU=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv | tee "$OUT/gpu.txt"
summary=()
# The Python kinds (issue 4) use the GPU machine's interpreter (torch + triton).
PY=${ASSAY_TEST_PYTHON:-/opt/torch/.venv/bin/python3}
[ -x "$PY" ] || PY=$(command -v python3)
export ASSAY_TEST_PYTHON="$PY" ASSAY_TEST_PYTHON_DEVICE=cuda
ONLY=${ONLY:-}  # e.g. ONLY="python_gpu python_server": run only these suites
run() {  # run NAME CMD...
  local name=$1; shift
  if [ -n "$ONLY" ] && [[ " $ONLY " != *" $name "* ]]; then return; fi
  local t0=$(date +%s%N)
  ( "$@" ) > "$OUT/$name.log" 2>&1
  local rc=$?
  local ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  local counts=$(grep -E "^\[  (PASSED|FAILED|SKIPPED) " "$OUT/$name.log" | tr -s ' ' | tr '\n' ' ')
  summary+=("$(printf '%-14s rc=%-3s %7sms  %s' "$name" "$rc" "$ms" "$counts")")
  grep -E "^\[  FAILED  \]|Failure" -A6 "$OUT/$name.log" | head -40
}
run gpu_devices   "$BUNDLE/src/gpu/assay_gpu_test"
run measure       "$BUNDLE/src/measure/assay_measure_test"
run engine        "$BUNDLE/src/engine/assay_engine_test"
run cupti         "$BUNDLE/src/cupti/assay_cupti_gpu_test"
run gpu_server    "$BUNDLE/tests/assay_gpu_integration_test"
run server        "$BUNDLE/tests/assay_integration_test"
run demo          ./examples/run-all.sh "$BUNDLE/assay"
run python_gpu    "$BUNDLE/tests/assay_python_gpu_test"
run python_server env ASSAY_TEST_PYTHON_DEVICE=cuda "$BUNDLE/tests/assay_python_integration_test"
run harness_cpu   "$PY" -B tests/python/test_harness.py
run harness_smoke env ASSAY_HARNESS="$BUNDLE/assay_harness.py" tests/python/gpu_smoke.sh "$BUNDLE"
grep -E "vector add .* median" "$OUT/gpu_server.log"
echo
printf '%s\n' "${summary[@]}"

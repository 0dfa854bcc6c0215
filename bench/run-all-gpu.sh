#!/usr/bin/env bash
# Every benchmark of docs/benchmarks.md in one GPU-machine call, from the
# repository root, with a bundle made by scripts/bundle.sh:
#   bench/run-all-gpu.sh .devbundle $OUT
# Runs, logging each to OUT:
#   (a)-(c) bench/fidelity.sh         Assay cold/hot, plain events, spin kernels, spread, ncu
#   (d)     bench/do_bench_compare.py triton.testing.do_bench beside Assay (reads fidelity.json)
#   (e)     bench/e2e_overhead.sh     submit -> result overhead of a warm, cached job
#           examples/spmv/run.sh      seed 003's SpMV with transfer times (on its own server)
# and prints a summary last. Takes about 5 minutes on an H100 (fidelity.sh most of it).
# The device tool returns at most 8 files from $OUT, so every log goes into one
# archive, OUT/bench-logs.tgz (also when the run is interrupted), beside
# OUT/summary.txt.
# Environment: PYTHON (default python3: needs torch, triton, numpy), E2E_JOBS (default 20).
set -u
cd "$(dirname "$0")/.."
BUNDLE=$(cd "${1:?bundle dir}" && pwd)
FINAL=${2:-${OUT:-/tmp/assay-bench}}
mkdir -p "$FINAL"
FINAL=$(cd "$FINAL" && pwd)
OUT="$FINAL/bench-logs"
mkdir -p "$OUT"
pack() {
  tar czf "$FINAL/bench-logs.tgz" -C "$FINAL" bench-logs 2>/dev/null && rm -rf "$OUT"
}
trap pack EXIT
trap 'exit 130' INT TERM
export LD_LIBRARY_PATH="$BUNDLE:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
export ASSAY_BIN="$BUNDLE/assay" ASSAY_EXPECT_GPU=1 PYTHONUNBUFFERED=1
PYTHON=${PYTHON:-python3}
export PYTHON
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv \
  | tee "$OUT/gpu.txt"
git log -1 --format='commit %H %cs' 2>/dev/null | tee -a "$OUT/gpu.txt"

summary=()
step() {  # step NAME LOG CMD...
  local name=$1 log=$2; shift 2
  echo "== $name"
  local t0=$(date +%s%N)
  ( "$@" ) >"$OUT/$log" 2>&1
  local rc=$?
  local s=$(( ($(date +%s%N) - t0) / 1000000000 ))
  summary+=("$(printf '%-22s rc=%-3s %5ss  %s' "$name" "$rc" "$s" "$OUT/$log")")
  [ "$rc" = 0 ] || tail -20 "$OUT/$log"
}

step fidelity fidelity.log bench/fidelity.sh "$BUNDLE/bench" "$OUT"
step do_bench do_bench.log "$PYTHON" bench/do_bench_compare.py --fidelity-json "$OUT/fidelity.json" \
  --json "$OUT/do_bench.json"
step e2e_overhead e2e_overhead.log env OUT="$OUT" bench/e2e_overhead.sh "${E2E_JOBS:-20}"
spmv_example() {
  # The example needs a server; start one of its own, like examples/run-all.sh.
  local data; data=$(mktemp -d /tmp/assay-spmv-serve-XXXXXX)
  "$ASSAY_BIN" serve --no-auth --port 0 --port-file "$data/port" --data-dir "$data" 2>"$OUT/spmv_server.log" &
  local pid=$!
  for _ in $(seq 1 200); do [ -s "$data/port" ] && break; sleep 0.05; done
  ASSAY_SERVER="http://127.0.0.1:$(cat "$data/port" 2>/dev/null)" examples/spmv/run.sh "$ASSAY_BIN"
  local rc=$?
  kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
  rm -rf "$data"
  return $rc
}
step spmv_example spmv.log spmv_example

{
  echo
  echo "== (a)-(c) fidelity vs ncu"; cat "$OUT/ncu_compare.txt" 2>/dev/null || tail -15 "$OUT/fidelity.log"
  echo "== (d) do_bench"; grep -vE "^note" "$OUT/do_bench.log" | tail -15
  echo "== (e) end-to-end overhead"; grep -E "^warm jobs|of which|cli run" "$OUT/e2e_overhead.log"
  echo "== SpMV example"; tail -7 "$OUT/spmv.log"
  echo
  printf '%s\n' "${summary[@]}"
} | tee "$FINAL/summary.txt"

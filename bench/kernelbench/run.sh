#!/usr/bin/env bash
# The KernelBench comparison (docs/benchmarks.md, "KernelBench comparison"), on the GPU machine,
# from the repository root:
#   bench/kernelbench/run.sh BUNDLE OUT KB_DIR [all|assay|kb]
# BUNDLE: scripts/bundle.sh's output (assay, libassay_cupti.so, assay_harness.py); unused by `kb`.
# OUT: where the results go. KB_DIR: bench/kernelbench/prepare_kb.sh's output (.kb).
# Phases: assay (start `assay serve`, submit the whole set, collect results: OUT/assay.json),
# kb (the same set through KernelBench's own evaluation: OUT/kb.json), then compare.py's table
# (OUT/compare.txt) when both JSON files are in OUT. `all` (default) runs both, Assay first; each
# phase takes a few minutes, so on a 10-minute limit run `assay` and `kb` as two calls and compare
# the two files afterwards anywhere:
#   python3 bench/kernelbench/compare.py --assay assay.json --kb kb.json
# Files written to OUT: assay.json, assay_server.log, kb.json, kb_eval.log, compare.txt (the
# console output is the run's log: `run.sh ... 2>&1 | tee OUT/run.log`). Env: PYTHON (default
# /opt/torch/.venv/bin/python3), ASSAY_WAIT_S (how long to wait for Assay's jobs, default 480),
# ASSAY_SERVE_ARGS: more `assay serve` flags (e.g. "--python-standby 3"),
# WARM=1: each phase runs the set a second time with its caches kept (Assay: the same server and data
# dir; KernelBench: the same build root and Triton cache) -> assay_warm.json, kb_warm.json.
set -uo pipefail
BUNDLE=${1:?usage: run.sh BUNDLE OUT KB_DIR [all|assay|kb]}
mkdir -p "${2:?out dir}"
OUT=$(cd "$2" && pwd)
KB=$(cd "${3:?KernelBench dir (prepare_kb.sh)}" && pwd)
PHASE=${4:-all}
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${PYTHON:-/opt/torch/.venv/bin/python3}
[ -x "$PY" ] || PY=$(command -v python3)
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
export PYTHONUNBUFFERED=1

echo "== $(date -u +%FT%TZ) phase=$PHASE python=$PY"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv
"$PY" -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)'
rc=0

if [ "$PHASE" = all ] || [ "$PHASE" = assay ]; then
  BUNDLE=$(cd "$BUNDLE" && pwd) || exit 2
  export LD_LIBRARY_PATH="$BUNDLE:$LD_LIBRARY_PATH"
  DATA=$(mktemp -d /tmp/assay-kb-XXXXXX)
  flags=(--no-auth --port 0 --port-file "$DATA/port" --data-dir "$DATA")
  # The Python kinds need `--python PATH` (env ASSAY_PYTHON); older binaries lack the flag.
  if "$BUNDLE/assay" serve --help 2>&1 | grep -q -- '--python'; then flags+=(--python "$PY"); fi
  # shellcheck disable=SC2206 # split on purpose: several flags
  flags+=(${ASSAY_SERVE_ARGS:-})
  export ASSAY_PYTHON="$PY"
  t0=$(date +%s%N)
  "$BUNDLE/assay" serve "${flags[@]}" 2>"$DATA/server.log" &
  SERVER_PID=$!
  for _ in $(seq 1 300); do [ -s "$DATA/port" ] && break; sleep 0.1; done
  if [ -s "$DATA/port" ]; then
    echo "== assay serve up in $(( ($(date +%s%N) - t0) / 1000000 )) ms on port $(cat "$DATA/port")"
    "$BUNDLE/assay" --server "http://127.0.0.1:$(cat "$DATA/port")" gpus || true
    "$PY" "$HERE/assay_submit.py" --server "http://127.0.0.1:$(cat "$DATA/port")" --out "$OUT/assay.json" \
      --wait-s "${ASSAY_WAIT_S:-480}" || rc=1
    if [ "${WARM:-0}" = 1 ]; then
      "$PY" "$HERE/assay_submit.py" --server "http://127.0.0.1:$(cat "$DATA/port")" --out "$OUT/assay_warm.json" \
        --wait-s "${ASSAY_WAIT_S:-480}" || rc=1
    fi
  else
    echo "== assay serve did not start"; rc=1
  fi
  kill "$SERVER_PID" 2>/dev/null
  wait "$SERVER_PID" 2>/dev/null
  tail -c 4000000 "$DATA/server.log" >"$OUT/assay_server.log"
  rm -rf "$DATA"
fi

if [ "$PHASE" = all ] || [ "$PHASE" = kb ]; then
  # A cold Triton cache, as Assay's fresh data dir has.
  export TRITON_CACHE_DIR=$(mktemp -d /tmp/kb-triton-XXXXXX)
  BUILD_ROOT=$(mktemp -d /tmp/kb-build-XXXXXX)
  "$PY" "$HERE/kb_eval.py" --kb-dir "$KB" --out "$OUT/kb.json" --build-root "$BUILD_ROOT" >"$OUT/kb_eval.log" 2>&1 || rc=1
  grep '^kb_eval:' "$OUT/kb_eval.log"
  if [ "${WARM:-0}" = 1 ]; then
    "$PY" "$HERE/kb_eval.py" --kb-dir "$KB" --out "$OUT/kb_warm.json" --build-root "$BUILD_ROOT" \
      >"$OUT/kb_eval_warm.log" 2>&1 || rc=1
    grep '^kb_eval:' "$OUT/kb_eval_warm.log"
  fi
  rm -rf "$TRITON_CACHE_DIR" "$BUILD_ROOT"
fi

if [ -s "$OUT/assay.json" ] && [ -s "$OUT/kb.json" ]; then
  "$PY" "$HERE/compare.py" --assay "$OUT/assay.json" --kb "$OUT/kb.json" | tee "$OUT/compare.txt"
fi
if [ -s "$OUT/assay_warm.json" ] && [ -s "$OUT/kb_warm.json" ]; then
  "$PY" "$HERE/compare.py" --assay "$OUT/assay_warm.json" --kb "$OUT/kb_warm.json" | tee "$OUT/compare_warm.txt"
fi
exit $rc

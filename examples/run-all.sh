#!/usr/bin/env bash
# Starts an Assay server on loopback (no auth, fresh data dir), runs every
# example through it with the CLI, prints the results, and stops the server.
# Usage: examples/run-all.sh [path/to/assay]
set -uo pipefail
cd "$(dirname "$0")/.."
ASSAY=${1:-build/assay}
DATA=$(mktemp -d /tmp/assay-demo-XXXXXX)
trap 'kill $SERVER_PID 2>/dev/null; wait $SERVER_PID 2>/dev/null; rm -rf "$DATA"' EXIT

"$ASSAY" serve --no-auth --port 0 --port-file "$DATA/port" --data-dir "$DATA" 2>"$DATA/server.log" &
SERVER_PID=$!
for _ in $(seq 1 100); do [ -s "$DATA/port" ] && break; sleep 0.1; done
if [ ! -s "$DATA/port" ]; then echo "assay server did not start:"; cat "$DATA/server.log"; exit 3; fi
export ASSAY_SERVER="http://127.0.0.1:$(cat "$DATA/port")"
echo "== Assay server at $ASSAY_SERVER"

"$ASSAY" gpus
HAS_GPU=0
"$ASSAY" gpus --json | grep -q '"index"' && HAS_GPU=1

failures=0
run() {  # run TITLE NEEDS_GPU CMD...   (CMD: assay's arguments, or a script with --script)
  local title=$1 needs_gpu=$2; shift 2
  echo
  echo "== $title"
  if [ "$needs_gpu" = 1 ] && [ "$HAS_GPU" = 0 ]; then
    echo "   skipped: this needs a GPU, and this machine has none (run it on a GPU host)."
    return
  fi
  local cmd=("$ASSAY" "$@")
  if [ "$1" = --script ]; then shift; cmd=("$@"); echo "   \$ $*"; else echo "   \$ assay $*"; fi
  "${cmd[@]}" || { echo "   -> exit code $?"; failures=$((failures + 1)); }
}

run "Compile on the client, no server, no GPU" 0 compile examples/compile/saxpy.cu --arch sm_90 -o "$DATA/saxpy.cubin"
run "Compile-only job on the server" 0 run examples/compile/saxpy.cu --compile-only
run "A whole program (cuda_program) that needs no GPU" 0 run examples/hello/hello.cu
run "A program using the CUDA runtime" 1 run examples/device_query/device_query.cu
for f in examples/vector_add/*.cu; do
  [ -e "$f" ] && run "Kernel with its contract in the source: $f" 1 run "$f"
done
run "A cubin compiled on the client, CSR data uploaded as blobs (seed 003's SpMV)" 1 \
  --script examples/spmv/run.sh "$ASSAY"
echo
"$ASSAY" list
echo
if [ "$failures" -gt 0 ]; then echo "== $failures example(s) failed"; exit 1; fi
echo "== all examples ran"

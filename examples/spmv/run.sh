#!/usr/bin/env bash
# Seed 003's example, done with Assay: compile a CSR SpMV kernel to a cubin on
# this machine (no GPU needed), upload the matrix as blobs, run the cubin on
# the server's GPU against the expected y, fetch y back, check it here, and
# print the kernel, host->device, device->host and total times.
#
# Usage: examples/spmv/run.sh [path/to/assay]      (default: $ASSAY_BIN, then build/assay)
# Environment: ASSAY_SERVER (default http://127.0.0.1:8080), ASSAY_API_KEY,
#   ARCH (default: the server's first GPU, else sm_90), ROWS (default 262144),
#   PYTHON (default python3; needs numpy).
# Exit: 0 y verified; 1 the job failed or y is wrong; 2/3 as `assay run`.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ASSAY=${1:-${ASSAY_BIN:-build/assay}}
PYTHON=${PYTHON:-python3}
ROWS=${ROWS:-262144}
WORK=$(mktemp -d /tmp/assay-spmv-XXXXXX)
trap 'rm -rf "$WORK"' EXIT

if [ -z "${ARCH:-}" ]; then
  # Compile for the GPU the server has.
  ARCH=$("$ASSAY" gpus --json 2>/dev/null | "$PYTHON" -c \
    'import json,sys; g=json.load(sys.stdin).get("gpus") or [{}]; print(g[0].get("arch") or "sm_90")' 2>/dev/null)
  ARCH=${ARCH:-sm_90}
fi

echo "-- compile on the client: assay compile spmv.cu --arch $ARCH"
"$ASSAY" compile "$HERE/spmv.cu" --arch "$ARCH" -o "$WORK/spmv.cubin" --cache-dir "$WORK/cache" >"$WORK/compile.txt" \
  || { cat "$WORK/compile.txt"; exit 1; }
grep -E "spmv_csr" "$WORK/compile.txt" | head -1

echo "-- make the matrix (numpy; y expected computed in float64)"
"$PYTHON" "$HERE/make_csr.py" "$WORK/data" --rows "$ROWS" || exit 1

echo "-- upload the cubin and the CSR arrays as blobs; write the job spec"
"$PYTHON" "$HERE/client.py" prepare "$HERE/spmv_job.json" "$WORK/data" "$WORK/spmv.cubin" >"$WORK/job.json" || exit 3

echo "-- run the cubin job: assay run --spec job.json"
t0=$(date +%s%N)
"$ASSAY" run --spec "$WORK/job.json" --json >"$WORK/result.json"
rc=$?
client_ms=$(( ($(date +%s%N) - t0) / 1000000 ))
if [ ! -s "$WORK/result.json" ]; then echo "no result (assay run exit code $rc)"; exit "$rc"; fi

echo "-- fetch y, verify it here, report times"
"$PYTHON" "$HERE/client.py" check "$WORK/result.json" "$WORK/data" --client-ms "$client_ms" || exit 1
exit "$rc"

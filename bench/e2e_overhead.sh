#!/usr/bin/env bash
# Fidelity benchmark part (e): end-to-end overhead of a warm job (docs/benchmarks.md).
#
# Starts `assay serve` (fresh data dir, loopback, no auth), submits the same
# small `cuda` job N times one after another (the first compiles and starts the
# worker; the rest hit the compile cache and a warm worker) and reports per job:
#   client_ms   submit -> result on the client: POST /v1/jobs, then the job's
#               SSE stream (GET /v1/jobs/{id}/events) until its `end` event
#   run_ms      the result's own measurement time: transfers.total_ms, the
#               engine's run phase (inputs in, correctness trials, warm-up and
#               sampling, the re-check after timing, outputs out)
#   timing_ms   of which timing.warmup.ms + timing.sampling_ms
#   overhead    client_ms - run_ms: HTTP, store, scheduling, compile-cache
#               lookup, worker protocol, module load, planning, allocation,
#               result storage, event delivery
#   queued->running and running->done (minus run_ms) from the server's own
#               timestamps (ms resolution) split the overhead in two.
# Then median / p90 of the warm jobs' overhead against the target (< 50 ms),
# and, for comparison, a few `assay run` calls (the CLI polls with back-off
# from 100 ms, so its figure includes polling granularity).
#
# Usage: bench/e2e_overhead.sh [N]        (default 20)
# Environment: ASSAY_BIN (default build/assay), OUT (logs and e2e_overhead.json),
#   PYTHON (default python3; standard library only), CLI_RUNS (default 5).
set -uo pipefail
N=${1:-20}
ASSAY=${ASSAY_BIN:-build/assay}
PYTHON=${PYTHON:-python3}
CLI_RUNS=${CLI_RUNS:-5}
DATA=$(mktemp -d /tmp/assay-e2e-XXXXXX)
OUTDIR=${OUT:-$DATA}
mkdir -p "$OUTDIR"
SERVER_PID=
trap '[ -n "$SERVER_PID" ] && { kill $SERVER_PID 2>/dev/null; wait $SERVER_PID 2>/dev/null; }; rm -rf "$DATA"' EXIT

"$ASSAY" serve --no-auth --port 0 --port-file "$DATA/port" --data-dir "$DATA/store" 2>"$OUTDIR/e2e_server.log" &
SERVER_PID=$!
for _ in $(seq 1 200); do [ -s "$DATA/port" ] && break; sleep 0.05; done
if [ ! -s "$DATA/port" ]; then echo "assay serve did not start:"; tail -20 "$OUTDIR/e2e_server.log"; exit 3; fi
export ASSAY_SERVER="http://127.0.0.1:$(cat "$DATA/port")"

# The job: a 2^20-element f32 vector add checked against a reference kernel
# (3 trials, cold timing with default options, re-check after timing).
cat >"$DATA/job.json" <<'EOF'
{
  "schema_version": 1, "kind": "cuda", "name": "e2e overhead probe", "entry": "add",
  "source": {"text": "extern \"C\" __global__ void add(const float* a, const float* b, float* c, int n) {\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) c[i] = a[i] + b[i];\n}\n"},
  "args": [
    {"name": "a", "role": "in", "dtype": "f32", "shape": ["n"]},
    {"name": "b", "role": "in", "dtype": "f32", "shape": ["n"]},
    {"name": "c", "role": "out", "dtype": "f32", "shape": ["n"]},
    {"name": "n", "role": "scalar", "dtype": "i32", "value": 1048576}
  ],
  "launch": {"grid": ["ceil_div(n, 256)"], "block": [256]},
  "reference": {"kind": "cuda", "entry": "ref", "launch": {"grid": [264], "block": [256]},
    "source": {"text": "extern \"C\" __global__ void ref(const float* a, const float* b, float* c, int n) {\n  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) c[i] = a[i] + b[i];\n}\n"}}
}
EOF

if ! "$ASSAY" gpus --json | grep -q '"index"'; then
  echo "the server has no GPU: skipping the end-to-end overhead benchmark"
  [ "${ASSAY_EXPECT_GPU:-0}" = 1 ] && exit 1
  exit 0
fi

"$PYTHON" - "$DATA/job.json" "$N" "$OUTDIR/e2e_overhead.json" <<'PY'
import datetime, http.client, json, os, statistics, sys, time, urllib.parse

spec_path, n, out_path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
body = open(spec_path, "rb").read()
url = urllib.parse.urlparse(os.environ["ASSAY_SERVER"])

def ts(s):
    return datetime.datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp() * 1000

def one_job(conn):
    t0 = time.perf_counter()
    conn.request("POST", "/v1/jobs", body, {"Content-Type": "application/json"})
    r = conn.getresponse()
    doc = json.loads(r.read())
    if r.status != 201:
        sys.exit(f"submit failed: HTTP {r.status}: {doc}")
    sse = http.client.HTTPConnection(url.hostname, url.port, timeout=120)
    sse.request("GET", f"/v1/jobs/{doc['id']}/events")
    s = sse.getresponse()
    event, end = None, None
    while end is None:
        line = s.readline()
        if not line:
            sys.exit(f"event stream of {doc['id']} ended without an end event")
        line = line.decode().rstrip("\r\n")
        if line.startswith("event: "):
            event = line[7:]
        elif line.startswith("data: ") and event == "end":
            end = json.loads(line[6:])
    t1 = time.perf_counter()
    sse.close()
    return (t1 - t0) * 1000, end

conn = http.client.HTTPConnection(url.hostname, url.port, timeout=120)
rows = []
print(f"{'job':>4} {'state':>6} {'client_ms':>10} {'run_ms':>9} {'timing_ms':>10} {'overhead':>9} "
      f"{'q->run':>7} {'run->done-run_ms':>16} {'cache':>6}")
for i in range(n):
    client_ms, job = one_job(conn)
    res = job.get("result") or {}
    tr = res.get("transfers") or {}
    tm = res.get("timing") or {}
    run_ms = tr.get("total_ms")
    timing_ms = (tm.get("warmup") or {}).get("ms", 0) + tm.get("sampling_ms", 0) if tm else None
    stamps = res.get("timestamps") or {}
    q_to_run = ts(stamps["running"]) - ts(stamps["queued"]) if "running" in stamps and "queued" in stamps else None
    end_state = job.get("state")
    run_to_done = (ts(stamps[end_state]) - ts(stamps["running"]) - (run_ms or 0)
                   if "running" in stamps and end_state in stamps else None)
    overhead = client_ms - run_ms if run_ms is not None else None
    cache = (res.get("compile") or {}).get("cache_hit")
    rows.append({"job": i + 1, "id": job.get("id"), "state": end_state, "client_ms": client_ms, "run_ms": run_ms,
                 "timing_ms": timing_ms, "overhead_ms": overhead, "queued_to_running_ms": q_to_run,
                 "running_to_done_minus_run_ms": run_to_done, "compile_cache_hit": cache,
                 "kernel_median_ms": tm.get("median_ms")})
    f = lambda v, w, d=1: f"{v:{w}.{d}f}" if isinstance(v, (int, float)) else f"{'-':>{w}}"
    print(f"{i + 1:4d} {str(end_state)[:6]:>6} {f(client_ms, 10)} {f(run_ms, 9)} {f(timing_ms, 10)} "
          f"{f(overhead, 9)} {f(q_to_run, 7, 0)} {f(run_to_done, 16, 0)} {str(cache):>6}")
    if end_state != "done":
        print("   error:", json.dumps(res.get("error"))[:500])

warm = [r["overhead_ms"] for r in rows[1:] if r["state"] == "done" and r["overhead_ms"] is not None]
summary = {}
if warm:
    warm_sorted = sorted(warm)
    p90 = warm_sorted[min(len(warm_sorted) - 1, int(round(0.9 * (len(warm_sorted) - 1))))]
    med = statistics.median(warm)
    summary = {"warm_jobs": len(warm), "overhead_median_ms": med, "overhead_p90_ms": p90,
               "overhead_min_ms": warm_sorted[0], "overhead_max_ms": warm_sorted[-1], "target_ms": 50,
               "met": p90 < 50}
    print(f"warm jobs (2..{n}): overhead median {med:.1f} ms, p90 {p90:.1f} ms, min {warm_sorted[0]:.1f}, "
          f"max {warm_sorted[-1]:.1f} -- target < 50 ms: {'MET' if p90 < 50 else 'MISSED'} (p90)")
    q = [r["queued_to_running_ms"] for r in rows[1:] if r["queued_to_running_ms"] is not None]
    d = [r["running_to_done_minus_run_ms"] for r in rows[1:] if r["running_to_done_minus_run_ms"] is not None]
    if q and d:
        print(f"  of which (server timestamps, median): queued->running {statistics.median(q):.0f} ms, "
              f"running->done beyond the run phase {statistics.median(d):.0f} ms")
else:
    print("no warm job finished: no overhead figure")
json.dump({"jobs": rows, "summary": summary}, open(out_path, "w"), indent=1)
failed = [r for r in rows if r["state"] != "done"]
sys.exit(1 if failed or not warm else 0)
PY
rc=$?

if [ "$CLI_RUNS" -gt 0 ]; then
  echo "for comparison, assay run (CLI, polling) x $CLI_RUNS:"
  for i in $(seq 1 "$CLI_RUNS"); do
    t0=$(date +%s%N)
    "$ASSAY" run --spec "$DATA/job.json" --json >"$DATA/cli.json" 2>/dev/null
    cli_rc=$?
    ms=$(( ($(date +%s%N) - t0) / 1000000 ))
    "$PYTHON" -c 'import json,sys; r=json.load(open(sys.argv[1])); t=(r.get("transfers") or {}).get("total_ms")
print(f"  cli run {sys.argv[2]}: exit {sys.argv[3]}, {sys.argv[4]} ms wall, run phase {t:.1f} ms, overhead {float(sys.argv[4]) - t:.1f} ms" if t is not None else f"  cli run {sys.argv[2]}: exit {sys.argv[3]}, {sys.argv[4]} ms wall, no run phase")' \
      "$DATA/cli.json" "$i" "$cli_rc" "$ms" 2>/dev/null || echo "  cli run $i: exit $cli_rc, $ms ms wall (no result)"
  done
fi
exit $rc

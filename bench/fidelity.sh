#!/usr/bin/env bash
# Timing fidelity run on a GPU machine (docs/measurement.md, "Fidelity").
# Usage: bench/fidelity.sh BIN_DIR OUT_DIR
#   BIN_DIR holds assay_bench_timing; OUT_DIR receives fidelity.txt/.json,
#   ncu.csv and ncu_compare.txt.
# Step 1 runs the benchmark (Assay cold/hot medians, plain event loop, spin
# kernels of known length, run-to-run spread, device peaks). Step 2 runs the
# same kernel configurations 5 times each under Nsight Compute with
#   ncu --clock-control none --print-units base --csv --metrics gpu__time_duration.sum
# (clocks as found, like Assay; ncu's default --cache-control all flushes caches
# before each kernel, so its figures compare with Assay's cold mode) and prints
# ncu's median per configuration beside Assay's cold median (CUPTI, column
# src) and the event median of the same samples.
set -euo pipefail
bin=$1
out=$2
"$bin/assay_bench_timing" --json "$out/fidelity.json" | tee "$out/fidelity.txt"
if ! command -v ncu >/dev/null; then
  echo "ncu not found: skipping the Nsight Compute comparison"
  exit 0
fi
ncu --clock-control none --print-units base --csv --metrics gpu__time_duration.sum \
  "$bin/assay_bench_timing" --ncu-mode >"$out/ncu.csv" 2>"$out/ncu.err" || {
  echo "ncu failed:"; tail -20 "$out/ncu.err"; exit 0; }
python3 - "$out/fidelity.json" "$out/ncu.csv" <<'PY' | tee "$out/ncu_compare.txt"
import csv, json, statistics, sys
bench = json.load(open(sys.argv[1]))
rows = [l for l in open(sys.argv[2]) if l.startswith('"')]
# --ncu-mode launches each configuration 5 times, in the order of bench["kernels"]:
# the i-th profiled launch belongs to configuration i // 5.
durations = {}  # label -> [ms]
labels = [k["label"] for k in bench["kernels"]]
i = 0
for r in csv.DictReader(rows):
    if r.get("Metric Name") != "gpu__time_duration.sum":
        continue
    unit = r.get("Metric Unit", "nsecond")
    scale = {"nsecond": 1e-6, "usecond": 1e-3, "msecond": 1.0, "ns": 1e-6}.get(unit, 1e-6)
    v = float(r["Metric Value"].replace(",", "")) * scale
    if i // 5 < len(labels):
        durations.setdefault(labels[i // 5], []).append(v)
    i += 1
print(f'{"kernel":20} {"known_ms":>9} {"src":>5} {"assay_cold_ms":>14} {"ncu_median_ms":>14} {"assay/ncu":>10} '
      f'{"assay/known":>11} {"event_cold_ms":>14} {"event/ncu":>10} {"spread%":>8} {"n":>3}')
for k in bench["kernels"]:
    d = durations.get(k["label"], [])
    a = k["cold_median_ms"]
    known = k.get("known_ms", 0.0)
    ev = k.get("cold_event_median_ms", float("nan"))
    src = k.get("cold_source", "event")[:5]
    kn = f'{a/known:11.4f}' if known else f'{"-":>11}'
    spread = 100 * k["cold_run_to_run_spread"]
    if not d:
        print(f'{k["label"]:20} {known:9.4f} {src:>5} {a:14.5f} {"-":>14} {"-":>10} {kn} {ev:14.5f} {"-":>10} {spread:8.2f}')
        continue
    m = statistics.median(d)
    print(f'{k["label"]:20} {known:9.4f} {src:>5} {a:14.5f} {m:14.5f} {a/m:10.4f} {kn} {ev:14.5f} {ev/m:10.4f} '
          f'{spread:8.2f} {len(d):3d}')
PY

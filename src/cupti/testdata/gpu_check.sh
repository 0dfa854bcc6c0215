#!/bin/bash
# One device call's worth of checks for libassay_cupti.so, run from the
# repository root on the GPU machine with the build folder carried:
#   bash src/cupti/testdata/gpu_check.sh build-cupti
# Writes logs and the raw JSON files under $OUT.
set -u
B=${1:-build-cupti}
OUT=${OUT:-/tmp/cupti-out}
mkdir -p "$OUT"
ROOT=$PWD
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
ls /usr/local/cuda/lib64/libcupti.so* /usr/local/cuda/extras/CUPTI/lib64/libcupti.so* 2>&1

echo "== unit tests"
(cd "$B" && ./src/cupti/assay_cupti_test 2>&1 | tail -2)
echo "== gpu tests"
(cd "$B" && ASSAY_EXPECT_GPU=1 ./src/cupti/assay_cupti_gpu_test > "$OUT/cupti_gpu.log" 2>&1; echo "rc=$?")
grep -E "^\[ +(OK|FAILED|PASSED|SKIPPED) " "$OUT/cupti_gpu.log"
grep -B2 -A8 "Failure" "$OUT/cupti_gpu.log" | head -60

echo "== probe wall time, 5 runs each (ms)"
for mode in plain traced; do
  for i in 1 2 3 4 5; do
    s=$(date +%s%N)
    if [ $mode = traced ]; then
      CUDA_INJECTION64_PATH=$ROOT/$B/libassay_cupti.so ASSAY_CUPTI_OUT=$OUT/probe_$i.json timeout 60 "$B/src/cupti/assay_cupti_probe" > /dev/null
    else
      timeout 60 "$B/src/cupti/assay_cupti_probe" > /dev/null
    fi
    e=$(date +%s%N)
    echo -n "$mode $(( (e - s) / 1000000 )) "
  done
  echo
done
rm -f "$OUT"/probe_[2-5].json

echo "== torch + triton with the injection"
cat > /tmp/torch_probe.py <<'PY'
import time, torch, triton, triton.language as tl
@triton.jit
def add_kernel(x, y, o, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    tl.store(o + i, tl.load(x + i, mask=m) + tl.load(y + i, mask=m), mask=m)
t0 = time.time()
a = torch.randn(2048, 2048, device="cuda")
for _ in range(10):
    b = a @ a
x = torch.randn(1 << 20, device="cuda"); y = torch.randn_like(x); o = torch.empty_like(x)
for _ in range(4):
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, o, x.numel(), BLOCK=1024)
torch.cuda.synchronize()
print("torch ok", round(float((o - x - y).abs().max()), 6), "wall_s", round(time.time() - t0, 2))
PY
for mode in plain traced; do
  if [ $mode = traced ]; then
    CUDA_INJECTION64_PATH=$ROOT/$B/libassay_cupti.so ASSAY_CUPTI_OUT=$OUT/torch_cupti.json timeout 120 python3 /tmp/torch_probe.py
  else
    timeout 120 python3 /tmp/torch_probe.py
  fi
  echo "$mode rc=$?"
done
ls -la "$OUT"
python3 - "$OUT/torch_cupti.json" <<'PY'
import json, sys, collections
d = json.load(open(sys.argv[1]))
if "error" in d:
    print("ERROR", d["error"]); sys.exit()
print("complete", d["complete"], "cupti_lib", d.get("cupti_lib"), "dropped", d["dropped"], "invalid", d["invalid"], "warnings", d["warnings"])
names = [n["name"] for n in d["names"]]
c = collections.defaultdict(lambda: [0, 0])
for k in d["kernels"]:
    c[names[k["name_id"]]][0] += 1; c[names[k["name_id"]]][1] += k["duration_ns"]
for n, (cnt, ns) in sorted(c.items(), key=lambda x: -x[1][1])[:8]:
    print(f"{cnt:4d} {ns/1e6:9.3f} ms  {n[:110]}")
print("memcpy", collections.Counter(m["kind"] for m in d["memcpy"]))
PY
ls "$OUT"

#!/usr/bin/env bash
# GPU smoke test of the Python harness (python/assay_harness.py) on device "cuda".
#
#   tests/python/gpu_smoke.sh [BUILD_DIR]
#
# Runs the harness as the worker would (one process per job, request.json in, result.json out) for
# kinds torch, torch_cuda (a tiny load_inline, prepared with the GPU hidden first), triton (an add
# kernel with a `launch` launcher) and kernelbench, in timing modes cold/hot/graph, plus cheats:
# hidden side-stream work, an output aliasing its input, a stale allocation (torch.empty_like), a
# cached result, an illegal address, and a correct but slower candidate. Prints one line per case
# (verdict, event medians, speedup, CUPTI busy time when available) and exits non-zero when any case
# does not end as expected.
#
# BUILD_DIR (optional): a build folder holding libassay_cupti.so. With it every run gets
# CUDA_INJECTION64_PATH / ASSAY_CUPTI_OUT, the harness marks its timed phases, and the script
# computes the CUPTI kernel busy time per sample between the marks (as the worker does) - this is
# what catches the side-stream cheat.
#
# Env: ASSAY_PYTHON (default /opt/torch/.venv/bin/python3, else python3), ASSAY_HARNESS (default
# python/assay_harness.py of this checkout), ASSAY_SMOKE_KEEP=1 keeps the work folder.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-}
py=${ASSAY_PYTHON:-}
if [ -z "$py" ]; then
  if [ -x /opt/torch/.venv/bin/python3 ]; then py=/opt/torch/.venv/bin/python3; else py=python3; fi
fi
harness=${ASSAY_HARNESS:-$here/../../python/assay_harness.py}
exec "$py" - "$py" "$harness" "$build" <<'PYEOF'
import json, os, shutil, subprocess, sys, tempfile, textwrap

PY, HARNESS, BUILD = sys.argv[1], os.path.abspath(sys.argv[2]), sys.argv[3]
import torch
assert torch.cuda.is_available(), "no CUDA device visible"
props = torch.cuda.get_device_properties(0)
ARCH = "%d.%d" % torch.cuda.get_device_capability(0)
L2 = int(getattr(props, "L2_cache_size", 0) or 50 << 20)
CUPTI = os.path.join(BUILD, "libassay_cupti.so") if BUILD else ""
if CUPTI and not os.path.exists(CUPTI):
    print("note: %s not found; running without CUPTI" % CUPTI)
    CUPTI = ""
ROOT = tempfile.mkdtemp(prefix="assay-gpu-smoke-")
EXT = os.path.join(ROOT, "torch_ext")
TRITON_CACHE = os.path.join(ROOT, "triton")
print("device %s (sm %s, L2 %d MiB), torch %s, harness %s, CUPTI %s, work %s"
      % (props.name, ARCH, L2 >> 20, torch.__version__, HARNESS, CUPTI or "off", ROOT))

def src(t):
    return textwrap.dedent(t).lstrip()

N = 1 << 22
TIMING = {"enabled": True, "mode": "cold", "min_samples": 20, "max_samples": 2000, "noise_target": 0.005,
          "time_budget_ms": 1000, "warmup_ms": 50}

def f32(name, shape, role="in", **kw):
    d = {"name": name, "role": role, "dtype": "f32", "shape": shape}
    if role != "in":
        d.update(atol=1e-5, rtol=1e-4)
    d.update(kw)
    return d

ADD_ARGS = [f32("x", [N]), f32("y", [N]), f32("out", [N], role="out"),
            {"name": "n", "role": "scalar", "dtype": "i32", "value": N}]
ADD_REF = src("""
    import torch
    class Model(torch.nn.Module):
        def forward(self, x, y, n):
            return x + y
    """)
ADD_TORCH = src("""
    import torch
    class Model(torch.nn.Module):
        def forward(self, x, y, n):
            return torch.add(x, y)
    """)
INLINE = src('''
    import torch
    from torch.utils.cpp_extension import load_inline
    CUDA = r"""
    #include <ATen/cuda/CUDAContext.h>
    __global__ void add_kernel(const float* a, const float* b, float* c, int n) {
      int i = blockIdx.x * blockDim.x + threadIdx.x;
      if (i < n) c[i] = a[i] + b[i];
    }
    __global__ void oob_kernel(float* c, int n) {
      long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
      if (i < n) c[i + (1ll << 38)] = 1.0f;   // far outside any allocation
    }
    torch::Tensor add(torch::Tensor a, torch::Tensor b) {
      auto c = torch::empty_like(a);
      int n = a.numel();
      add_kernel<<<(n + 255) / 256, 256, 0, at::cuda::getCurrentCUDAStream()>>>(
          a.data_ptr<float>(), b.data_ptr<float>(), c.data_ptr<float>(), n);
      return c;
    }
    torch::Tensor oob(torch::Tensor a) {
      auto c = torch::empty_like(a);
      int n = a.numel();
      oob_kernel<<<(n + 255) / 256, 256, 0, at::cuda::getCurrentCUDAStream()>>>(c.data_ptr<float>(), n);
      return c;
    }
    """
    CPP = "torch::Tensor add(torch::Tensor a, torch::Tensor b);\\ntorch::Tensor oob(torch::Tensor a);"
    ext = load_inline("assay_smoke_add", cpp_sources=CPP, cuda_sources=CUDA, functions=["add", "oob"])

    class Model(torch.nn.Module):
        def forward(self, x, y, n):
            return ext.add(x, y)

    class Broken(torch.nn.Module):
        def forward(self, x, y, n):
            return ext.oob(x)
    ''')
TRITON = src("""
    import triton
    import triton.language as tl

    @triton.jit
    def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)

    def launch(x, y, out, n):
        add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
    """)
SIDE_STREAM = src("""
    import torch
    S = None
    class Model(torch.nn.Module):
        def forward(self, x, y, n):
            global S
            if S is None:
                S = torch.cuda.Stream()
            with torch.cuda.stream(S):          # never waits for the timed stream
                out = x + y
                for _ in range(40):
                    out = out * 1.0              # ~40 kernels the events should see
            torch.cuda.current_stream().wait_stream(S)
            return out
    """)
ALIAS = src("""
    import torch
    class Model(torch.nn.Module):
        def forward(self, x, y, n):
            return x.add_(y)                     # in place: returns (and writes) its input
    """)
STALE = src("""
    import torch
    class Model(torch.nn.Module):
        def forward(self, x, y, n):
            return torch.empty_like(x)           # hopes for the reference's freed answer
    """)
CACHING = src("""
    import torch
    cache = {}
    class Model(torch.nn.Module):
        def forward(self, x, y, n):
            key = (x.data_ptr(), y.data_ptr())   # the allocator hands the same addresses back
            if key not in cache:
                cache[key] = x + y
            return cache[key]
    """)
SLOW = src("""
    import torch
    class Model(torch.nn.Module):
        def forward(self, x, y, n):
            out = x.clone()
            for _ in range(8):
                out = out + y * 0.125
            return out - y * 0.0 + (x - x.clone())   # right answer, many kernels
    """)
KB_PROBLEM = src("""
    import torch
    import torch.nn as nn
    class Model(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.lin = nn.Linear(n, n)
        def forward(self, x):
            return torch.relu(self.lin(x))
    def get_inputs():
        return [torch.randn(256, 1024)]
    def get_init_inputs():
        return [1024]
    """)
KB_CAND = src("""
    import torch
    import torch.nn as nn
    class ModelNew(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.lin = nn.Linear(n, n)
        def forward(self, x):
            return torch.addmm(self.lin.bias, x, self.lin.weight.t()).relu_()
    """)


def request(d, kind, cand, entry="Model", ref=ADD_REF, args=ADD_ARGS, timing=None, mode="run", **extra):
    files = {"candidate.py": cand}
    req = {"v": 1, "mode": mode, "kind": kind, "device": "cuda",
           "candidate": {"kind": kind, "path": os.path.join(d, "candidate.py"), "entry": entry},
           "reference": None, "problem": None, "args": args,
           "correctness": {"trials": 3, "seed": 1234, "check_after_timing": True, "nan_equal": False},
           "timing": timing or TIMING, "num_trials": 100, "outputs": [], "output_dir": os.path.join(d, "out"),
           "l2_bytes": L2, "cupti_marks": True}
    if ref is not None:
        files["reference.py"] = ref
        req["reference"] = {"kind": "torch", "path": os.path.join(d, "reference.py"), "entry": "Model"}
    req.update(extra)
    return files, req


def kernelbench(d):
    files = {"problem.py": KB_PROBLEM, "candidate.py": KB_CAND}
    req = {"v": 1, "mode": "run", "kind": "kernelbench", "device": "cuda",
           "candidate": {"path": os.path.join(d, "candidate.py"), "entry": "ModelNew"},
           "problem": {"path": os.path.join(d, "problem.py"), "entry": "Model"}, "reference": None, "args": [],
           "correctness": {"trials": 5, "seed": None, "check_after_timing": True, "nan_equal": False},
           "timing": TIMING, "num_trials": 100, "outputs": [], "output_dir": os.path.join(d, "out"),
           "l2_bytes": L2, "cupti_marks": True}
    return files, req


# (name, builder, expected class, extra check(result, cupti) -> problem text or "")
def expect_timing(r, c):
    t = (r.get("timing") or {}).get("candidate")
    if not t or not t.get("median_ms", 0) > 0:
        return "no candidate timing"
    return ""


def expect_graph(r, c):
    t = (r.get("timing") or {}).get("candidate") or {}
    return "" if t.get("mode") == "graph" else "not timed as a graph: %s" % r.get("warnings")


def expect_prepared(r, c):
    ext = (r.get("prepare") or {}).get("extensions") or []
    return "" if "assay_smoke_add" in ext else "no extension built: %s" % r.get("prepare")


def expect_illegal(r, c):
    return "" if r["status"].get("cuda_error") == "CUDA_ERROR_ILLEGAL_ADDRESS" else "cuda_error %r" % r["status"].get("cuda_error")


def expect_kb(r, c):
    kb = r.get("kernelbench") or {}
    if not (kb.get("compiled") and kb.get("correctness") and kb.get("runtime", -1) > 0 and kb.get("speedup")):
        return "kernelbench fields: %s" % kb
    if kb["runtime_stats"].get("num_trials", 0) < 100:
        return "fewer than num_trials samples"
    return ""


def expect_side_stream(r, c):
    if c is None:
        return "(needs CUPTI marks to be caught: run with BUILD_DIR)"
    ev = r["timing"]["candidate"]["median_ms"]
    if c["cand_busy_ms"] > ev * 1.10 + 0.005:
        return ""
    return "CUPTI busy %.4f ms vs events %.4f ms: the hidden work was not seen" % (c["cand_busy_ms"], ev)


def expect_slower(r, c):
    s = (r.get("timing") or {}).get("speedup")
    return "" if s is not None and s < 1 else "speedup %r (expected < 1)" % s


CASES = [
    ("torch add, cold", lambda d: request(d, "torch", ADD_TORCH), "ok", expect_timing),
    ("torch add, hot", lambda d: request(d, "torch", ADD_TORCH, timing=dict(TIMING, mode="hot")), "ok", expect_timing),
    ("torch add, graph", lambda d: request(d, "torch", ADD_TORCH, timing=dict(TIMING, mode="graph")), "ok", expect_graph),
    ("torch_cuda prepare (GPU hidden)", lambda d: request(d, "torch_cuda", INLINE, mode="prepare"), "ok", expect_prepared),
    ("torch_cuda add", lambda d: request(d, "torch_cuda", INLINE), "ok", expect_timing),
    ("torch_cuda illegal address", lambda d: request(d, "torch_cuda", INLINE, entry="Broken"), "runtime_error", expect_illegal),
    ("triton add", lambda d: request(d, "triton", TRITON, entry="launch"), "ok", expect_timing),
    ("kernelbench linear+relu", kernelbench, "ok", expect_kb),
    ("cheat: output aliases input", lambda d: request(d, "torch", ALIAS), "wrong_result", None),
    ("cheat: stale allocation", lambda d: request(d, "torch", STALE), "wrong_result", None),
    ("cheat: cached result", lambda d: request(d, "torch", CACHING), "wrong_result", None),
    ("cheat: hidden side stream", lambda d: request(d, "torch", SIDE_STREAM), "ok", expect_side_stream),
    ("slower than the reference", lambda d: request(d, "torch", SLOW), "ok", expect_slower),
]


def cupti_phases(path, result):
    """Per phase: kernels that started between <phase>.begin and .end, minus the harness's own."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return None
    marks = {m["label"]: m["ts_ns"] for m in doc.get("marks", [])}
    names = [n["name"] for n in doc.get("names", [])]
    out = {}
    for phase, key in (("cand", "candidate"), ("ref", "reference")):
        b, e = marks.get(phase + ".begin"), marks.get(phase + ".end")
        t = (result.get("timing") or {}).get(key)
        if b is None or e is None or not t:
            continue
        iv = sorted((k["start_ns"], k["end_ns"]) for k in doc.get("kernels", [])
                    if b <= k["start_ns"] <= e and names[k["name_id"]] not in ("assay_l2_flush", "assay_blocking_kernel"))
        busy, cur = 0, None
        for s, en in iv:
            if cur is None or s > cur[1]:
                if cur:
                    busy += cur[1] - cur[0]
                cur = [s, en]
            else:
                cur[1] = max(cur[1], en)
        if cur:
            busy += cur[1] - cur[0]
        n = max(1, t["samples_taken"])
        out[phase + "_busy_ms"] = busy / 1e6 / n
        out[phase + "_kernels"] = len(iv) / n
    return out or None


failures = 0
for i, (name, build, want, check) in enumerate(CASES):
    d = os.path.join(ROOT, "case%02d" % i)
    os.makedirs(d)
    files, req = build(d)
    for fn, text in files.items():
        with open(os.path.join(d, fn), "w") as f:
            f.write(text)
    with open(os.path.join(d, "request.json"), "w") as f:
        json.dump(req, f)
    env = dict(os.environ, HOME=d, TMPDIR=d, TORCH_EXTENSIONS_DIR=EXT, TRITON_CACHE_DIR=TRITON_CACHE,
               TORCH_CUDA_ARCH_LIST=ARCH)
    cupti_out = os.path.join(d, "cupti.json")
    if req["mode"] == "prepare":
        env["CUDA_VISIBLE_DEVICES"] = ""
    elif CUPTI:
        env.update(CUDA_INJECTION64_PATH=CUPTI, ASSAY_CUPTI_OUT=cupti_out)
    proc = subprocess.run([PY, "-I", "-B", HARNESS, req["mode"], "--request", os.path.join(d, "request.json"),
                           "--result", os.path.join(d, "result.json")], env=env, cwd=d, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=900)
    try:
        with open(os.path.join(d, "result.json")) as f:
            r = json.load(f)
    except (OSError, ValueError):
        print("FAIL %-34s harness exit %d, no result\n%s" % (name, proc.returncode, proc.stderr[-4000:]))
        failures += 1
        continue
    st = r["status"]
    c = cupti_phases(cupti_out, r) if CUPTI and req["mode"] == "run" else None
    problem = ""
    if proc.returncode != 0:
        problem = "exit %d" % proc.returncode
    elif st["class"] != want:
        problem = "expected %s" % want
    elif check is not None:
        problem = check(r, c)
    optional = problem.startswith("(")
    ok = not problem or optional
    failures += 0 if ok else 1
    t = r.get("timing") or {}
    cand, ref = t.get("candidate") or {}, t.get("reference") or {}
    fmt = lambda v: "%.4f" % v if isinstance(v, (int, float)) else "-"
    line = ("%s %-34s %-13s cand %s ms (%s, %s, n=%s, %s)  ref %s ms  speedup %s"
            % ("ok  " if ok else "FAIL", name, st["class"], fmt(cand.get("median_ms")), cand.get("mode", "-"),
               cand.get("queue", "-"), cand.get("samples", "-"), cand.get("stop_reason", "-"),
               fmt(ref.get("median_ms")), fmt(t.get("speedup"))))
    if c:
        line += "  CUPTI busy cand %s ms (%.1f kernels/sample)" % (fmt(c.get("cand_busy_ms")), c.get("cand_kernels", 0))
    print(line)
    if st["message"]:
        print("     message: %s" % st["message"][:300])
    if st.get("cuda_error"):
        print("     cuda_error: %s" % st["cuda_error"])
    if "kernelbench" in r:
        kb = r["kernelbench"]
        print("     kernelbench: compiled %s correctness %s runtime %s ref_runtime %s speedup %s %s"
              % (kb.get("compiled"), kb.get("correctness"), kb.get("runtime"), kb.get("ref_runtime"),
                 kb.get("speedup"), kb.get("metadata", {}).get("correctness_trials")))
    for w in r.get("warnings", []):
        print("     warning: %s" % w[:300])
    if problem:
        print("     %s: %s" % ("note" if optional else "PROBLEM", problem))
        if not optional and proc.stderr:
            print("     stderr tail: %s" % proc.stderr[-1500:].replace("\n", "\n       "))

print("%d of %d cases as expected" % (len(CASES) - failures, len(CASES)))
if not os.environ.get("ASSAY_SMOKE_KEEP"):
    shutil.rmtree(ROOT, ignore_errors=True)
sys.exit(1 if failures else 0)
PYEOF

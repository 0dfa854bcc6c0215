#!/usr/bin/env python3
"""Fidelity benchmark part (d): triton.testing.do_bench and a plain CUDA-event
loop beside Assay's figures, on the same kernels (docs/benchmarks.md).

The kernels are the very ones bench/timing_fidelity.cc times: the source of
src/measure/reference_kernels.h, compiled for this GPU by `assay compile` (the
same NVRTC path the benchmark uses; nvcc -cubin when ASSAY_BIN is not given),
loaded into PyTorch's context with cuModuleLoadData through ctypes and launched
with cuLaunchKernel on PyTorch's current stream. So the only thing that differs
between the columns is the harness:

  do_bench mean    triton.testing.do_bench(fn) -- its defaults: warmup=25 ms,
                   rep=100 ms, a 256 MB buffer zeroed before every run (cold L2),
                   events around each launch, returns the MEAN
  do_bench median  the same with return_mode="median"
  plain events     10 warm-up launches, then 100 x [event, launch, event]
                   queued back to back, no flush; median (as timing_fidelity.cc)
  Assay cold/hot   from fidelity.json written by assay_bench_timing in the same
                   machine run (bench/fidelity.sh), matched by label

Each do_bench figure is the median of --repeats calls; "spread" is
(max - min) / median of those calls, like Assay's 5-run spread.

Usage (GPU machine, python3 with torch and triton):
  bench/do_bench_compare.py [--fidelity-json OUT/fidelity.json] [--json OUT/do_bench.json] [--repeats 5]
Environment: ASSAY_BIN (the assay binary used to compile the kernels).
"""
import argparse
import ctypes
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
KERNELS_HEADER = os.path.join(HERE, "..", "src", "measure", "reference_kernels.h")


def configs():
    """The configurations of bench/timing_fidelity.cc, with its labels."""
    out = []
    for us in (10, 100, 1000):
        out.append({"label": f"spin {us} us", "kernel": "assay_spin", "grid": (1, 1, 1), "block": (1, 1, 1),
                    "args": [("u64", us * 1000)], "known_ms": us / 1000})
    for lg in (12, 16, 20, 24, 26):
        n = 1 << lg
        out.append({"label": f"vector_add 2^{lg}", "kernel": "assay_vector_add", "grid": ((n + 255) // 256, 1, 1),
                    "block": (256, 1, 1), "args": [("ptr", "a"), ("ptr", "b"), ("ptr", "c"), ("u64", n)]})
    for n in (256, 1024, 2048):
        g = (n + 15) // 16
        out.append({"label": f"naive_matmul {n}", "kernel": "assay_naive_matmul", "grid": (g, g, 1),
                    "block": (16, 16, 1), "args": [("ptr", "a"), ("ptr", "b"), ("ptr", "c"), ("i32", n)]})
    return out


def kernel_source():
    text = open(KERNELS_HEADER).read()
    m = re.search(r'R"\((.*?)\)";', text, re.S)
    if not m:
        sys.exit(f"no raw string literal found in {KERNELS_HEADER}")
    return m.group(1)


def compile_cubin(arch, workdir):
    src = os.path.join(workdir, "reference_kernels.cu")
    cubin = os.path.join(workdir, "reference_kernels.cubin")
    with open(src, "w") as f:
        f.write(kernel_source())
    assay = os.environ.get("ASSAY_BIN")
    if assay:
        cmd = [assay, "compile", src, "--arch", arch, "-o", cubin, "--cache-dir", os.path.join(workdir, "cache")]
    else:
        nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
        cmd = [nvcc, "-cubin", f"-arch={arch}", "-O3", "-o", cubin, src]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0 or not os.path.exists(cubin):
        sys.exit(f"compiling the reference kernels failed ({' '.join(cmd)}):\n{r.stdout}\n{r.stderr}")
    how = f"assay compile --arch {arch} (NVRTC)" if assay else f"nvcc -cubin -arch={arch} -O3"
    return open(cubin, "rb").read(), how


class Driver:
    """The few CUDA driver calls needed, through ctypes, in PyTorch's primary context."""

    def __init__(self, device_index):
        self.cu = ctypes.CDLL("libcuda.so.1")
        c = ctypes
        self.cu.cuModuleLoadData.argtypes = [c.POINTER(c.c_void_p), c.c_char_p]
        self.cu.cuModuleGetFunction.argtypes = [c.POINTER(c.c_void_p), c.c_void_p, c.c_char_p]
        self.cu.cuLaunchKernel.argtypes = [c.c_void_p] + [c.c_uint] * 7 + [c.c_void_p, c.POINTER(c.c_void_p),
                                                                            c.c_void_p]
        self.cu.cuDevicePrimaryCtxRetain.argtypes = [c.POINTER(c.c_void_p), c.c_int]
        self.cu.cuCtxSetCurrent.argtypes = [c.c_void_p]
        self.cu.cuDeviceGet.argtypes = [c.POINTER(c.c_int), c.c_int]
        self.check(self.cu.cuInit(0), "cuInit")
        dev = c.c_int()
        self.check(self.cu.cuDeviceGet(c.byref(dev), device_index), "cuDeviceGet")
        ctx = c.c_void_p()
        # PyTorch runs in the device's primary context: retain the same one.
        self.check(self.cu.cuDevicePrimaryCtxRetain(c.byref(ctx), dev.value), "cuDevicePrimaryCtxRetain")
        self.check(self.cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")

    def check(self, r, what):
        if r != 0:
            raise RuntimeError(f"{what} failed: CUresult {r}")

    def load(self, image):
        mod = ctypes.c_void_p()
        self.check(self.cu.cuModuleLoadData(ctypes.byref(mod), image), "cuModuleLoadData")
        self.module = mod  # kept for the life of the process
        return mod

    def function(self, mod, name):
        f = ctypes.c_void_p()
        self.check(self.cu.cuModuleGetFunction(ctypes.byref(f), mod, name.encode()), f"cuModuleGetFunction({name})")
        return f


def make_launch(drv, fn, cfg, ptrs, stream):
    """A no-argument callable enqueuing one launch; the parameter array is built once."""
    holders = []
    for kind, v in cfg["args"]:
        if kind == "ptr":
            holders.append(ctypes.c_uint64(ptrs[v]))
        elif kind == "u64":
            holders.append(ctypes.c_uint64(v))
        else:
            holders.append(ctypes.c_int32(v))
    params = (ctypes.c_void_p * len(holders))(*[ctypes.cast(ctypes.pointer(h), ctypes.c_void_p) for h in holders])
    g, b = cfg["grid"], cfg["block"]
    launch_kernel = drv.cu.cuLaunchKernel
    s = ctypes.c_void_p(stream)

    def launch():
        r = launch_kernel(fn, g[0], g[1], g[2], b[0], b[1], b[2], 0, s, params, None)
        if r != 0:
            raise RuntimeError(f"cuLaunchKernel({cfg['label']}) failed: CUresult {r}")

    launch.keep = (holders, params)  # the parameter storage must outlive the callable
    return launch


def plain_event_loop_median(torch, launch, warmup=10, reps=100):
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    stops = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for _ in range(warmup):
        launch()
    for i in range(reps):
        starts[i].record()
        launch()
        stops[i].record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in zip(starts, stops))


def spread(values):
    m = statistics.median(values)
    return (max(values) - min(values)) / m if m > 0 else 0.0


def fmt(v, width=11, digits=5):
    return f"{v:{width}.{digits}f}" if isinstance(v, (int, float)) else f"{'-':>{width}}"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--fidelity-json", help="assay_bench_timing --json output of the same machine run")
    p.add_argument("--json", help="write the figures here")
    p.add_argument("--repeats", type=int, default=5)
    a = p.parse_args()

    try:
        import torch
        import triton
        import triton.testing
    except ImportError as e:
        sys.exit(f"needs torch and triton (the GPU machine's python3): {e}")
    if not torch.cuda.is_available():
        print("no GPU visible to torch: skipping the do_bench comparison")
        return 1 if os.environ.get("ASSAY_EXPECT_GPU") == "1" else 0

    dev = torch.cuda.current_device()
    torch.cuda.init()
    major, minor = torch.cuda.get_device_capability(dev)
    arch = f"sm_{major}{minor}"
    name = torch.cuda.get_device_name(dev)
    drv = Driver(dev)
    with tempfile.TemporaryDirectory(prefix="assay-do-bench-") as tmp:
        image, how = compile_cubin(arch, tmp)
    mod = drv.load(image)

    # The benchmark's buffers: a = 1.0, b = 2.0, up to 2^26 floats (matmul uses the first n^2).
    n_max = 1 << 26
    bufs = {"a": torch.full((n_max,), 1.0, device="cuda"), "b": torch.full((n_max,), 2.0, device="cuda"),
            "c": torch.empty(n_max, device="cuda")}
    ptrs = {k: v.data_ptr() for k, v in bufs.items()}
    stream = torch.cuda.current_stream().cuda_stream
    torch.cuda.synchronize()

    assay = {}
    if a.fidelity_json and os.path.exists(a.fidelity_json):
        for k in json.load(open(a.fidelity_json)).get("kernels", []):
            assay[k["label"]] = k
    elif a.fidelity_json:
        print(f"note: {a.fidelity_json} not found; Assay columns left empty")

    print(f"do_bench comparison on {name} ({arch}), torch {torch.__version__}, triton {triton.__version__}; "
          f"kernels compiled by {how}")
    header = (f"{'kernel':20} {'known':>9} {'assay_cold':>11} {'assay_hot':>11} {'db_mean':>11} {'db_median':>11} "
              f"{'plain_ev':>11} {'db_spread%':>10} {'db_med/cold':>11}")
    print(header)
    rows = []
    for cfg in configs():
        fn = drv.function(mod, cfg["kernel"])
        launch = make_launch(drv, fn, cfg, ptrs, stream)
        launch()
        torch.cuda.synchronize()
        means = [triton.testing.do_bench(launch) for _ in range(a.repeats)]
        medians = [triton.testing.do_bench(launch, return_mode="median") for _ in range(a.repeats)]
        plain = plain_event_loop_median(torch, launch)
        ref = assay.get(cfg["label"], {})
        cold, hot = ref.get("cold_median_ms"), ref.get("hot_median_ms")
        row = {"label": cfg["label"], "known_ms": cfg.get("known_ms"), "assay_cold_median_ms": cold,
               "assay_hot_median_ms": hot, "do_bench_mean_ms": statistics.median(means),
               "do_bench_mean_runs_ms": means, "do_bench_median_ms": statistics.median(medians),
               "do_bench_median_runs_ms": medians, "do_bench_median_spread": spread(medians),
               "plain_event_loop_median_ms": plain}
        rows.append(row)
        ratio = row["do_bench_median_ms"] / cold if cold else None
        print(f"{cfg['label']:20} {fmt(cfg.get('known_ms'), 9, 4)} {fmt(cold)} {fmt(hot)} "
              f"{fmt(row['do_bench_mean_ms'])} {fmt(row['do_bench_median_ms'])} {fmt(plain)} "
              f"{100 * row['do_bench_median_spread']:10.2f} {fmt(ratio, 11, 3)}")
    print("db_* = triton.testing.do_bench on the same cubin (defaults: warmup 25 ms, rep 100 ms, 256 MB cache "
          "clear before each run; mean unless 'median'); median of", a.repeats, "calls")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"gpu": name, "arch": arch, "torch": torch.__version__, "triton": triton.__version__,
                       "compiled_by": how, "repeats": a.repeats, "kernels": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

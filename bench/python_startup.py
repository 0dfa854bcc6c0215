#!/usr/bin/env python3
"""Where a Python job's seconds go, and whether a second process starting CUDA disturbs a timing.

    python3 bench/python_startup.py [--injection PATH/libassay_cupti.so] [--reps N]

Prints one JSON object. Phases, each in a fresh interpreter (medians of --reps):
  bare        `python -I -c pass`
  import      + `import torch`
  cuda        + torch.cuda.init() and a one-element tensor on the GPU
  cuda_cupti  the same with CUDA_INJECTION64_PATH set (Assay's second clock)
  exit        time from the last statement to the process being reaped, normal exit vs os._exit
Interference: a 1 ms GPU kernel (torch.cuda._sleep) timed 300 times by CUDA events, alone and while
another process repeatedly starts, uses and ends a CUDA context on the same GPU.
Used to choose what a standby harness does before its job arrives (docs/python-kinds.md).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

CHILD = r"""
import os, sys, time
t0 = time.perf_counter()
import torch
t1 = time.perf_counter()
if sys.argv[1] != "import":
    torch.cuda.init()
    torch.zeros(1, device="cuda").add_(1)
    torch.cuda.synchronize()
t2 = time.perf_counter()
sys.stdout.write("%f %f %f\n" % (t1 - t0, t2 - t1, time.time()))
sys.stdout.flush()
if sys.argv[2] == "_exit":
    os._exit(0)
"""


def run_child(mode, exit_mode, env):
    t0 = time.time()
    p = subprocess.run([sys.executable, "-I", "-c", CHILD, mode, exit_mode], env=env, capture_output=True,
                       text=True, check=True)
    t_end = time.time()
    imp, cuda, t_last = (float(x) for x in p.stdout.split())
    return {"total": t_end - t0, "import": imp, "cuda": cuda, "exit": t_end - t_last}


def median_of(runs, key):
    return round(statistics.median(r[key] for r in runs) * 1000, 1)


def timing_ms(n, busy_env):
    import torch
    torch.cuda.init()
    cycles = int(torch.cuda.get_device_properties(0).clock_rate) * 1000 // 1000  # ~1 ms at clock_rate (kHz)
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    stop = None
    noise = None
    if busy_env is not None:
        stop = tempfile.NamedTemporaryFile(delete=False).name
        script = "import os, torch\nwhile os.path.exists(%r):\n    os.system(%r)\n" % (
            stop, "%s -I -c 'import torch; torch.zeros(1 << 20, device=\"cuda\").sum().item()'" % sys.executable)
        noise = subprocess.Popen([sys.executable, "-I", "-c", script], env=busy_env)
        time.sleep(3)
    out = []
    for _ in range(n):
        s.record()
        torch.cuda._sleep(cycles)
        e.record()
        e.synchronize()
        out.append(s.elapsed_time(e))
        time.sleep(0.01)
    if noise is not None:
        os.unlink(stop)
        noise.wait()
    out.sort()
    return {"median": round(statistics.median(out), 4), "p90": round(out[int(0.9 * len(out))], 4),
            "max": round(out[-1], 4), "min": round(out[0], 4)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--injection", default="")
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    env = dict(os.environ)
    res = {"python": sys.executable}
    t = []
    for _ in range(a.reps):
        t0 = time.time()
        subprocess.run([sys.executable, "-I", "-c", "pass"], check=True)
        t.append(time.time() - t0)
    res["bare_ms"] = round(statistics.median(t) * 1000, 1)
    for name, mode, extra in (("import", "import", {}), ("cuda", "cuda", {})):
        runs = [run_child(mode, "exit", dict(env, **extra)) for _ in range(a.reps)]
        res[name] = {k: median_of(runs, k) for k in ("total", "import", "cuda", "exit")}
    runs = [run_child("cuda", "_exit", env) for _ in range(a.reps)]
    res["cuda_os_exit"] = {k: median_of(runs, k) for k in ("total", "import", "cuda", "exit")}
    if a.injection:
        with tempfile.TemporaryDirectory() as d:
            runs = []
            for i in range(a.reps):
                e = dict(env, CUDA_INJECTION64_PATH=a.injection, ASSAY_CUPTI_OUT=os.path.join(d, "c%d.json" % i))
                runs.append(run_child("cuda", "exit", e))
            res["cuda_cupti"] = {k: median_of(runs, k) for k in ("total", "import", "cuda", "exit")}
    res["sleep_1ms_alone"] = timing_ms(300, None)
    res["sleep_1ms_with_context_churn"] = timing_ms(300, env)
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Tests of python/assay_harness.py on the CPU (device "cpu", no GPU needed).

Every case writes real files (sources, blobs, request.json) into a temporary directory and runs the
harness as a subprocess, exactly as the worker does (`python -I -B assay_harness.py run ...`). The
cases run concurrently in HarnessTest.setUpClass (each harness process spends about a second importing torch);
the tests then assert on their result documents and files.

Run: /usr/bin/python3 tests/python/test_harness.py   (an interpreter with torch and numpy)
Env: ASSAY_HARNESS   the harness to test (default: python/assay_harness.py of this checkout)
     ASSAY_TEST_JOBS concurrent harness processes (default 3)
     ASSAY_TEST_KEEP=1 keeps the cases' directories (their request.json / result.json)
"""

import concurrent.futures
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
HARNESS = os.environ.get("ASSAY_HARNESS") or os.path.join(HERE, "..", "..", "python", "assay_harness.py")
PY = sys.executable
ROOT = None      # temporary directory of all cases
RESULTS = {}     # case name -> Outcome
FAST_TIMING = {"enabled": True, "mode": "cold", "min_samples": 5, "max_samples": 200, "noise_target": 0.05,
               "time_budget_ms": 30, "warmup_ms": 5}
NO_TIMING = {"enabled": False}


class Outcome:
    def __init__(self, case_dir, proc, result):
        self.dir = case_dir
        self.rc = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        self.result = result

    @property
    def status(self):
        return self.result["status"]

    def path(self, *parts):
        return os.path.join(self.dir, *parts)


def f32(name, shape, role="in", init=None, **kw):
    d = {"name": name, "role": role, "dtype": "f32", "shape": shape}
    if init is not None:
        d["init"] = init
    if role in ("out", "inout"):
        d.setdefault("atol", 1e-5)
        d.setdefault("rtol", 1e-4)
    d.update(kw)
    return d


def out(name, shape, dtype="f32", **kw):
    d = {"name": name, "role": "out", "dtype": dtype, "shape": shape}
    d.update(kw)
    return d


def src(text):
    return textwrap.dedent(text).lstrip()


def write_npy(path, arr):
    np.save(path, arr, allow_pickle=False)


def write_safetensors(path, tensors):
    """tensors: {name: (dtype string, shape, bytes)}; the header written by hand."""
    header, payload, off = {}, b"", 0
    for name, (dt, shape, data) in tensors.items():
        header[name] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + len(data)]}
        payload += data
        off += len(data)
    h = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + payload)


# --- the cases ------------------------------------------------------------------------------------
# Each returns (files {name: text}, request dict, extra argv) given its directory; `setup` may write
# binary files first.

REF_XW = src("""
    import torch
    class Model(torch.nn.Module):
        def forward(self, x, w, n):
            return x * w + n, x.clone(), w.clone()
    """)

LOGGING_CAND = src("""
    import torch, json, os
    LOG = os.path.join(os.path.dirname(__file__), "cand_calls.jsonl")
    calls = 0
    class Model(torch.nn.Module):
        def forward(self, x, w, n):
            global calls
            if calls < 3:  # the three correctness trials come first
                with open(LOG, "a") as f:
                    f.write(json.dumps([float(x.sum()), float(w.sum())]) + "\\n")
            calls += 1
            y = torch.addcmul(torch.full_like(x, float(n)), x, w)
            return (y, torch.clone(x), torch.clone(w))
    """)

LOGGING_REF = src("""
    import torch, json, os
    LOG = os.path.join(os.path.dirname(__file__), "ref_calls.jsonl")
    calls = 0
    class Model(torch.nn.Module):
        def forward(self, x, w, n):
            global calls
            if calls < 3:
                with open(LOG, "a") as f:
                    f.write(json.dumps([float(x.sum()), float(w.sum())]) + "\\n")
            calls += 1
            return x * w + n, x.clone(), w.clone()
    """)

XW_ARGS = [f32("x", [64, 32], init={"kind": "uniform", "a": -1, "b": 1}),
           f32("w", [64, 32], init={"kind": "normal", "a": 0, "b": 1}),
           {"name": "n", "role": "scalar", "dtype": "i32", "value": 3},
           f32("y", [64, 32], role="out"), f32("xc", [64, 32], role="out"), f32("wc", [64, 32], role="out")]

# One input of every dtype and init kind; the candidate returns copies (saved as npy).
GEN_ARGS = [
    {"name": "a_f32", "role": "in", "dtype": "f32", "shape": [4000], "init": {"kind": "uniform", "a": -2, "b": 3}},
    {"name": "b_f64", "role": "in", "dtype": "f64", "shape": [4000], "init": {"kind": "normal", "a": 0.5, "b": 2}},
    {"name": "c_f16", "role": "in", "dtype": "f16", "shape": [4000], "init": {"kind": "uniform", "a": 0, "b": 1}},
    {"name": "d_bf16", "role": "in", "dtype": "bf16", "shape": [4000], "init": {"kind": "int", "a": -3, "b": 3}},
    {"name": "e_i64", "role": "in", "dtype": "i64", "shape": [4000], "init": {"kind": "int", "a": -5, "b": 5}},
    {"name": "f_i32", "role": "in", "dtype": "i32", "shape": [4000], "init": {"kind": "uniform", "a": -2.5, "b": 2.5}},
    {"name": "g_i16", "role": "in", "dtype": "i16", "shape": [4000]},
    {"name": "h_i8", "role": "in", "dtype": "i8", "shape": [4000], "init": {"kind": "normal", "a": 0, "b": 1000}},
    {"name": "i_u8", "role": "in", "dtype": "u8", "shape": [4000]},
    {"name": "j_bool", "role": "in", "dtype": "bool", "shape": [4000], "init": {"kind": "const", "a": 1}},
    {"name": "k_bool", "role": "in", "dtype": "bool", "shape": [4000]},
]
GEN_OUTS = [dict(a, name="o_" + a["name"], role="out", init=None) for a in GEN_ARGS]
for _o in GEN_OUTS:
    _o.pop("init")
GEN_CAND = src("""
    import torch
    class Model(torch.nn.Module):
        def forward(self, *xs):
            return tuple(x.clone() for x in xs)
    """)


def torch_request(case_dir, cand, ref=REF_XW, args=XW_ARGS, trials=3, seed=123, timing=None, **extra):
    files = {"cand.py": cand}
    req = {"v": 1, "mode": "run", "kind": "torch", "device": "cpu",
           "candidate": {"kind": "torch", "path": os.path.join(case_dir, "cand.py"), "entry": "Model"},
           "reference": None, "args": args,
           "correctness": {"trials": trials, "seed": seed, "check_after_timing": True, "nan_equal": False},
           "timing": timing or NO_TIMING, "outputs": [], "output_dir": os.path.join(case_dir, "out"),
           "l2_bytes": 1 << 20, "cupti_marks": True}
    if ref is not None:
        files["ref.py"] = ref
        req["reference"] = {"kind": "torch", "path": os.path.join(case_dir, "ref.py"), "entry": "Model"}
    req.update(extra)
    return files, req


def simple_args(n=1000, shape=None):
    shape = shape or [n]
    return [f32("x", shape, init={"kind": "int", "a": 0, "b": 1000}), f32("y", shape, role="out")]


DOUBLE_REF = src("""
    import torch
    class Model(torch.nn.Module):
        def forward(self, x):
            return x * 2
    """)


def case_ok_torch(d):
    return torch_request(d, LOGGING_CAND, ref=LOGGING_REF, timing=FAST_TIMING, outputs=["y", "xc", "wc"])


def case_wrong(d):
    cand = src("""
        import torch
        class Model(torch.nn.Module):
            def forward(self, x):
                y = x * 2
                y[5, 0] += 1
                y[7, 3] += 0.5
                return y
        """)
    return torch_request(d, cand, ref=DOUBLE_REF, args=simple_args(shape=[10, 100]))


def case_alias(d):
    cand = src("""
        import torch
        class Model(torch.nn.Module):
            def forward(self, x):
                return x[:]
        """)
    return torch_request(d, cand, ref=DOUBLE_REF, args=simple_args())


def case_subclass(d):
    cand = src("""
        import torch
        class Sneaky(torch.Tensor):
            pass
        class Model(torch.nn.Module):
            def forward(self, x):
                return (x * 2).as_subclass(Sneaky)
        """)
    return torch_request(d, cand, ref=DOUBLE_REF, args=simple_args())


def case_wrong_shape(d):
    cand = src("""
        import torch
        class Model(torch.nn.Module):
            def forward(self, x):
                return (x * 2).reshape(10, 100)
        """)
    return torch_request(d, cand, ref=DOUBLE_REF, args=simple_args())


def case_wrong_dtype(d):
    cand = src("""
        import torch
        class Model(torch.nn.Module):
            def forward(self, x):
                return (x * 2).double()
        """)
    return torch_request(d, cand, ref=DOUBLE_REF, args=simple_args())


def case_writes_input(d):
    cand = src("""
        import torch
        class Model(torch.nn.Module):
            def forward(self, x):
                x.mul_(2)
                return x.clone()
        """)
    return torch_request(d, cand, ref=DOUBLE_REF, args=simple_args())


def case_caching(d):
    # Correct on its first call, then returns the cached answer: one trial passes, the re-check
    # after timing (new inputs) fails.
    cand = src("""
        import torch
        cache = None
        class Model(torch.nn.Module):
            def forward(self, x):
                global cache
                if cache is None:
                    cache = x * 2
                return cache.clone()
        """)
    return torch_request(d, cand, ref=DOUBLE_REF, args=simple_args(), trials=1, timing=FAST_TIMING)


def case_caching_by_address(d):
    # Keyed by the input's address and identity: the harness reuses the same input tensors with new
    # data every trial, so the second trial gets the first one's answer.
    cand = src("""
        import torch
        cache = {}
        class Model(torch.nn.Module):
            def forward(self, x):
                key = (x.data_ptr(), id(x))
                if key not in cache:
                    cache[key] = x * 2
                return cache[key].clone()
        """)
    return torch_request(d, cand, ref=DOUBLE_REF, args=simple_args(), trials=3)


def case_syntax(d):
    cand = "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x)\n        return x\n"
    return torch_request(d, cand, ref=DOUBLE_REF, args=simple_args())


def case_build_error(d):
    # What a failing load_inline raises at import (torch.utils.cpp_extension runs ninja/nvcc).
    cand = src("""
        import subprocess
        raise subprocess.CalledProcessError(1, ["ninja", "-v"], output=b"nvcc error: identifier undefined")
        """)
    return torch_request(d, cand, ref=DOUBLE_REF, args=simple_args())


def case_missing_entry(d):
    cand = src("""
        import torch
        class Net(torch.nn.Module):
            def forward(self, x):
                return x * 2
        """)
    return torch_request(d, cand, ref=DOUBLE_REF, args=simple_args())


def case_wrong_arity(d):
    cand = src("""
        import torch
        class Model(torch.nn.Module):
            def forward(self, x, w):
                return x * w
        """)
    return torch_request(d, cand, ref=DOUBLE_REF, args=simple_args())


def case_exception(d):
    cand = src("""
        import torch
        class Model(torch.nn.Module):
            def forward(self, x):
                raise ValueError("boom at element 7")
        """)
    return torch_request(d, cand, ref=DOUBLE_REF, args=simple_args())


def case_reference_exception(d):
    ref = src("""
        import torch
        class Model(torch.nn.Module):
            def forward(self, x):
                return x.view(3, -1)
        """)
    return torch_request(d, DOUBLE_REF, ref=ref, args=simple_args())


def _gen(d, seed, trials):
    return torch_request(d, GEN_CAND, ref=None, args=GEN_ARGS + GEN_OUTS, seed=seed, trials=trials,
                         outputs=[o["name"] for o in GEN_OUTS])


def case_gen_a(d):
    return _gen(d, 777, 2)


def case_gen_a_again(d):
    return _gen(d, 777, 2)


def case_gen_b(d):
    return _gen(d, 778, 2)


def setup_blobs(d):
    a = np.arange(32, dtype=np.float32).reshape(4, 8) / 4
    b = (np.arange(32, dtype=np.int32) - 16).reshape(4, 8)
    c = np.linspace(-1, 1, 32, dtype=np.float16).reshape(4, 8)
    write_npy(os.path.join(d, "a.npy"), a)
    with open(os.path.join(d, "b.raw"), "wb") as f:
        f.write(b.astype("<i4").tobytes())
    write_safetensors(os.path.join(d, "c.safetensors"), {
        "other": ("F32", [2], np.zeros(2, np.float32).tobytes()),
        "c": ("F16", [4, 8], c.astype("<f2").tobytes())})
    expected = a + b.astype(np.float32) + c.astype(np.float32)
    write_npy(os.path.join(d, "expected_y.npy"), expected)
    write_npy(os.path.join(d, "bad.npy"), np.zeros((4, 7), np.float32))


BLOB_CAND = src("""
    import torch
    class Model(torch.nn.Module):
        def forward(self, a, b, c):
            return a + b.float() + c.float()
    """)


def _blob_request(d, a_file):
    args = [{"name": "a", "role": "in", "dtype": "f32", "shape": [4, 8],
             "init": {"kind": "blob", "blob": "aa" * 32, "format": "npy"}},
            {"name": "b", "role": "in", "dtype": "i32", "shape": [4, 8],
             "init": {"kind": "blob", "blob": "bb" * 32, "format": "raw"}},
            {"name": "c", "role": "in", "dtype": "f16", "shape": [4, 8],
             "init": {"kind": "blob", "blob": "cc" * 32, "format": "safetensors"}},
            f32("y", [4, 8], role="out")]
    return torch_request(
        d, BLOB_CAND, ref=None, args=args, trials=2, timing=dict(FAST_TIMING, mode="graph"),
        expected={"y": os.path.join(d, "expected_y.npy")},
        blob_files={"aa" * 32: os.path.join(d, a_file), "bb" * 32: os.path.join(d, "b.raw"),
                    "cc" * 32: os.path.join(d, "c.safetensors")})


def case_blobs(d):
    setup_blobs(d)
    return _blob_request(d, "a.npy")


def case_blob_mismatch(d):
    setup_blobs(d)
    return _blob_request(d, "bad.npy")


TRITON_REF = DOUBLE_REF


def _triton_request(d, launcher):
    files, req = torch_request(d, launcher, ref=TRITON_REF,
                               args=[f32("x", [1000], init={"kind": "int", "a": 0, "b": 1000}),
                                     f32("y", [1000], role="out"),
                                     {"name": "n", "role": "scalar", "dtype": "i32", "value": 1000}])
    req["kind"] = "triton"
    req["candidate"] = {"kind": "triton", "path": os.path.join(d, "cand.py"), "entry": "launch"}
    # The reference is a torch module: it takes the in arguments and scalars, not y.
    files["ref.py"] = src("""
        import torch
        class Model(torch.nn.Module):
            def forward(self, x, n):
                return x * 2
        """)
    return files, req


def case_triton_ok(d):
    # The triton calling convention, exercised without triton: launch(*all_args) writes y in place.
    return _triton_request(d, src("""
        def launch(x, y, n):
            y.copy_(x * 2)
            return "ignored"
        """))


def case_triton_unwritten(d):
    return _triton_request(d, src("""
        def launch(x, y, n):
            y[:768].copy_(x[:768] * 2)   # the tail n % 256 is never written
        """))


PREP_CAND = src("""
    import os, torch
    root = os.environ["TORCH_EXTENSIONS_DIR"]
    # What load_inline leaves behind: a build directory holding the extension.
    os.makedirs(os.path.join(root, "fake_ext"), exist_ok=True)
    open(os.path.join(root, "fake_ext", "fake_ext.so"), "wb").close()
    os.makedirs(os.path.join(root, "not_built"), exist_ok=True)
    with open(os.path.join(os.path.dirname(__file__), "seen.txt"), "w") as f:
        f.write("%r %r" % (os.environ.get("CUDA_VISIBLE_DEVICES"), torch.cuda.is_available()))
    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            open(os.path.join(os.path.dirname(__file__), "constructed.txt"), "w").close()
        def forward(self, x):
            return x * 2
    """)


def case_prepare(d):
    files, req = torch_request(d, PREP_CAND, ref=DOUBLE_REF, args=simple_args())
    req["mode"] = "prepare"
    req["kind"] = "torch_cuda"
    req["candidate"]["kind"] = "torch_cuda"
    return files, req, ["prepare"]


def case_prepare_syntax(d):
    files, req = torch_request(d, "def broken(:\n", ref=DOUBLE_REF, args=simple_args())
    req["mode"] = "prepare"
    return files, req, ["prepare"]


KB_PROBLEM = src("""
    import torch
    import torch.nn as nn

    class Model(nn.Module):
        def __init__(self, in_features, out_features):
            super().__init__()
            self.linear = nn.Linear(in_features, out_features)

        def forward(self, x):
            return torch.relu(self.linear(x))

    batch_size, in_features, out_features = 16, 32, 24

    def get_inputs():
        return [torch.randn(batch_size, in_features)]

    def get_init_inputs():
        return [in_features, out_features]
    """)

KB_CAND = src("""
    import json, os
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    LOG = os.path.join(os.path.dirname(__file__), "kb_calls.jsonl")
    calls = 0

    class ModelNew(nn.Module):
        def __init__(self, in_features, out_features):
            super().__init__()
            self.linear = nn.Linear(in_features, out_features)   # same seed: same weights as Model

        def forward(self, x):
            global calls
            if calls < 3:
                with open(LOG, "a") as f:
                    f.write(json.dumps(float(x.sum())) + "\\n")
            calls += 1
            return F.linear(x, self.linear.weight, self.linear.bias).clamp_min(0)%s
    """)


def _kb_request(d, cand, timing=None):
    files = {"problem.py": KB_PROBLEM, "candidate.py": cand}
    req = {"v": 1, "mode": "run", "kind": "kernelbench", "device": "cpu",
           "candidate": {"path": os.path.join(d, "candidate.py"), "entry": "ModelNew"},
           "problem": {"path": os.path.join(d, "problem.py"), "entry": "Model"},
           "reference": None, "args": [],
           "correctness": {"trials": 3, "seed": None, "check_after_timing": True, "nan_equal": False},
           "timing": timing or dict(FAST_TIMING, noise_target=1e-9, max_samples=25, time_budget_ms=5000),
           "num_trials": 20, "outputs": [], "output_dir": os.path.join(d, "out"), "l2_bytes": 1 << 20,
           "cupti_marks": False}
    return files, req


def case_kb_ok(d):
    return _kb_request(d, KB_CAND % "")


def case_kb_wrong(d):
    return _kb_request(d, KB_CAND % " + 0.1")


def case_bad_request(d):
    return {}, None, ["run", "--request", os.path.join(d, "missing.json")]


CASES = {name[len("case_"):]: fn for name, fn in globals().items() if name.startswith("case_")}


def harness_env(d, **extra):
    """The environment the worker gives a harness in directory d (no CUPTI injection here)."""
    env = dict(os.environ, HOME=d, TMPDIR=d, TORCH_EXTENSIONS_DIR=os.path.join(d, "torch_ext"))
    env.pop("CUDA_INJECTION64_PATH", None)
    env.update(extra)
    return env


def run_case(name):
    d = os.path.join(ROOT, name)
    os.makedirs(d)
    made = CASES[name](d)
    files, req = made[0], made[1]
    argv = made[2] if len(made) > 2 else ["run"]
    for fname, text in files.items():
        with open(os.path.join(d, fname), "w") as f:
            f.write(text)
    if req is not None:
        with open(os.path.join(d, "request.json"), "w") as f:
            json.dump(req, f)
    if argv[:1] in (["run"], ["prepare"]) and "--request" not in argv:
        argv = argv[:1] + ["--request", os.path.join(d, "request.json")]
    argv = argv + ["--result", os.path.join(d, "result.json")]
    proc = subprocess.run([PY, "-I", "-B", HARNESS] + argv, cwd=d, env=harness_env(d), capture_output=True, text=True,
                          timeout=300)
    result = None
    try:
        with open(os.path.join(d, "result.json")) as f:
            result = json.load(f)
    except (OSError, ValueError):
        pass
    return name, Outcome(d, proc, result)


def run_all_cases():
    global ROOT
    ROOT = tempfile.mkdtemp(prefix="assay-harness-test-")
    jobs = int(os.environ.get("ASSAY_TEST_JOBS", "3"))
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        for name, outcome in pool.map(run_case, sorted(CASES)):
            RESULTS[name] = outcome


def tearDownModule():
    if ROOT and not os.environ.get("ASSAY_TEST_KEEP"):
        shutil.rmtree(ROOT, ignore_errors=True)


def load_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


class HarnessTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not RESULTS:
            run_all_cases()

    def outcome(self, name, cls=None):
        o = RESULTS[name]
        self.assertEqual(o.rc, 0, "harness exit %s\nstderr:\n%s" % (o.rc, o.stderr[-3000:]))
        self.assertIsNotNone(o.result, "no result.json; stderr:\n%s" % o.stderr[-3000:])
        self.assertEqual(o.result["v"], 1)
        if cls is not None:
            self.assertEqual(o.status["class"], cls, json.dumps(o.status, indent=1)[:3000])
        return o

    # -- a correct candidate, timing, outputs, seeding --

    def test_correct_candidate_passes_with_error_report(self):
        o = self.outcome("ok_torch", "ok")
        r = o.result
        self.assertTrue(r["compiled"])
        c = r["correctness"]
        self.assertTrue(c["passed"])
        self.assertEqual(c["reference"], "kernel")
        self.assertEqual(c["seeds"], [123, 124, 125])
        self.assertEqual(c["after_timing"], {"passed": True, "seed": 126})
        self.assertEqual([k["label"] for k in c["checks"]], ["trial 0", "trial 1", "trial 2", "after timing"])
        y = c["outputs"]["y"]
        self.assertEqual(y["total"], 64 * 32)
        self.assertEqual(y["mismatches"], 0)
        self.assertLessEqual(y["max_abs_error"], 1e-5)
        self.assertEqual((y["atol"], y["rtol"]), (1e-5, 1e-4))
        self.assertEqual(y["first_mismatches"], [])
        self.assertIn("candidate ran first on fresh inputs", c["guards"])
        self.assertIn("re-checked after timing on new inputs", c["guards"])
        self.assertEqual(r["versions"]["python"].count("."), 2)
        self.assertIn("torch", r["versions"])
        self.assertEqual(r["process"]["standby"], False)
        self.assertGreater(r["process"]["phases_ms"]["timing"], 0)
        self.assertEqual(r["extensions"], [])

    def test_timing_statistics_on_cpu(self):
        r = self.outcome("ok_torch", "ok").result
        for phase in ("candidate", "reference"):
            t = r["timing"][phase]
            self.assertEqual(t["clock"], "host")
            self.assertEqual(t["mode"], "cold")
            self.assertGreaterEqual(t["samples"], FAST_TIMING["min_samples"])
            self.assertEqual(len(t["samples_ms"]), t["samples_taken"])
            self.assertGreater(t["median_ms"], 0)
            self.assertLessEqual(t["min_ms"], t["p25_ms"])
            self.assertLessEqual(t["p25_ms"], t["median_ms"])
            self.assertLessEqual(t["median_ms"], t["p75_ms"])
            self.assertLessEqual(t["p75_ms"], t["max_ms"])
            self.assertIn(t["stop_reason"], ("converged", "time_budget_spent", "max_samples_reached"))
            self.assertEqual(t["converged"], t["stop_reason"] == "converged")
            if t["converged"]:
                self.assertLessEqual(t["noise"], FAST_TIMING["noise_target"])
            self.assertGreaterEqual(t["warmup"]["runs"], 1)
            self.assertEqual(t["l2_flush_bytes"], 0)
            self.assertIn("no L2 flush", t["notes"])
            self.assertEqual(t["marks"], [])  # no CUPTI on the CPU
        self.assertGreater(r["timing"]["speedup"], 0)

    def test_outputs_are_written_as_npy(self):
        o = self.outcome("ok_torch", "ok")
        paths = o.result["outputs"]
        self.assertEqual(sorted(paths), ["wc", "xc", "y"])
        y, x, w = (np.load(paths[k]) for k in ("y", "xc", "wc"))
        self.assertEqual(y.dtype, np.float32)
        self.assertEqual(y.shape, (64, 32))
        np.testing.assert_allclose(y, x * w + 3, rtol=1e-6, atol=1e-6)

    def test_trials_get_fresh_inputs_and_reference_the_same_ones(self):
        o = self.outcome("ok_torch", "ok")
        cand = load_jsonl(o.path("cand_calls.jsonl"))
        ref = load_jsonl(o.path("ref_calls.jsonl"))
        self.assertEqual(len(cand), 3)
        self.assertEqual(cand, ref)                    # the reference saw the candidate's inputs
        self.assertEqual(len({tuple(c) for c in cand}), 3)   # every trial different

    def test_same_seed_same_inputs_other_seed_other_inputs(self):
        a = self.outcome("gen_a", "ok").result["outputs"]
        a2 = self.outcome("gen_a_again", "ok").result["outputs"]
        b = self.outcome("gen_b", "ok").result["outputs"]
        for name in a:
            np.testing.assert_array_equal(np.load(a[name]), np.load(a2[name]), err_msg=name)
        differ = [n for n in a if not np.array_equal(np.load(a[n]), np.load(b[n]))]
        # Constants are the same whatever the seed; everything else changes.
        self.assertEqual(sorted(differ), sorted(n for n in a if n != "o_j_bool"))

    def test_generated_inputs_follow_their_init(self):
        o = self.outcome("gen_a", "ok")
        p = o.result["outputs"]
        v = {k: np.load(path) for k, path in p.items()}
        a = v["o_a_f32"]
        self.assertEqual(a.dtype, np.float32)
        self.assertTrue((a >= -2).all() and (a < 3).all())
        self.assertAlmostEqual(float(a.mean()), 0.5, delta=0.15)
        b = v["o_b_f64"]
        self.assertEqual(b.dtype, np.float64)
        self.assertAlmostEqual(float(b.mean()), 0.5, delta=0.2)
        self.assertAlmostEqual(float(b.std()), 2.0, delta=0.2)
        c = v["o_c_f16"]
        self.assertEqual(c.dtype, np.float16)
        self.assertTrue((c >= 0).all() and (c < 1).all())
        d = v["o_d_bf16"]   # bf16 is saved as float32, with a warning
        self.assertEqual(d.dtype, np.float32)
        self.assertEqual(sorted(set(d.tolist())), [-3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0])
        self.assertTrue(any("bf16" in w and "float32" in w for w in o.result["warnings"]))
        self.assertEqual(sorted(set(v["o_e_i64"].tolist())), list(range(-5, 6)))   # inclusive
        self.assertEqual(v["o_e_i64"].dtype, np.int64)
        self.assertEqual(sorted(set(v["o_f_i32"].tolist())), [-2, -1, 0, 1, 2])  # [ceil(lo), ceil(hi) - 1]
        g = v["o_g_i16"]
        self.assertEqual((int(g.min()), int(g.max())), (-100, 100))               # default int(-100, 100)
        h = v["o_h_i8"]
        self.assertEqual((int(h.min()), int(h.max())), (-128, 127))               # clipped to the dtype
        i = v["o_i_u8"]
        self.assertEqual((i.dtype, int(i.min()), int(i.max())), (np.uint8, 0, 100))
        self.assertTrue(v["o_j_bool"].all())
        k = v["o_k_bool"]
        self.assertEqual(k.dtype, np.bool_)
        self.assertTrue(0.4 < k.mean() < 0.6)
        self.assertIn("no reference: only unwritten outputs and writes to inputs are checked", o.result["warnings"])

    # -- wrong results and cheats --

    def test_wrong_result_reports_first_mismatch_index(self):
        r = self.outcome("wrong", "wrong_result").result
        msg = r["status"]["message"]
        self.assertTrue(msg.startswith("output 'y': 2 of 1000 elements differ from the reference (max abs error 1, "
                                       "atol 1e-05, rtol 0.0001); first at [5, 0]: candidate "), msg)
        rep = r["correctness"]["checks"][0]["outputs"]["y"]
        self.assertEqual(rep["mismatches"], 2)
        self.assertEqual(rep["max_abs_error"], 1.0)
        first = rep["first_mismatches"]
        self.assertEqual([m["index"] for m in first], [[5, 0], [7, 3]])
        self.assertEqual([m["flat_index"] for m in first], [500, 703])
        self.assertEqual(first[0]["candidate"], first[0]["reference"] + 1)
        self.assertFalse(r["correctness"]["passed"])
        self.assertEqual(r["correctness"]["checks"][0]["error"], msg)
        self.assertEqual(r["status"]["phase"], "correctness")

    def test_output_aliasing_an_input_fails(self):
        r = self.outcome("alias", "wrong_result").result
        self.assertEqual(r["status"]["message"], "output 'y' shares memory with input 'x'")

    def test_tensor_subclass_output_fails(self):
        r = self.outcome("subclass", "wrong_result").result
        self.assertIn("output 'y' is a Sneaky, a subclass of torch.Tensor", r["status"]["message"])

    def test_wrong_shape_and_dtype_fail(self):
        r = self.outcome("wrong_shape", "wrong_result").result
        self.assertEqual(r["status"]["message"], "output 'y' has shape [10, 100]; the contract says [1000]")
        r = self.outcome("wrong_dtype", "wrong_result").result
        self.assertEqual(r["status"]["message"], "output 'y' has dtype f64; the contract says f32")

    def test_writing_an_input_fails(self):
        r = self.outcome("writes_input", "wrong_result").result
        self.assertEqual(r["status"]["message"], "kernel wrote to input 'x' (declared in)")

    def test_cached_result_is_caught_after_timing(self):
        r = self.outcome("caching", "wrong_result").result
        msg = r["status"]["message"]
        self.assertTrue(msg.startswith("after timing: output 'y': "), msg)
        c = r["correctness"]
        self.assertEqual(c["checks"][0]["passed"], True)      # the one trial passed
        self.assertEqual(c["after_timing"], {"passed": False, "seed": 124})
        self.assertGreater(c["outputs"]["y"]["mismatches"], 900)
        self.assertIn("candidate", r["timing"])               # timing ran before the re-check
        self.assertEqual(r["status"]["phase"], "after_timing")

    def test_cache_keyed_by_input_address_fails_on_the_next_trial(self):
        r = self.outcome("caching_by_address", "wrong_result").result
        c = r["correctness"]
        self.assertEqual([k["passed"] for k in c["checks"]], [True, False])
        self.assertTrue(r["status"]["message"].startswith("output 'y': "), r["status"]["message"])

    # -- load and call errors --

    def test_syntax_error_is_compile_error(self):
        r = self.outcome("syntax", "compile_error").result
        self.assertFalse(r["compiled"])
        self.assertTrue(r["status"]["message"].startswith("SyntaxError: "), r["status"]["message"])
        self.assertIn("cand.py", r["status"]["detail"])
        self.assertEqual(r["status"]["phase"], "load")

    def test_build_failure_at_import_is_compile_error(self):
        r = self.outcome("build_error", "compile_error").result
        self.assertFalse(r["compiled"])
        self.assertIn("CalledProcessError", r["status"]["message"])
        self.assertIn("Traceback", r["status"]["detail"])

    def test_missing_entry_is_rejected(self):
        r = self.outcome("missing_entry", "rejected").result
        self.assertEqual(r["status"]["message"], "cand.py has no 'Model' (the entry); it defines: Net, torch")

    def test_wrong_arity_is_rejected(self):
        r = self.outcome("wrong_arity", "rejected").result
        self.assertIn("Model.forward(x, w)", r["status"]["message"])
        self.assertIn("the contract passes 1 argument", r["status"]["message"])

    def test_exception_is_runtime_error(self):
        r = self.outcome("exception", "runtime_error").result
        self.assertEqual(r["status"]["message"], "ValueError: boom at element 7")
        self.assertIn("Traceback", r["status"]["detail"])
        self.assertIn("cand.py", r["status"]["detail"])
        self.assertTrue(r["compiled"])

    def test_reference_exception_names_the_reference(self):
        r = self.outcome("reference_exception", "runtime_error").result
        self.assertTrue(r["status"]["message"].startswith("reference: RuntimeError: "), r["status"]["message"])

    def test_bad_request_still_writes_a_result(self):
        r = self.outcome("bad_request", "infra_error").result
        self.assertIn("cannot read the request", r["status"]["message"])

    # -- blobs and expected outputs --

    def test_npy_raw_safetensors_inputs_and_expected_npy(self):
        r = self.outcome("blobs", "ok").result
        c = r["correctness"]
        self.assertEqual(c["reference"], "expected")
        self.assertEqual(c["outputs"]["y"]["mismatches"], 0)
        self.assertEqual(c["outputs"]["y"]["total"], 32)
        self.assertNotIn("fresh inputs every trial", c["guards"])   # uploaded inputs never change
        # graph mode needs CUDA: timed in hot mode, with a warning
        self.assertEqual(r["timing"]["candidate"]["mode"], "hot")
        self.assertTrue(any("graph mode needs CUDA" in w for w in r["warnings"]))

    def test_blob_of_wrong_shape_is_rejected(self):
        r = self.outcome("blob_mismatch", "rejected").result
        self.assertEqual(r["status"]["message"], "input 'a' has shape [4, 7]; the contract says [4, 8]")

    # -- the triton calling convention --

    def test_triton_launcher_writes_preallocated_outputs(self):
        r = self.outcome("triton_ok", "ok").result
        self.assertEqual(r["correctness"]["outputs"]["y"]["mismatches"], 0)
        self.assertIn("outputs poisoned before every call", r["correctness"]["guards"])

    def test_triton_unwritten_tail_is_reported(self):
        r = self.outcome("triton_unwritten", "wrong_result").result
        self.assertEqual(r["status"]["message"],
                         "output 'y' element [768] was never written (it still holds the poison pattern; "
                         "232 of 1000 elements unwritten, 232 mismatches)")
        rep = r["correctness"]["checks"][0]["outputs"]["y"]
        self.assertEqual(rep["unwritten"], 232)
        self.assertEqual(rep["first_mismatches"][0]["candidate"], "nan")
        self.assertTrue(rep["first_mismatches"][0]["never_written"])

    # -- prepare --

    def test_prepare_imports_with_cuda_hidden_and_lists_extensions(self):
        o = self.outcome("prepare", "ok")
        r = o.result
        self.assertEqual(r["prepare"]["extensions"], ["fake_ext"])
        self.assertGreater(r["prepare"]["duration_ms"], 0)
        self.assertTrue(r["compiled"])
        with open(o.path("seen.txt")) as f:
            self.assertEqual(f.read(), "'' False")
        self.assertFalse(os.path.exists(o.path("constructed.txt")), "prepare must not construct the model")
        self.assertNotIn("correctness", r)

    def test_prepare_import_error_is_compile_error(self):
        r = self.outcome("prepare_syntax", "compile_error").result
        self.assertFalse(r["compiled"])
        self.assertIn("SyntaxError", r["status"]["message"])

    # -- kernelbench --

    def test_kernelbench_correct(self):
        import torch
        o = self.outcome("kb_ok", "ok")
        r = o.result
        kb = r["kernelbench"]
        self.assertTrue(kb["compiled"])
        self.assertTrue(kb["correctness"])
        self.assertEqual(kb["metadata"]["correctness_trials"], "(3 / 3)")
        self.assertGreater(kb["runtime"], 0)
        self.assertGreater(kb["ref_runtime"], 0)
        self.assertGreater(kb["speedup"], 0)
        stats = kb["runtime_stats"]
        self.assertEqual(set(stats), {"mean", "std", "min", "max", "num_trials", "hardware", "device"})
        self.assertEqual(stats["device"], "cpu")
        self.assertEqual(stats["mean"], kb["runtime"])
        # num_trials (20) is the minimum; max_samples (25) stops an unreachable noise target.
        self.assertEqual(stats["num_trials"], 25)
        self.assertEqual(r["timing"]["candidate"]["stop_reason"], "max_samples_reached")
        self.assertFalse(r["timing"]["candidate"]["converged"])
        # KernelBench's seeding: trial seeds from manual_seed(42), inputs from manual_seed(trial seed).
        torch.manual_seed(42)
        seeds = [torch.randint(0, 2 ** 32 - 1, (1,)).item() for _ in range(4)]
        self.assertEqual(r["correctness"]["seeds"], seeds[:3])
        self.assertEqual(r["correctness"]["after_timing"], {"passed": True, "seed": seeds[3]})
        sums = []
        for s in seeds[:3]:
            torch.manual_seed(s)
            sums.append(float(torch.randn(16, 32).sum()))
        self.assertEqual(load_jsonl(o.path("kb_calls.jsonl")), sums)
        self.assertEqual(r["correctness"]["outputs"]["output"]["total"], 16 * 24)

    def test_kernelbench_wrong(self):
        r = self.outcome("kb_wrong", "wrong_result").result
        kb = r["kernelbench"]
        self.assertTrue(kb["compiled"])
        self.assertFalse(kb["correctness"])
        self.assertEqual(kb["runtime"], -1.0)
        self.assertEqual(kb["metadata"]["correctness_trials"], "(0 / 3)")
        self.assertEqual(kb["metadata"]["correctness_issue"], "Output mismatch")
        self.assertEqual(len(kb["metadata"]["max_difference"]), 3)
        self.assertTrue(r["status"]["message"].startswith("output 'output': 384 of 384 elements differ"),
                        r["status"]["message"])
        self.assertNotIn("timing", r)

    # -- probe --

    def test_probe(self):
        import torch
        proc = subprocess.run([PY, "-I", "-B", HARNESS, "--probe"], capture_output=True, text=True, timeout=120)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        lines = proc.stdout.strip().splitlines()
        self.assertEqual(len(lines), 1, proc.stdout)
        p = json.loads(lines[0])
        self.assertEqual(p["torch"], torch.__version__)
        self.assertEqual(p["numpy"], np.__version__)
        self.assertIsInstance(p["cuda"], bool)
        self.assertEqual(p["cuda"], torch.cuda.is_available())
        self.assertIn("triton", p)
        self.assertEqual(p["python"], "%d.%d.%d" % sys.version_info[:3])


def write_case(d, files, req):
    os.makedirs(d, exist_ok=True)
    for fname, text in files.items():
        with open(os.path.join(d, fname), "w") as f:
            f.write(text)
    with open(os.path.join(d, "request.json"), "w") as f:
        json.dump(req, f)


def read_result(d):
    try:
        with open(os.path.join(d, "result.json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


class StandbyTest(unittest.TestCase):
    """`standby`: the process starts before its job, then takes exactly one job on stdin."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="assay-standby-test-")

    def tearDown(self):
        if not os.environ.get("ASSAY_TEST_KEEP"):
            shutil.rmtree(self.dir, ignore_errors=True)

    def start(self, **env):
        return subprocess.Popen([PY, "-I", "-B", HARNESS, "standby"], cwd=self.dir, env=harness_env(self.dir, **env),
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def test_runs_its_one_job_like_run(self):
        files, req = torch_request(self.dir, src("""
            import torch
            class Model(torch.nn.Module):
                def forward(self, x):
                    return x + x
            """), ref=DOUBLE_REF, args=simple_args(), timing=FAST_TIMING)
        p = self.start()
        time.sleep(1.0)  # the job arrives while (or after) it imports torch
        write_case(self.dir, files, req)
        job = {"mode": "run", "request": os.path.join(self.dir, "request.json"),
               "result": os.path.join(self.dir, "result.json")}
        out, err = p.communicate((json.dumps(job) + "\n").encode(), timeout=300)
        self.assertEqual(p.returncode, 0, err.decode()[-3000:])
        r = read_result(self.dir)
        self.assertIsNotNone(r, err.decode()[-3000:])
        self.assertEqual(r["status"]["class"], "ok", json.dumps(r["status"])[:2000])
        self.assertTrue(r["correctness"]["passed"])
        self.assertGreaterEqual(r["timing"]["candidate"]["samples"], FAST_TIMING["min_samples"])
        proc = r["process"]
        self.assertTrue(proc["standby"])
        self.assertGreater(proc["ready_ms"], 0)
        self.assertGreaterEqual(proc["waited_ms"], 0)
        self.assertNotIn("warm_error", proc)
        self.assertEqual(set(proc["phases_ms"]), {"load", "init", "correctness", "timing", "after_timing"})
        self.assertLessEqual(sum(proc["phases_ms"].values()), r["duration_ms"] + 1)
        with open(os.path.join(self.dir, "accepted")) as f:
            self.assertEqual(int(f.read()), p.pid)

    def test_without_a_job_it_exits_after_its_idle_time(self):
        p = self.start(ASSAY_HARNESS_IDLE_S="1")
        out, err = p.communicate(timeout=120)  # stdin stays open: only the idle timer ends it
        self.assertEqual(p.returncode, 0, err.decode()[-2000:])
        self.assertIsNone(read_result(self.dir))

    def test_eof_before_a_job_exits_quietly(self):
        p = self.start()
        out, err = p.communicate(b"", timeout=120)
        self.assertEqual(p.returncode, 0, err.decode()[-2000:])
        self.assertIsNone(read_result(self.dir))

    def test_a_bad_job_line_is_refused(self):
        p = self.start()
        out, err = p.communicate(b'{"mode": "prepare", "request": "x", "result": "y"}\n', timeout=120)
        self.assertEqual(p.returncode, 2)
        self.assertIn("bad job line", err.decode())
        self.assertIsNone(read_result(self.dir))

    def test_warm_cuda_failure_is_left_to_the_job(self):
        # No GPU visible: warming CUDA fails quietly; a job on the CPU still runs.
        files, req = torch_request(self.dir, DOUBLE_REF, ref=DOUBLE_REF, args=simple_args())
        write_case(self.dir, files, req)
        p = self.start(ASSAY_HARNESS_WARM="cuda", CUDA_VISIBLE_DEVICES="")
        job = {"mode": "run", "request": os.path.join(self.dir, "request.json"),
               "result": os.path.join(self.dir, "result.json")}
        out, err = p.communicate((json.dumps(job) + "\n").encode(), timeout=300)
        self.assertEqual(p.returncode, 0, err.decode()[-3000:])
        r = read_result(self.dir)
        self.assertEqual(r["status"]["class"], "ok", json.dumps(r["status"])[:2000])
        self.assertIn("warm_error", r["process"])


EXT_CAND = src("""
    import torch
    from torch.utils.cpp_extension import load_inline
    ext = load_inline("assay_twice", cpp_sources="torch::Tensor twice(torch::Tensor x) { return x * 2; }",
                      functions=["twice"])
    class Model(torch.nn.Module):
        def forward(self, x):
            return ext.twice(x)
    """)


def extension_headers_missing():
    """Why load_inline cannot build here, or None (CI installs libtorch-dev and pybind11-dev)."""
    try:
        from torch.utils.cpp_extension import include_paths
    except ImportError as e:
        return str(e)
    roots = include_paths() + ["/usr/include", "/usr/local/include"]
    if not any(os.path.isfile(os.path.join(r, "torch", "extension.h")) for r in roots):
        return "torch/extension.h not found (Debian: libtorch-dev)"
    try:
        import pybind11  # noqa: F401
        return None
    except ImportError:
        pass
    if not any(os.path.isfile(os.path.join(r, "pybind11", "pybind11.h")) for r in roots):
        return "pybind11/pybind11.h not found (Debian: pybind11-dev)"
    return None


def tree_state(root):
    state = {}
    for dirpath, _, names in os.walk(root):
        for n in names:
            p = os.path.join(dirpath, n)
            st = os.stat(p)
            state[os.path.relpath(p, root)] = (st.st_size, st.st_mtime_ns)
    return state


class ExtensionCacheTest(unittest.TestCase):
    """load_inline through the prepare step's cache, with a real build (one C++ extension, CPU)."""

    @classmethod
    def setUpClass(cls):
        why = extension_headers_missing()
        if why:
            raise unittest.SkipTest("cannot build a torch extension here: " + why)
        cls.root = tempfile.mkdtemp(prefix="assay-ext-test-")
        cls.cache = os.path.join(cls.root, "cache")
        os.makedirs(cls.cache)

    @classmethod
    def tearDownClass(cls):
        if not os.environ.get("ASSAY_TEST_KEEP"):
            shutil.rmtree(cls.root, ignore_errors=True)

    def harness(self, name, mode, cache, private):
        d = os.path.join(self.root, name)
        files, req = torch_request(d, EXT_CAND, ref=DOUBLE_REF, args=simple_args(), extension_cache=cache)
        req["kind"] = req["candidate"]["kind"] = "torch_cuda"
        req["mode"] = mode
        write_case(d, files, req)
        env = harness_env(d, TORCH_EXTENSIONS_DIR=private)
        os.makedirs(private, exist_ok=True)
        proc = subprocess.run([PY, "-I", "-B", HARNESS, mode, "--request", os.path.join(d, "request.json"),
                               "--result", os.path.join(d, "result.json")], cwd=d, env=env, capture_output=True,
                              text=True, timeout=600)
        r = read_result(d)
        self.assertEqual(proc.returncode, 0, proc.stderr[-3000:])
        self.assertIsNotNone(r, proc.stderr[-3000:])
        return r

    def test_prepare_builds_and_run_loads_without_building(self):
        r = self.harness("prepare", "prepare", self.cache, self.cache)
        self.assertEqual(r["status"]["class"], "ok", json.dumps(r["status"])[:3000])
        self.assertEqual([(e["name"], e["source"]) for e in r["extensions"]], [("assay_twice", "built")])
        with open(os.path.join(self.cache, "assay_extensions.json")) as f:
            record = json.load(f)
        (entry,) = record["extensions"].values()
        self.assertEqual(entry["module"], "assay_twice")
        self.assertTrue(os.path.isfile(os.path.join(self.cache, entry["file"])))

        before = tree_state(self.cache)
        private = os.path.join(self.root, "run_private")
        r = self.harness("run", "run", self.cache, private)
        self.assertEqual(r["status"]["class"], "ok", json.dumps(r["status"])[:3000])
        self.assertTrue(r["correctness"]["passed"])
        self.assertEqual([(e["name"], e["source"]) for e in r["extensions"]], [("assay_twice", "cache")])
        self.assertFalse([w for w in r["warnings"] if "built during the run" in w], r["warnings"])
        self.assertEqual(tree_state(self.cache), before, "the run wrote into the cache")
        self.assertEqual(os.listdir(private), [], "the run built the extension again")

        # Not in the cache it was given: built in the job's own directory, with a warning.
        empty = os.path.join(self.root, "empty_cache")
        os.makedirs(empty)
        private = os.path.join(self.root, "run_uncached_private")
        r = self.harness("run_uncached", "run", empty, private)
        self.assertEqual(r["status"]["class"], "ok", json.dumps(r["status"])[:3000])
        self.assertEqual([(e["name"], e["source"]) for e in r["extensions"]], [("assay_twice", "built")])
        self.assertTrue([w for w in r["warnings"] if "built during the run" in w], r["warnings"])
        self.assertTrue(os.path.isdir(os.path.join(private, "assay_twice")))
        self.assertEqual(os.listdir(empty), [])


def load_harness_module():
    import importlib.util
    spec = importlib.util.spec_from_file_location("assay_harness_under_test", HARNESS)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.capture_torch()
    return mod


class StatsAndCompareTest(unittest.TestCase):
    """The harness's pure pieces, in this process: the estimator of src/measure/stats.cc and the
    element rule of docs/correctness.md."""

    @classmethod
    def setUpClass(cls):
        cls.h = load_harness_module()

    def test_quantiles_match_numpy(self):
        v = sorted([0.3, 0.1, 0.7, 0.2, 0.9, 0.4, 0.55])
        for q in (0.0, 0.25, 0.5, 0.75, 1.0):
            self.assertAlmostEqual(self.h.sorted_quantile(v, q), float(np.quantile(v, q)))

    def test_noise_is_relative_standard_error_of_the_median(self):
        v = [1.0, 1.1, 0.9, 1.05, 0.95, 1.2, 0.8, 1.0]
        iqr = float(np.quantile(v, 0.75) - np.quantile(v, 0.25))
        want = 1.2533 * (iqr / 1.349) / (float(np.median(v)) * len(v) ** 0.5)
        self.assertAlmostEqual(self.h.relative_noise(v), want)
        # Quantisation floor: identical samples are not noise-free.
        self.assertAlmostEqual(self.h.relative_noise([0.002] * 100), 1.2533 * (0.0005 / 12 ** 0.5) / (0.002 * 10))
        self.assertEqual(self.h.relative_noise([1.0]), float("inf"))
        s = self.h.compute_stats([1.0])
        self.assertIsNone(s["noise"])

    def test_stop_rule_and_batches(self):
        rule = {"min_samples": 10, "max_samples": 100, "noise_target": 0.01, "time_budget_ms": 50}
        self.assertEqual(self.h.decide_stop(rule, 5, 5, 0.0, 1e9), "continue")        # min first
        self.assertEqual(self.h.decide_stop(rule, 10, 10, 0.005, 1.0), "converged")
        self.assertEqual(self.h.decide_stop(rule, 100, 100, 0.5, 1.0), "max_samples_reached")
        self.assertEqual(self.h.decide_stop(rule, 20, 20, 0.5, 60.0), "time_budget_spent")
        self.assertEqual(self.h.plan_batch(rule, 0.001, 0, 0.0), 100)                 # capped
        self.assertEqual(self.h.plan_batch(rule, 5.0, 0, 0.0), 10)                    # min_samples
        self.assertEqual(self.h.plan_batch(rule, 5.0, 95, 0.0), 2)                    # 10 ms of work

    def compare(self, cand, ref, atol=0.0, rtol=0.0, nan_equal=False):
        import torch
        c = torch.tensor(cand, dtype=torch.float32)
        r = torch.tensor(ref, dtype=torch.float32)
        return self.h.compare_output("y", c, r, atol, rtol, nan_equal)

    def test_element_rule(self):
        nan, inf = float("nan"), float("inf")
        rep, msg, _ = self.compare([1.0, 2.0, inf, nan], [1.0, 2.1, inf, nan], atol=0.05, rtol=0.0)
        self.assertEqual(rep["mismatches"], 2)                                        # 2.0 vs 2.1, nan
        self.assertEqual([m["flat_index"] for m in rep["first_mismatches"]], [1, 3])
        self.assertNotEqual(rep["first_mismatches"][1]["candidate"], rep["first_mismatches"][1]["candidate"])  # NaN
        self.assertTrue(msg.startswith("output 'y': 2 of 4 elements differ"))
        rep, msg, _ = self.compare([1.0, nan, -inf], [1.0, nan, -inf], nan_equal=True)
        self.assertEqual((rep["mismatches"], msg), (0, ""))
        rep, _, _ = self.compare([inf], [-inf])
        self.assertEqual(rep["mismatches"], 1)
        rep, _, _ = self.compare([110.0], [100.0], atol=0.0, rtol=0.1)                # |a-b| <= rtol*|b|
        self.assertEqual(rep["mismatches"], 0)
        self.assertAlmostEqual(rep["max_rel_error"], 0.1)

    def test_first_mismatch_values_are_json_strings_for_nan(self):
        rep, msg, _ = self.compare([float("nan")], [1.0])
        self.assertTrue(msg.endswith('first at [0]: candidate "nan", reference 1.0'), msg)
        doc = json.loads(json.dumps(self.h._jsonable(rep)))
        self.assertEqual(doc["first_mismatches"][0]["candidate"], "nan")

    def test_constant_reference_is_noticed(self):
        _, _, const = self.compare([0.0, 0.0, 0.0], [0.0, 0.0, 0.0])
        self.assertEqual(const, 0.0)
        _, _, const = self.compare([0.0, 1.0], [0.0, 1.0])
        self.assertIsNone(const)

    def test_storage_overlap(self):
        import torch
        x = torch.zeros(10)
        self.assertTrue(self.h._shares_memory(x[2:5], x[4:8]))
        self.assertTrue(self.h._shares_memory(x[:2], x[5:]))          # same storage
        self.assertFalse(self.h._shares_memory(x, torch.zeros(10)))
        self.assertTrue(self.h._self_overlapping(torch.zeros(1).expand(4)))
        self.assertFalse(self.h._self_overlapping(torch.zeros(4, 3).t()))


if __name__ == "__main__":
    unittest.main(verbosity=2)

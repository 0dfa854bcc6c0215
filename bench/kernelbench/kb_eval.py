#!/usr/bin/env python3
"""Runs the comparison set through KernelBench's own evaluation, the way its scripts do.

    python3 bench/kernelbench/kb_eval.py --kb-dir .kb --out kb.json

What it mirrors (KernelBench scripts/eval_from_generations.py and src/kernelbench/compile.py,
checked at the commit in KB_DIR/COMMIT):
- optional CPU pre-build of every non-Triton candidate in a process pool (`build_cache`,
  kernelbench.compile.batch_compile -> eval.build_compile_cache), one build directory per
  candidate, reused by the evaluation;
- then the candidates one after another, each in a fresh `spawn`ed process (mp.Pool(1) per
  candidate, as batch_eval does with one GPU), calling
  kernelbench.eval.eval_kernel_against_ref(ref_src, cand_src, seed_num, num_correct_trials,
  num_perf_trials, measure_performance=True, timing_method="cuda_event", build_dir, device,
  backend="triton" for Triton candidates else "cuda", precision=torch.float32), with KernelBench's
  per-candidate timeout (180 s) and its last-level error handling;
- TORCH_CUDA_ARCH_LIST set from the GPU as kernelbench.utils.set_gpu_arch sets it.

Only KernelBench's evaluation modules are used (kernelbench.eval, .timing, .dataset, .utils).
Their imports that have nothing to do with evaluation are provided when the interpreter lacks
them: `dotenv`, `openai`, `litellm` (LLM clients imported by kernelbench.utils, never called by
the evaluation) become empty stand-ins; `pydantic` (the KernelExecResult container) is taken
from KB_DIR/site (Debian's pure-Python pydantic 1.10, put there by prepare_kb.sh) or, failing
that, a minimal data container. None of them touches inputs, models, checks or timing; the
output records which were used ("imports").

Output (JSON): {"v": 1, "kernelbench_commit", "settings", "gpu", "imports", "build_cache":
{"wall_s", "results"}, "wall_s" (whole run, build included), "pairs": [{problem, candidate, kind,
backend, wall_s, result: {compiled, correctness, runtime, runtime_stats, ref_runtime,
ref_runtime_stats, metadata}}]}. Times from KernelBench are its own: milliseconds, mean of the
timed trials.
"""
import argparse
import copy
import importlib
import json
import multiprocessing as mp
import os
import shutil
import sys
import tempfile
import time
import traceback
import types

HERE = os.path.dirname(os.path.abspath(__file__))


# ---------------------------------------------------------------------------------------------
# Importing KernelBench's evaluation (runs in every child process).

class _Unavailable:
    """Stands in for an LLM client that the evaluation never calls."""

    def __init__(self, what):
        self._what = what

    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"{self._what} is not available in the KernelBench comparison benchmark")


def _pydantic_shim():
    """A minimal pydantic.BaseModel: keyword construction over annotated fields with defaults
    (dict defaults copied per instance), plain attribute assignment, dict()/model_dump()."""
    mod = types.ModuleType("pydantic")

    class BaseModel:
        def __init__(self, **data):
            for name in self._field_names():
                if name in data:
                    value = data.pop(name)
                    setattr(self, name, dict(value) if isinstance(value, dict) else value)
                else:
                    setattr(self, name, copy.deepcopy(getattr(type(self), name, None)))
            if data:
                raise TypeError(f"unknown fields: {sorted(data)}")

        @classmethod
        def _field_names(cls):
            names = []
            for klass in reversed(cls.__mro__):
                for name in getattr(klass, "__annotations__", {}):
                    if name not in names:
                        names.append(name)
            return names

        def dict(self):
            return {name: getattr(self, name) for name in self._field_names()}

        model_dump = dict

        def __repr__(self):
            return f"{type(self).__name__}({self.dict()!r})"

    mod.BaseModel = BaseModel
    mod.VERSION = "shim"
    mod.__kb_bench_shim__ = True
    return mod


def setup_kernelbench(kb_dir):
    """Makes `import kernelbench.eval` work with KB_DIR's sources; returns notes on what was
    provided for missing imports."""
    notes = []
    src = os.path.join(kb_dir, "src")
    if not os.path.isdir(os.path.join(src, "kernelbench")):
        raise FileNotFoundError(f"{src}/kernelbench not found: run bench/kernelbench/prepare_kb.sh first")
    if src not in sys.path:
        sys.path.insert(0, src)
    site = os.path.join(kb_dir, "site")
    if os.path.isdir(site) and site not in sys.path:
        sys.path.append(site)  # last: the interpreter's own packages win
    stand_ins = {
        "dotenv": {"load_dotenv": lambda *a, **k: False},
        "openai": {"OpenAI": _Unavailable("openai.OpenAI")},
        "litellm": {"completion": _Unavailable("litellm.completion")},
    }
    for name, attrs in stand_ins.items():
        try:
            importlib.import_module(name)
        except ImportError:
            mod = types.ModuleType(name)
            mod.__dict__.update(attrs)
            sys.modules[name] = mod
            notes.append(f"{name}: empty stand-in (LLM client import of kernelbench.utils, unused by eval)")
    try:
        importlib.import_module("tqdm")
    except ImportError:
        mod = types.ModuleType("tqdm")
        mod.tqdm = lambda iterable=None, *a, **k: iterable
        sys.modules["tqdm"] = mod
        notes.append("tqdm: pass-through stand-in (progress bars only)")
    try:
        pydantic = importlib.import_module("pydantic")
        where = os.path.dirname(os.path.dirname(pydantic.__file__))
        notes.append(f"pydantic {getattr(pydantic, 'VERSION', '?')} from {where}")
    except Exception as e:  # missing, or an old pydantic that fails on this Python
        for name in [m for m in sys.modules if m == "pydantic" or m.startswith("pydantic.")]:
            del sys.modules[name]
        sys.modules["pydantic"] = _pydantic_shim()
        notes.append(f"pydantic: minimal BaseModel data container (KernelExecResult only; import failed: {e!r})")
    importlib.import_module("kernelbench.eval")
    return notes


def _jsonable(obj):
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, (str, int, float, bool)) or obj is None:
        return obj
    return str(obj)


def _result_dict(r):
    if r is None:
        return None
    fields = ("compiled", "correctness", "runtime", "runtime_stats", "ref_runtime", "ref_runtime_stats", "metadata")
    return {f: _jsonable(getattr(r, f, None)) for f in fields}


# ---------------------------------------------------------------------------------------------
# Child-process work (module-level so `spawn` can pickle them by name).

def build_one(job):
    """As kernelbench.compile.compile_single_sample: build_compile_cache into the candidate's
    build directory. Returns (ok, seconds, error)."""
    t0 = time.perf_counter()
    setup_kernelbench(job["kb_dir"])
    from kernelbench import eval as kb_eval
    try:
        ok, _stdout, err = kb_eval.build_compile_cache(custom_model_src=job["cand_src"], verbose=False,
                                                       build_dir=job["build_dir"])
    except Exception as e:  # compile_single_sample's last-level catch
        ok, err = None, str(e)
    return ok, time.perf_counter() - t0, None if err is None else str(err)


def eval_one(job):
    """As scripts/eval_from_generations.evaluate_single_sample."""
    t0 = time.perf_counter()
    notes = setup_kernelbench(job["kb_dir"])
    import torch
    from kernelbench import eval as kb_eval
    device = torch.device("cuda:0")
    try:
        r = kb_eval.eval_kernel_against_ref(
            original_model_src=job["ref_src"],
            custom_model_src=job["cand_src"],
            seed_num=job["seed"],
            num_correct_trials=job["num_correct_trials"],
            num_perf_trials=job["num_perf_trials"],
            measure_performance=True,
            timing_method="cuda_event",
            verbose=False,
            build_dir=job["build_dir"],
            device=device,
            backend=job["backend"],
            precision=torch.float32,
        )
        result = _result_dict(r)
        if result is None:
            result = {"compiled": False, "correctness": False,
                      "metadata": {"other_error": "eval returned None (lock file error: KernelBench would retry)"}}
    except Exception as e:
        # evaluate_single_sample's last-level catch: a CUDA error counts as not compiled.
        key = "cuda_error" if "CUDA error" in str(e) else "other_error"
        result = {"compiled": False, "correctness": False,
                  "metadata": {key: str(e), key + "_name": kb_eval.get_error_name(e),
                               "traceback": traceback.format_exc()[-2000:]}}
    return {"result": result, "child_s": time.perf_counter() - t0, "imports": notes}


# ---------------------------------------------------------------------------------------------
# The run (parent process).

def gpu_arch_name(major, minor):
    # The names kernelbench.utils.set_gpu_arch accepts, by compute capability.
    if major >= 10:
        return "Blackwell"
    if major == 9:
        return "Hopper"
    if (major, minor) == (8, 9):
        return "Ada"
    if major == 8:
        return "Ampere"
    if (major, minor) == (7, 5):
        return "Turing"
    if major == 7:
        return "Volta"
    return "Pascal"


def load_pairs(manifest_path, only):
    manifest = json.load(open(manifest_path))
    root = os.path.dirname(os.path.abspath(manifest_path))
    pairs = []
    for p in manifest["pairs"]:
        name = f"{p['problem']}/{p['candidate']}"
        if only and not any(name == o or p["problem"] == o for o in only):
            continue
        pairs.append(dict(p, ref_src=open(os.path.join(root, p["problem_file"])).read(),
                          cand_src=open(os.path.join(root, p["candidate_file"])).read()))
    return manifest, pairs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kb-dir", default=".kb", help="KernelBench work tree (prepare_kb.sh)")
    ap.add_argument("--manifest", default=os.path.join(HERE, "manifest.json"))
    ap.add_argument("--out", required=True, help="JSON results file")
    ap.add_argument("--trials", type=int, help="num_correct_trials (default: the manifest's)")
    ap.add_argument("--perf-trials", type=int, help="num_perf_trials (default: the manifest's)")
    ap.add_argument("--seed", type=int, help="seed_num (default: the manifest's)")
    ap.add_argument("--timeout", type=float, default=180, help="per-candidate limit [s] (KernelBench: 180)")
    ap.add_argument("--no-build-cache", action="store_true", help="skip the parallel CPU pre-build")
    ap.add_argument("--cpu-workers", type=int, default=min(16, os.cpu_count() or 1))
    ap.add_argument("--build-root", help="build directories (default: a fresh temporary folder)")
    ap.add_argument("--only", action="append", help="PROBLEM or PROBLEM/CANDIDATE (repeatable)")
    args = ap.parse_args()

    kb_dir = os.path.abspath(args.kb_dir)
    manifest, pairs = load_pairs(args.manifest, args.only)
    s = manifest["settings"]
    settings = {"seed": args.seed if args.seed is not None else s["seed"],
                "num_correct_trials": args.trials or s["num_correct_trials"],
                "num_perf_trials": args.perf_trials or s["num_perf_trials"],
                "timing_method": "cuda_event", "precision": "fp32", "timeout_s": args.timeout,
                "build_cache": not args.no_build_cache, "cpu_workers": args.cpu_workers}
    commit = open(os.path.join(kb_dir, "COMMIT")).read().strip() if os.path.exists(os.path.join(kb_dir, "COMMIT")) else None

    # Check the imports in this process first, so a broken setup fails once, loudly.
    imports = setup_kernelbench(kb_dir)
    import torch
    if not torch.cuda.is_available():
        sys.exit("kb_eval: CUDA is not available: KernelBench's evaluation needs a GPU")
    major, minor = torch.cuda.get_device_capability(0)
    arch = gpu_arch_name(major, minor)
    os.environ["TORCH_CUDA_ARCH_LIST"] = arch  # as kernelbench.utils.set_gpu_arch([arch])
    gpu = {"name": torch.cuda.get_device_name(0), "capability": f"{major}.{minor}", "arch_list": arch,
           "torch": torch.__version__}
    print(f"kb_eval: KernelBench {commit}, {gpu['name']}, {len(pairs)} pairs, settings {settings}, imports {imports}",
          flush=True)

    mp.set_start_method("spawn", force=True)
    build_root = args.build_root or tempfile.mkdtemp(prefix="kb_build_")
    jobs = []
    for p in pairs:
        jobs.append({"kb_dir": kb_dir, "ref_src": p["ref_src"], "cand_src": p["cand_src"],
                     "build_dir": os.path.join(build_root, p["problem"], p["candidate"]),
                     "backend": "triton" if p["kind"] == "triton" else "cuda",
                     "seed": settings["seed"], "num_correct_trials": settings["num_correct_trials"],
                     "num_perf_trials": settings["num_perf_trials"]})

    t_run = time.perf_counter()
    build = {"wall_s": 0.0, "results": {}}
    if settings["build_cache"]:
        t0 = time.perf_counter()
        todo = [(p, j) for p, j in zip(pairs, jobs) if j["backend"] == "cuda"]
        with mp.Pool(max(1, min(args.cpu_workers, len(todo)))) as pool:
            handles = [(p, j, pool.apply_async(build_one, (j,))) for p, j in todo]
            for p, j, h in handles:
                name = f"{p['problem']}/{p['candidate']}"
                try:
                    ok, secs, err = h.get(timeout=args.timeout)
                except mp.TimeoutError:
                    ok, secs, err = None, args.timeout, "build timed out"
                if not ok:
                    shutil.rmtree(j["build_dir"], ignore_errors=True)  # as remove_cache_dir
                build["results"][name] = {"ok": ok, "s": round(secs, 2), "error": err}
        build["wall_s"] = round(time.perf_counter() - t0, 2)
        print(f"kb_eval: build cache {build['wall_s']} s", flush=True)

    out_pairs = []
    for p, j in zip(pairs, jobs):
        name = f"{p['problem']}/{p['candidate']}"
        t0 = time.perf_counter()
        child = None
        with mp.Pool(1) as pool:
            h = pool.apply_async(eval_one, (j,))
            try:
                child = h.get(timeout=args.timeout)
                result = child["result"]
            except mp.TimeoutError:
                result = {"compiled": False, "correctness": False, "runtime": -1.0, "runtime_stats": {},
                          "metadata": {"error": "Evaluation timed out"}}
            except Exception as e:
                result = {"compiled": False, "correctness": False, "runtime": -1.0, "runtime_stats": {},
                          "metadata": {"error": str(e)}}
        wall = time.perf_counter() - t0
        out_pairs.append({"problem": p["problem"], "candidate": p["candidate"], "kind": p["kind"],
                          "backend": j["backend"], "wall_s": round(wall, 3),
                          "child_s": round(child["child_s"], 3) if child else None, "result": result})
        r = result or {}
        print(f"kb_eval: {name:40s} compiled={r.get('compiled')} correct={r.get('correctness')} "
              f"runtime={r.get('runtime')} ref={r.get('ref_runtime')} "
              f"flag={(r.get('metadata') or {}).get('excessive_speedup', '')} {wall:.1f}s", flush=True)
    wall_s = time.perf_counter() - t_run

    doc = {"v": 1, "kernelbench_commit": commit, "settings": settings, "gpu": gpu, "imports": imports,
           "build_cache": build, "wall_s": round(wall_s, 3), "pairs": out_pairs}
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=1)
    if not args.build_root:
        shutil.rmtree(build_root, ignore_errors=True)
    print(f"kb_eval: {len(out_pairs)} pairs in {wall_s:.1f} s -> {args.out}", flush=True)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Checks the KernelBench comparison set without a GPU (torch >= 1.13, CPU).

    /usr/bin/python3 bench/kernelbench/selfcheck.py

1. The manifest and the files agree: every problem and candidate file is listed, every listed
   file exists and compiles, kinds and expectations are known values.
2. No candidate defines a module-level name the problem also defines. KernelBench execs the
   candidate into the problem's namespace, so such a name would change the problem's inputs.
3. Every candidate that can run on a CPU (plain PyTorch) does what the manifest says, on small
   sizes, seeded as KernelBench seeds (torch.manual_seed before the init inputs, before each
   model's construction and before each trial's inputs):
   correct: matches the reference within the benchmark's tolerance on every trial;
   wrong: misses it on some trial;
   cheats: the designed behaviour: the alias returns the input's storage and changes it; the
   shape cache goes stale after its honest calls; the identity cache recomputes nothing for the
   same tensor; the reference thief returns the reference's own output when that is alive
   (KernelBench's order) and garbage when it runs first (Assay's order); the stale allocation
   never reads its input.
4. With --kb-dir DIR (a KernelBench tree from prepare_kb.sh), KernelBench's own correctness
   loop (kernelbench.eval.run_and_check_correctness, 5 trials, seed 42) on the same CPU-runnable
   candidates, with torch.cuda.synchronize made a no-op for the CPU (this check only): correct
   ones pass, wrong ones fail, and the alias, both caches and the reference thief pass, which is
   what makes them cheats KernelBench misses.
CUDA and Triton candidates cannot run here; they are only compiled (py_compile).
Exit code 0 when everything holds; prints one line per check.
"""
import ast
import gc
import importlib.util
import json
import os
import py_compile
import sys
import tempfile

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
KINDS = {"torch", "torch_cuda", "triton"}
EXPECTED = {"correct", "wrong", "cheat-alias", "cheat-cache-shape", "cheat-cache-identity",
            "cheat-side-stream", "cheat-stale-empty", "cheat-steal-ref"}
# Small sizes for the CPU (the problems' module-level constants, overridden before get_inputs /
# get_init_inputs read them). Deliberately not powers of two.
SMALL = {
    "p1_swish": {"batch_size": 37, "dim": 53},
    "p2_row_mean": {"batch_size": 67, "dim1": 67},
    "p3_scaled_matmul": {"M": 72, "K": 40, "N": 56},
    "p4_softmax": {"batch_size": 45, "dim": 45},
    "p5_depthwise_conv": {"batch_size": 2, "channels": 5, "height": 11, "width": 13},
    "p6_layernorm": {"batch_size": 29, "features": 70},
}
SEED = 42
TRIALS = 3

failures = []


def check(ok, what):
    print(("ok    " if ok else "FAIL  ") + what)
    if not ok:
        failures.append(what)


def load_module(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def module_names(path):
    """Module-level names a file binds, other than by import."""
    names = set()
    for node in ast.parse(open(path).read()).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            for t in node.targets:
                names.update(n.id for n in ast.walk(t) if isinstance(n, ast.Name))
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def seeded(seed):
    torch.manual_seed(seed)


def trial_seeds(n):
    # As KernelBench: trial seeds drawn from a generator seeded with the run's seed.
    torch.manual_seed(SEED)
    return [int(torch.randint(0, 2**32 - 1, (1,)).item()) for _ in range(n)]


def close(a, b, tol):
    return (isinstance(b, torch.Tensor) and a.shape == b.shape
            and bool(torch.allclose(a, b, atol=tol["atol"], rtol=tol["rtol"])))


def make_models(problem, cand_path):
    seeded(SEED)
    init = problem.get_init_inputs()
    with torch.no_grad():
        seeded(SEED)
        ref = problem.Model(*init)
        # KernelBench execs the candidate source into a dict; do the same.
        ctx = {}
        exec(compile(open(cand_path).read(), cand_path, "exec"), ctx)
        seeded(SEED)
        cand = ctx["ModelNew"](*init)
    return ref, cand


def inputs_for(problem, seed):
    seeded(seed)
    return problem.get_inputs()


def check_files(manifest):
    pairs = manifest["pairs"]
    listed = {(p["problem"], p["candidate"]) for p in pairs}
    check(len(listed) == len(pairs), "manifest: no pair is listed twice")
    for p in pairs:
        check(p["kind"] in KINDS, f"manifest: {p['problem']}/{p['candidate']} kind {p['kind']!r} is known")
        check(p["expected"] in EXPECTED,
              f"manifest: {p['problem']}/{p['candidate']} expected {p['expected']!r} is known")
        if p["expected"].startswith("cheat-"):
            check(p.get("catch") in ("fail", "timing"), f"manifest: {p['problem']}/{p['candidate']} says how it is caught")
        for key in ("problem_file", "candidate_file"):
            check(os.path.isfile(os.path.join(HERE, p[key])), f"manifest: {p[key]} exists")
    on_disk = set()
    for d in sorted(os.listdir(os.path.join(HERE, "candidates"))):
        for f in sorted(os.listdir(os.path.join(HERE, "candidates", d))):
            if f.endswith(".py"):
                on_disk.add((d, f[:-3]))
    check(on_disk == listed, f"manifest lists exactly the {len(on_disk)} candidate files on disk "
                             f"(unlisted: {sorted(on_disk - listed)}, missing: {sorted(listed - on_disk)})")
    problems = {p["problem"] for p in pairs}
    on_disk_p = {f[:-3] for f in os.listdir(os.path.join(HERE, "problems")) if f.endswith(".py")}
    check(problems == on_disk_p, "manifest covers exactly the problem files on disk")
    with tempfile.TemporaryDirectory() as tmp:
        for p in pairs:
            for key in ("problem_file", "candidate_file"):
                path = os.path.join(HERE, p[key])
                try:
                    py_compile.compile(path, cfile=os.path.join(tmp, "x.pyc"), doraise=True)
                except py_compile.PyCompileError as e:
                    check(False, f"{p[key]} compiles: {e}")
    for p in pairs:
        clash = module_names(os.path.join(HERE, p["candidate_file"])) & module_names(os.path.join(HERE, p["problem_file"]))
        check(not clash, f"{p['candidate_file']}: no module-level name shared with the problem {sorted(clash)}")
        src = open(os.path.join(HERE, p["candidate_file"])).read()
        check("class ModelNew" in src, f"{p['candidate_file']} defines ModelNew")
        uses_inline = "load_inline" in src
        check(uses_inline == (p["kind"] == "torch_cuda"), f"{p['candidate_file']}: kind {p['kind']} matches its use of load_inline")
        check(("import triton" in src) == (p["kind"] == "triton"), f"{p['candidate_file']}: kind {p['kind']} matches its use of triton")


def run_pair(p, problem, tol):
    name = f"{p['problem']}/{p['candidate']}"
    path = os.path.join(HERE, p["candidate_file"])
    exp = p["expected"]
    if exp in ("correct", "wrong"):
        ref, cand = make_models(problem, path)
        results = []
        with torch.no_grad():
            for s in trial_seeds(TRIALS):
                ins = inputs_for(problem, s)
                want = ref(*ins)
                got = cand(*[x.clone() for x in ins])
                results.append(close(want, got, tol))
        if exp == "correct":
            check(all(results), f"{name}: correct on all {TRIALS} trials")
        else:
            check(not all(results), f"{name}: wrong on some trial")
    elif exp == "cheat-alias":
        ref, cand = make_models(problem, path)
        with torch.no_grad():
            ins = inputs_for(problem, 1)
            want = ref(*ins)  # KernelBench's order: the reference first, on the same tensors
            before = ins[0].clone()
            got = cand(*ins)
        check(close(want, got, tol), f"{name}: values pass KernelBench's comparison")
        check(got.data_ptr() == ins[0].data_ptr(), f"{name}: the output is the input's storage")
        check(not torch.equal(before, ins[0]), f"{name}: the input was changed")
    elif exp == "cheat-cache-shape":
        ref, cand = make_models(problem, path)
        honest = cand.honest_calls
        ok_first, stale_later = True, False
        with torch.no_grad():
            for i in range(honest + 3):
                ins = inputs_for(problem, 100 + i)
                ok = close(ref(*ins), cand(*ins), tol)
                if i < honest:
                    ok_first &= ok
                else:
                    stale_later |= not ok
        check(ok_first, f"{name}: right for its first {honest} calls (the correctness trials)")
        check(stale_later, f"{name}: stale on fresh inputs afterwards")
    elif exp == "cheat-cache-identity":
        ref, cand = make_models(problem, path)
        with torch.no_grad():
            ins = inputs_for(problem, 7)
            first = cand(*ins)
            again = cand(*ins)
            fresh = inputs_for(problem, 8)
            other = cand(*fresh)
            ok_fresh = close(ref(*fresh), other, tol)
        check(again is first, f"{name}: the same unmodified input gets the stored result back (no work)")
        check(ok_fresh, f"{name}: fresh inputs get a right answer")
    elif exp == "cheat-steal-ref":
        # Assay's order: a fresh module, nothing computed yet, candidate first.
        ref, cand = make_models(problem, path)
        gc.collect()
        with torch.no_grad():
            ins = inputs_for(problem, 11)
            got = cand(*ins)
            want = ref(*ins)
        check(not close(want, got, tol), f"{name}: candidate first (Assay's order): wrong")
        del got, want
        # KernelBench's order: the reference's output alive while the candidate runs.
        ref, cand = make_models(problem, path)
        gc.collect()
        with torch.no_grad():
            ok = True
            for s in trial_seeds(TRIALS):
                ins = inputs_for(problem, s)
                output = ref(*ins)
                output_new = cand(*ins)
                ok &= close(output, output_new, tol) and output_new is output
        check(ok, f"{name}: reference first (KernelBench's order): returns the reference's own output")
    elif exp == "cheat-stale-empty":
        ref, cand = make_models(problem, path)
        with torch.no_grad():
            ins = inputs_for(problem, 5)
            want = ref(*ins)
            poisoned = [torch.full_like(x, float("nan")) for x in ins]
            got = cand(*poisoned)
        # It never reads its input: NaN inputs still give a finite-or-not tensor of the right shape.
        check(got.shape == want.shape and got.dtype == want.dtype,
              f"{name}: returns an uninitialized tensor of the output's shape without reading its input")
    else:
        check(False, f"{name}: no CPU check for {exp}")


def kernelbench_cpu(manifest, kb_dir, cpu_pairs):
    sys.path.insert(0, HERE)
    import kb_eval
    notes = kb_eval.setup_kernelbench(kb_dir)
    print(f"kernelbench from {kb_dir}: {'; '.join(notes)}")
    from kernelbench import eval as kbe
    real_sync = torch.cuda.synchronize
    torch.cuda.synchronize = lambda *a, **k: None  # the loop syncs the device; there is none here
    try:
        for p in cpu_pairs:
            name = f"{p['problem']}/{p['candidate']}"
            ctx = {}
            Model, get_init_inputs, get_inputs = kbe.load_original_model_and_inputs(
                open(os.path.join(HERE, p["problem_file"])).read(), ctx)
            ctx.update(SMALL[p["problem"]])
            kbe.set_seed(SEED)
            init = get_init_inputs()
            with torch.no_grad():
                kbe.set_seed(SEED)
                ref = Model(*init)
            ModelNew = kbe.load_custom_model(open(os.path.join(HERE, p["candidate_file"])).read(), ctx)
            with torch.no_grad():
                kbe.set_seed(SEED)
                new = ModelNew(*init)
            md = {}
            r = kbe.run_and_check_correctness(ref, new, get_inputs, md, num_correct_trials=5, seed=SEED,
                                              device=torch.device("cpu"))
            got = "passes" if r.correctness else "fails"
            if p["expected"] == "cheat-stale-empty":
                print(f"info  {name}: KernelBench {got} it on the CPU {md.get('correctness_trials', '')}")
                continue
            want = "fails" if p["expected"] == "wrong" else "passes"
            check(got == want, f"{name}: KernelBench's correctness loop {want} it ({got}, "
                               f"{md.get('correctness_trials', '')})")
    finally:
        torch.cuda.synchronize = real_sync


def main():
    kb_dir = None
    if len(sys.argv) == 3 and sys.argv[1] == "--kb-dir":
        kb_dir = sys.argv[2]
    elif len(sys.argv) != 1:
        sys.exit("usage: selfcheck.py [--kb-dir DIR]")
    manifest = json.load(open(os.path.join(HERE, "manifest.json")))
    tol = {"atol": manifest["settings"]["atol"], "rtol": manifest["settings"]["rtol"]}
    print(f"torch {torch.__version__}, python {sys.version.split()[0]}")
    check_files(manifest)
    problems = {}
    for p in manifest["pairs"]:
        if p["problem"] not in problems:
            mod = load_module(os.path.join(HERE, p["problem_file"]), "kb_problem_" + p["problem"])
            for k, v in SMALL[p["problem"]].items():
                check(hasattr(mod, k), f"{p['problem_file']} has the size constant {k}")
                setattr(mod, k, v)
            problems[p["problem"]] = mod
    skipped, cpu_pairs = [], []
    for p in manifest["pairs"]:
        if p["kind"] != "torch" or p["expected"] == "cheat-side-stream":
            skipped.append(f"{p['problem']}/{p['candidate']}")
            continue
        cpu_pairs.append(p)
        run_pair(p, problems[p["problem"]], tol)
    if kb_dir:
        kernelbench_cpu(manifest, kb_dir, cpu_pairs)
    print(f"not run here (need CUDA): {', '.join(skipped)}")
    print(f"{len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

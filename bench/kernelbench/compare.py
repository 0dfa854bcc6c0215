#!/usr/bin/env python3
"""Compares Assay's and KernelBench's verdicts and times on the comparison set.

    python3 bench/kernelbench/compare.py --assay assay.json --kb kb.json [--json compare.json]

Inputs: assay_submit.py's and kb_eval.py's outputs and the manifest (expected verdicts).
Prints, per pair: the expected verdict, each evaluator's verdict, each one's candidate time and
speedup over the reference (as each reports them: Assay's timing.median_ms, KernelBench's mean
of its timed trials, both [ms]), the ratio of the two times, and flags; then the summary:
agreement with the expectation on honest candidates (correct, wrong), the cheats each one
caught, and throughput (pairs per minute of wall time). Standard library only.

How a cheat counts (manifest `catch`):
- caught: the evaluator failed the candidate, or (catch "timing") reported no speedup above
  2x, i.e. measured honest time;
- flagged: it passed the candidate but warned (Assay: a timing disagreement or any warning;
  KernelBench: its excessive-speedup flag);
- missed: it passed the candidate with neither.
"""
import argparse
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
FAKE_SPEEDUP = 2.0  # a timing cheat reported above this speedup was not caught by the clock


def get(d, *path):
    for k in path:
        if not isinstance(d, dict):
            return None
        d = d.get(k)
    return d


def num(v):
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0 else None


def assay_view(entry):
    """Verdict, times and flags from an Assay job document."""
    job = entry.get("job") or {}
    res = job.get("result") or {}
    state = job.get("state") or entry.get("state")
    err = job.get("error") or res.get("error")
    kb = res.get("kernelbench") or {}
    timing = res.get("timing") or {}
    if state == "done":
        correct = kb.get("correctness")
        if not isinstance(correct, bool):
            correct = get(res, "correctness", "passed") is not False
        verdict = "pass" if correct else "fail:wrong_result"
    elif state is None:
        verdict = "missing"
    else:
        cls = err.get("class") if isinstance(err, dict) else None
        verdict = "fail:" + (cls or state)
    cand_ms = num(timing.get("median_ms")) or num(get(timing, "candidate", "median_ms")) or num(kb.get("runtime"))
    ref_ms = num(get(timing, "reference", "median_ms")) or num(kb.get("ref_runtime"))
    flags = []
    if timing.get("disagreement"):
        flags.append("clock disagreement")
    if timing.get("source") == "cupti":
        flags.append("time from CUPTI")
    for w in res.get("warnings") or []:
        text = w.get("message") if isinstance(w, dict) else str(w)
        flags.append("warning: " + (text or "")[:80])
    message = err.get("message", "") if isinstance(err, dict) else ""
    return {"verdict": verdict, "ms": cand_ms, "ref_ms": ref_ms, "flags": flags, "message": message[:160]}


def kb_view(entry):
    """Verdict, times and flags from a KernelBench KernelExecResult (as kb_eval.py stores it)."""
    r = entry.get("result") or {}
    md = r.get("metadata") or {}
    if r.get("correctness") is True:
        verdict = "pass"
    elif not r:
        verdict = "missing"
    elif not r.get("compiled"):
        verdict = "fail:" + ("timeout" if "timed out" in str(md.get("error", "")) else
                             "cuda_error" if "cuda_error" in md else "compile")
    elif "runtime_error" in md:
        verdict = "fail:runtime_error"
    else:
        verdict = "fail:wrong"
    flags = []
    if md.get("excessive_speedup") in (True, "True"):
        flags.append("excessive speedup")
    message = next((str(md[k]) for k in ("correctness_issue", "runtime_error", "compilation_error", "cuda_error",
                                          "other_error", "error") if k in md), "")
    return {"verdict": verdict, "ms": num(r.get("runtime")), "ref_ms": num(r.get("ref_runtime")), "flags": flags,
            "message": message[:160]}


def speedup(v):
    return v["ref_ms"] / v["ms"] if v["ms"] and v["ref_ms"] else None


def cheat_outcome(v, catch):
    if v["verdict"] == "missing":
        return "missing"
    if v["verdict"] != "pass":
        return "caught"
    sp = speedup(v)
    if catch == "timing" and sp is not None and sp <= FAKE_SPEEDUP:
        return "caught"
    return "flagged" if v["flags"] else "missed"


def fmt_ms(v):
    return "-" if v is None else (f"{v:.4f}" if v < 1 else f"{v:.3f}")


def fmt_x(v):
    return "-" if v is None else f"{v:.2f}x"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--manifest", default=os.path.join(HERE, "manifest.json"))
    ap.add_argument("--assay", required=True)
    ap.add_argument("--kb", required=True)
    ap.add_argument("--json", help="also write the comparison as JSON here")
    args = ap.parse_args()

    manifest = json.load(open(args.manifest))
    assay = json.load(open(args.assay))
    kb = json.load(open(args.kb))
    a_by = {(p["problem"], p["candidate"]): p for p in assay["pairs"]}
    k_by = {(p["problem"], p["candidate"]): p for p in kb["pairs"]}

    rows = []
    for m in manifest["pairs"]:
        key = (m["problem"], m["candidate"])
        if key not in a_by and key not in k_by:
            continue
        a = assay_view(a_by.get(key, {}))
        k = kb_view(k_by.get(key, {}))
        rows.append({"pair": f"{key[0]}/{key[1]}", "kind": m["kind"], "expected": m["expected"],
                     "slow": bool(m.get("slow")), "catch": m.get("catch"), "assay": a, "kb": k,
                     "time_ratio": a["ms"] / k["ms"] if a["ms"] and k["ms"] else None})

    w = max(len(r["pair"]) for r in rows) if rows else 10
    head = (f"{'pair':{w}}  {'kind':10} {'expected':20} {'assay':22} {'kernelbench':18} "
            f"{'assay ms':>9} {'kb ms':>9} {'a/kb':>6} {'a speedup':>9} {'kb speedup':>10}  flags")
    print(head)
    print("-" * len(head))
    for r in rows:
        a, k = r["assay"], r["kb"]
        flags = "; ".join([f"assay: {f}" for f in a["flags"]] + [f"kb: {f}" for f in k["flags"]])
        ratio = "-" if r["time_ratio"] is None else "%.2f" % r["time_ratio"]
        expected = r["expected"] + (" (slow)" if r["slow"] else "")
        print(f"{r['pair']:{w}}  {r['kind']:10} {expected:20} "
              f"{a['verdict']:22} {k['verdict']:18} {fmt_ms(a['ms']):>9} {fmt_ms(k['ms']):>9} "
              f"{ratio:>6} {fmt_x(speedup(a)):>9} {fmt_x(speedup(k)):>10}  {flags}")

    print()
    summary = {}
    honest = [r for r in rows if r["expected"] in ("correct", "wrong")]

    def right(v, expected):
        return (v["verdict"] == "pass") == (expected == "correct")

    for who in ("assay", "kb"):
        summary[who + "_honest_right"] = sum(right(r[who], r["expected"]) for r in honest)
    both = sum(r["assay"]["verdict"] == "pass" and r["kb"]["verdict"] == "pass" or
               r["assay"]["verdict"] != "pass" and r["kb"]["verdict"] != "pass" for r in honest)
    summary["honest"] = len(honest)
    summary["honest_agree"] = both
    print(f"honest candidates ({len(honest)}): Assay right on {summary['assay_honest_right']}, "
          f"KernelBench right on {summary['kb_honest_right']}, the two agree on {both}")
    for r in honest:
        if not right(r["assay"], r["expected"]) or not right(r["kb"], r["expected"]):
            print(f"  {r['pair']}: expected {r['expected']}; assay {r['assay']['verdict']} {r['assay']['message']!r}; "
                  f"kernelbench {r['kb']['verdict']} {r['kb']['message']!r}")
    slow = [r for r in rows if r["slow"]]
    for r in slow:
        print(f"  slow {r['pair']}: speedup assay {fmt_x(speedup(r['assay']))}, kernelbench {fmt_x(speedup(r['kb']))}")

    cheats = [r for r in rows if r["expected"].startswith("cheat-")]
    summary["cheats"] = []
    print(f"\ncheats ({len(cheats)}):")
    for r in cheats:
        ao, ko = cheat_outcome(r["assay"], r["catch"]), cheat_outcome(r["kb"], r["catch"])
        summary["cheats"].append({"pair": r["pair"], "expected": r["expected"], "assay": ao, "kb": ko})
        why = r["assay"]["message"] or "; ".join(r["assay"]["flags"])
        print(f"  {r['pair']:{w}} {r['expected']:22} assay {ao:8} kernelbench {ko:8} "
              f"(kb correctness {r['kb']['verdict']}, speedup {fmt_x(speedup(r['kb']))}) {why[:100]}")
    kb_passed = [c for r, c in zip(cheats, summary["cheats"]) if r["kb"]["verdict"] == "pass"]
    caught_by_assay = [c for c in kb_passed if c["assay"] in ("caught", "flagged")]
    summary["cheats_kb_passed"] = len(kb_passed)
    summary["cheats_kb_passed_assay_caught"] = len(caught_by_assay)
    print(f"  KernelBench passed {len(kb_passed)} of {len(cheats)} cheats "
          f"({sum(c['kb'] == 'flagged' for c in kb_passed)} with its excessive-speedup flag); "
          f"Assay caught or flagged {len(caught_by_assay)} of those "
          f"({sum(c['assay'] == 'caught' for c in caught_by_assay)} caught)")
    missed = [c["pair"] for c in summary["cheats"] if c["assay"] == "missed"]
    if missed:
        print(f"  missed by Assay: {', '.join(missed)}")

    ratios = [r["time_ratio"] for r in rows
              if r["time_ratio"] and r["expected"] == "correct" and
              r["assay"]["verdict"] == "pass" and r["kb"]["verdict"] == "pass"]
    if ratios:
        summary["time_ratio_median"] = statistics.median(ratios)
        print(f"\ntimes of honest correct candidates, Assay / KernelBench: median {statistics.median(ratios):.3f} "
              f"(min {min(ratios):.3f}, max {max(ratios):.3f}, n {len(ratios)}); Assay reports the median of its "
              f"samples, KernelBench the mean of {kb.get('settings', {}).get('num_perf_trials', '?')} trials")

    n_a, n_k = len(assay["pairs"]), len(kb["pairs"])
    ta, tk = assay.get("wall_s"), kb.get("wall_s")
    if ta and tk:
        pa, pk = n_a / (ta / 60), n_k / (tk / 60)
        summary.update({"assay_wall_s": ta, "kb_wall_s": tk, "assay_pairs_per_min": pa, "kb_pairs_per_min": pk})
        print(f"\nthroughput: Assay {n_a} pairs in {ta:.1f} s = {pa:.1f}/min ({assay.get('api')} submit); "
              f"KernelBench {n_k} pairs in {tk:.1f} s = {pk:.1f}/min (build cache "
              f"{get(kb, 'build_cache', 'wall_s')} s included); Assay / KernelBench = {pa / pk:.2f}x")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows, "summary": summary}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Submits the comparison set to an Assay server and collects every job's result.

    python3 bench/kernelbench/assay_submit.py --server http://127.0.0.1:8080 --out assay.json

One `kernelbench` job per (problem, candidate) pair, with the manifest's settings: correctness
trials, seed, tolerances (KernelBench's fp32 atol = rtol), num_trials (timed trials); the
timing mode and stopping rule are Assay's defaults. By default (--api auto) each problem goes in as
one batch (POST /v1/batches: the problem in the template, its candidates as entries); if the
server has no batch route (404/405), every pair is posted to POST /v1/jobs. Then every job is
polled (GET /v1/jobs/{id}) until it ends. Standard library only; ASSAY_API_KEY is sent if set.

Output (JSON): {"v": 1, "server", "api": "batch" | "jobs", "settings", "submit_s" (until the last
submission was accepted), "wall_s" (first submission to the last job's end), "pairs": [{problem,
candidate, kind, job_id, state, finished_s, job: <the job document, result included>}]}.
"""
import argparse
import json
import os
import sys
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
TERMINAL = {"done", "failed", "cancelled", "timed_out"}


class Http:
    def __init__(self, server):
        self.server = server.rstrip("/")
        self.key = os.environ.get("ASSAY_API_KEY")

    def call(self, method, path, body=None):
        """Returns (status, parsed JSON or text)."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.server + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        if self.key:
            req.add_header("Authorization", "Bearer " + self.key)
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                status, raw = r.status, r.read()
        except urllib.error.HTTPError as e:
            status, raw = e.code, e.read()
        try:
            return status, json.loads(raw.decode() or "null")
        except ValueError:
            return status, raw.decode(errors="replace")


def job_ids_by_name(doc):
    """Finds {name: job id} in a batch document, whatever its exact layout: any object with a
    name and a job id (`job_id`, or an `id` starting with 'j_')."""
    found = {}

    def walk(v):
        if isinstance(v, dict):
            jid = v.get("job_id") or (v.get("id") if str(v.get("id", "")).startswith("j_") else None)
            if jid and isinstance(v.get("name"), str):
                found.setdefault(v["name"], jid)
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    walk(doc)
    return found


def source(text, filename):
    return {"text": text, "filename": filename}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--server", default=os.environ.get("ASSAY_SERVER", "http://127.0.0.1:8080"))
    ap.add_argument("--manifest", default=os.path.join(HERE, "manifest.json"))
    ap.add_argument("--out", required=True)
    ap.add_argument("--api", choices=("auto", "batch", "jobs"), default="auto")
    ap.add_argument("--trials", type=int, help="correctness trials (default: the manifest's)")
    ap.add_argument("--perf-trials", type=int, help="num_trials (default: the manifest's)")
    ap.add_argument("--job-timeout-s", type=float, default=300, help="each job's timeout_s")
    ap.add_argument("--wait-s", type=float, default=540, help="give up waiting after this [s]")
    ap.add_argument("--only", action="append", help="PROBLEM or PROBLEM/CANDIDATE (repeatable)")
    args = ap.parse_args()

    manifest = json.load(open(args.manifest))
    root = os.path.dirname(os.path.abspath(args.manifest))
    s = manifest["settings"]
    settings = {"seed": s["seed"], "trials": args.trials or s["num_correct_trials"],
                "num_trials": args.perf_trials or s["num_perf_trials"], "atol": s["atol"], "rtol": s["rtol"],
                "timeout_s": args.job_timeout_s}
    pairs = [p for p in manifest["pairs"]
             if not args.only or any(o in (p["problem"], f"{p['problem']}/{p['candidate']}") for o in args.only)]
    problems = []
    for p in pairs:
        if p["problem"] not in problems:
            problems.append(p["problem"])

    def template(problem_file, problem):
        return {"kind": "kernelbench", "timeout_s": settings["timeout_s"],
                "problem": source(open(os.path.join(root, problem_file)).read(), problem + ".py"),
                "num_trials": settings["num_trials"],
                "correctness": {"trials": settings["trials"], "seed": settings["seed"],
                                "atol": settings["atol"], "rtol": settings["rtol"]}}

    def cand_source(p):
        return source(open(os.path.join(root, p["candidate_file"])).read(), f"{p['problem']}__{p['candidate']}.py")

    http = Http(args.server)
    t0 = time.perf_counter()
    ids = {}  # (problem, candidate) -> job id
    api = args.api
    if api in ("auto", "batch"):
        for prob in problems:
            members = [p for p in pairs if p["problem"] == prob]
            body = {"name": f"kernelbench-comparison {prob}", "template": template(members[0]["problem_file"], prob),
                    "candidates": [{"name": f"{prob}/{p['candidate']}", "source": cand_source(p)} for p in members]}
            status, doc = http.call("POST", "/v1/batches", body)
            if status in (404, 405) and api == "auto" and not ids:
                print(f"assay_submit: no batch route ({status}); submitting jobs one by one", flush=True)
                api = "jobs"
                break
            if status // 100 != 2:
                sys.exit(f"assay_submit: POST /v1/batches for {prob} answered {status}: {doc}")
            by_name = job_ids_by_name(doc)
            if len(by_name) < len(members) and isinstance(doc, dict) and doc.get("id"):
                st, got = http.call("GET", f"/v1/batches/{doc['id']}")
                if st == 200:
                    by_name.update(job_ids_by_name(got))
            for p in members:
                jid = by_name.get(f"{prob}/{p['candidate']}")
                if not jid:
                    sys.exit(f"assay_submit: the batch answer for {prob} names no job for {p['candidate']}: {doc}")
                ids[(p["problem"], p["candidate"])] = jid
        else:
            api = "batch"
    if api == "jobs":
        for p in pairs:
            spec = template(p["problem_file"], p["problem"])
            spec["candidate"] = cand_source(p)
            spec["name"] = f"{p['problem']}/{p['candidate']}"
            status, doc = http.call("POST", "/v1/jobs", spec)
            if status // 100 != 2 or not isinstance(doc, dict) or "id" not in doc:
                sys.exit(f"assay_submit: POST /v1/jobs for {spec['name']} answered {status}: {doc}")
            ids[(p["problem"], p["candidate"])] = doc["id"]
    submit_s = time.perf_counter() - t0
    print(f"assay_submit: {len(ids)} jobs submitted ({api}) in {submit_s:.2f} s", flush=True)

    docs, finished = {}, {}
    while len(finished) < len(ids) and time.perf_counter() - t0 < args.wait_s:
        for key, jid in ids.items():
            if key in finished:
                continue
            status, doc = http.call("GET", f"/v1/jobs/{jid}")
            if status != 200 or not isinstance(doc, dict):
                continue
            docs[key] = doc
            if doc.get("state") in TERMINAL:
                finished[key] = time.perf_counter() - t0
                r = doc.get("result") or {}
                kb = r.get("kernelbench") or {}
                err = (doc.get("error") or r.get("error") or {})
                print(f"assay_submit: {key[0] + '/' + key[1]:40s} {doc['state']:9s} "
                      f"{err.get('class', '') if isinstance(err, dict) else err} correct={kb.get('correctness')} "
                      f"runtime={kb.get('runtime')} ref={kb.get('ref_runtime')} at {finished[key]:.1f}s", flush=True)
        if len(finished) < len(ids):
            time.sleep(0.5)
    wall_s = (max(finished.values()) if finished else time.perf_counter() - t0)
    if len(finished) < len(ids):
        print(f"assay_submit: {len(ids) - len(finished)} jobs unfinished after {args.wait_s} s", flush=True)

    out = {"v": 1, "server": args.server, "api": api, "settings": settings, "submit_s": round(submit_s, 3),
           "wall_s": round(wall_s, 3), "all_finished": len(finished) == len(ids), "pairs": []}
    for p in pairs:
        key = (p["problem"], p["candidate"])
        doc = docs.get(key) or {}
        out["pairs"].append({"problem": p["problem"], "candidate": p["candidate"], "kind": p["kind"],
                             "job_id": ids.get(key), "state": doc.get("state"),
                             "finished_s": round(finished[key], 3) if key in finished else None, "job": doc})
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)
    print(f"assay_submit: {len(finished)}/{len(ids)} jobs ended, wall {wall_s:.1f} s -> {args.out}", flush=True)
    return 0 if len(finished) == len(ids) else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The client side of examples/spmv beyond what the `assay` CLI does: blobs.

  client.py prepare TEMPLATE DATA_DIR CUBIN > job.json
      Uploads the cubin and the CSR arrays of DATA_DIR (make_csr.py's output) as
      blobs -- asking HEAD /v1/blobs/{sha256} first, so the same data is never
      sent twice -- and prints TEMPLATE (spmv_job.json) with their hashes, rows
      and nnz filled in.
  client.py check RESULT_JSON DATA_DIR [--client-ms MS]
      Downloads y (result.outputs.y) from the server, compares it with
      DATA_DIR/y_expected.npy and prints the kernel, transfer and total times.
      Exit 0 when y matches, 1 when it does not.

Server: $ASSAY_SERVER (default http://127.0.0.1:8080); key: $ASSAY_API_KEY.
Standard library and numpy only.
"""
import hashlib
import io
import json
import os
import sys
import urllib.error
import urllib.request

import numpy as np

# Inputs of the contract, in the order of spmv_job.json, and their files.
INPUTS = ["row_ptr", "col_idx", "values", "x"]


def server():
    s = os.environ.get("ASSAY_SERVER") or "http://127.0.0.1:8080"
    return s if "://" in s else "http://" + s


def request(method, path, body=None, content_type=None):
    req = urllib.request.Request(server() + path, data=body, method=method)
    if os.environ.get("ASSAY_API_KEY"):
        req.add_header("Authorization", "Bearer " + os.environ["ASSAY_API_KEY"])
    if content_type:
        req.add_header("Content-Type", content_type)
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def put_blob(path):
    data = open(path, "rb").read()
    digest = hashlib.sha256(data).hexdigest()
    status, _ = request("HEAD", "/v1/blobs/" + digest)
    if status == 200:
        print(f"  {os.path.basename(path)}: already on the server ({len(data)} bytes)", file=sys.stderr)
        return digest
    status, body = request("POST", "/v1/blobs", data, "application/octet-stream")
    if status != 201:
        sys.exit(f"uploading {path} failed: HTTP {status}: {body[:500]!r}")
    got = json.loads(body)["hash"]
    if got != digest:
        sys.exit(f"the server stored {path} as {got}, expected {digest}")
    print(f"  {os.path.basename(path)}: uploaded {len(data)} bytes", file=sys.stderr)
    return digest


def prepare(template, data_dir, cubin):
    spec = json.load(open(template))
    meta = json.load(open(os.path.join(data_dir, "meta.json")))
    spec["source"]["blob"] = put_blob(cubin)
    for arg in spec["args"]:
        if arg["role"] == "scalar":
            arg["value"] = meta[arg["name"]]
        elif arg["name"] in INPUTS:
            arg["init"]["hash"] = put_blob(os.path.join(data_dir, arg["name"] + ".npy"))
    spec["reference"]["expected"]["y"]["blob"] = put_blob(os.path.join(data_dir, "y_expected.npy"))
    json.dump(spec, sys.stdout, indent=1)
    print()


def fmt_rate(d):
    if not d or not d.get("bytes_per_s"):
        return ""
    return f"{d['bytes_per_s'] / 1e9:8.2f} GB/s"


def check(result_path, data_dir, client_ms):
    result = json.load(open(result_path))
    if result.get("state") != "done":
        err = result.get("error") or {}
        print(f"job {result.get('job_id')} ended {result.get('state')}: {err.get('class')}: {err.get('message')}")
        return 1
    out = result["outputs"]["y"]
    status, body = request("GET", "/v1/blobs/" + out["blob"])
    if status != 200:
        print(f"downloading y failed: HTTP {status}")
        return 1
    y = np.load(io.BytesIO(body))
    expected = np.load(os.path.join(data_dir, "y_expected.npy"))
    meta = json.load(open(os.path.join(data_dir, "meta.json")))
    if y.shape != expected.shape or y.dtype != np.float32:
        print(f"y has shape {y.shape} and dtype {y.dtype}; expected {expected.shape} float32")
        return 1
    diff = np.abs(y.astype(np.float64) - expected.astype(np.float64))
    ok = bool(np.all(diff <= 1e-4 + 1e-4 * np.abs(expected.astype(np.float64))))
    rel = float(np.linalg.norm(diff) / max(np.linalg.norm(expected.astype(np.float64)), 1e-300))
    print(f"SpMV {meta['rows']} x {meta['rows']}, nnz {meta['nnz']}: y "
          f"{'matches' if ok else 'DOES NOT match'} the float64 reference "
          f"(max abs error {diff.max():.3g}, relative L2 error {rel:.3g}; server check: "
          f"{'passed' if result['correctness']['passed'] else 'failed'})")
    t = result["timing"]
    tr = result.get("transfers") or {}
    h2d, d2h = tr.get("h2d") or {}, tr.get("d2h") or {}
    thr = result.get("throughput") or {}
    rows = [
        (f"kernel, median ({t['mode']}, {t['samples']} samples, noise {100 * (t.get('noise') or 0):.2f} %)",
         t["median_ms"], f"{thr.get('bandwidth_bytes_per_s', 0) / 1e9:8.1f} GB/s effective"),
        (f"host -> device ({h2d.get('tensors', 0)} arrays, {h2d.get('bytes', 0) / 1e6:.2f} MB)",
         h2d.get("ms"), fmt_rate(h2d)),
        (f"device -> host (y, {d2h.get('bytes', 0) / 1e6:.2f} MB)", d2h.get("ms"), fmt_rate(d2h)),
        ("total on the GPU host (inputs in, checks, timing, outputs out)", tr.get("total_ms"), ""),
    ]
    if client_ms is not None:
        rows.append(("client: submit -> result (assay run)", client_ms, ""))
    for label, ms, extra in rows:
        val = f"{ms:12.4f} ms" if isinstance(ms, (int, float)) else f"{'-':>12}   "
        print(f"  {label:66} {val}  {extra}")
    return 0 if ok else 1


def main(argv):
    if len(argv) >= 5 and argv[1] == "prepare":
        prepare(argv[2], argv[3], argv[4])
        return 0
    if len(argv) >= 4 and argv[1] == "check":
        client_ms = float(argv[5]) if len(argv) >= 6 and argv[4] == "--client-ms" else None
        return check(argv[2], argv[3], client_ms)
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))

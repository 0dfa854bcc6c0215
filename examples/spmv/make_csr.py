#!/usr/bin/env python3
"""Writes a random square CSR matrix, a vector x and the expected y = A x as .npy files.

Usage: make_csr.py OUT_DIR [--rows N] [--min-nnz K] [--max-nnz K] [--seed S]

OUT_DIR receives
  row_ptr.npy  int32 [rows + 1]
  col_idx.npy  int32 [nnz]     columns sorted within each row (repeats allowed; they add up)
  values.npy   float32 [nnz]   uniform in [-1, 1)
  x.npy        float32 [rows]  uniform in [-1, 1)
  y_expected.npy float32 [rows]  A x computed in float64 from the float32 data, rounded once
  meta.json    {"rows", "nnz", "seed", ...}

Each row has a uniformly random count of nonzeros in [min-nnz, max-nnz] at
uniformly random columns. Only the standard library and numpy are needed.
"""
import argparse
import json
import os
import sys

import numpy as np


def make_csr(rows, min_nnz, max_nnz, seed):
    rng = np.random.default_rng(seed)
    counts = rng.integers(min_nnz, max_nnz + 1, size=rows)
    row_ptr = np.zeros(rows + 1, dtype=np.int64)
    np.cumsum(counts, out=row_ptr[1:])
    nnz = int(row_ptr[-1])
    if nnz >= 2**31:
        sys.exit(f"nnz = {nnz} does not fit the kernel's int32 indices; use fewer rows")
    row_of = np.repeat(np.arange(rows, dtype=np.int64), counts)
    cols = rng.integers(0, rows, size=nnz)
    order = np.lexsort((cols, row_of))  # by row, then column
    col_idx = cols[order].astype(np.int32)
    values = rng.uniform(-1.0, 1.0, size=nnz).astype(np.float32)
    x = rng.uniform(-1.0, 1.0, size=rows).astype(np.float32)
    # The reference in float64 from exactly the float32 numbers the GPU sees.
    products = values.astype(np.float64) * x.astype(np.float64)[col_idx]
    y = np.bincount(row_of, weights=products, minlength=rows)
    return row_ptr.astype(np.int32), col_idx, values, x, y.astype(np.float32)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out_dir")
    p.add_argument("--rows", type=int, default=1 << 18)
    p.add_argument("--min-nnz", type=int, default=16)
    p.add_argument("--max-nnz", type=int, default=48)
    p.add_argument("--seed", type=int, default=2026)
    a = p.parse_args()
    if a.rows < 1 or a.min_nnz < 0 or a.max_nnz < a.min_nnz:
        p.error("need rows >= 1 and 0 <= min-nnz <= max-nnz")
    row_ptr, col_idx, values, x, y = make_csr(a.rows, a.min_nnz, a.max_nnz, a.seed)
    os.makedirs(a.out_dir, exist_ok=True)
    arrays = {"row_ptr": row_ptr, "col_idx": col_idx, "values": values, "x": x, "y_expected": y}
    for name, arr in arrays.items():
        np.save(os.path.join(a.out_dir, name + ".npy"), np.ascontiguousarray(arr))
    meta = {"rows": a.rows, "nnz": int(col_idx.size), "min_nnz": a.min_nnz, "max_nnz": a.max_nnz,
            "seed": a.seed, "bytes": {k: int(v.nbytes) for k, v in arrays.items()}}
    with open(os.path.join(a.out_dir, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    mib = sum(v.nbytes for k, v in arrays.items() if k != "y_expected") / 2**20
    print(f"CSR matrix: {a.rows} x {a.rows}, nnz {col_idx.size} ({col_idx.size / a.rows:.1f} per row), "
          f"inputs {mib:.1f} MiB, written to {a.out_dir}")


if __name__ == "__main__":
    main()

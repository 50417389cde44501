"""Where cuBLASLt beats evo, what cuBLASLt runs there (CPU only, from a sweep archive's recorded baselines).

For every shape of the given sweep archives: the best library over evo's best kernel, cuBLASLt's autotuned
algorithm as recorded (tile, split-K, cluster), converted to evo's frame (cuBLAS computes C^T = B^T A^T in
column-major order, so its tile's first side and its cluster's first dimension run along our N), and evo's
best kernel's tile, split and cluster. The lowest ratios first, then how often each cuBLASLt configuration
appears among the shapes below 0.92.

    python benchmarks/session29/library_gap.py SWEEP.sqlite [SWEEP.sqlite ...] [--rows 45]
"""
from __future__ import annotations

import argparse
import json
import re
import sqlite3
from collections import Counter

ALGO = re.compile(r"tile (\d+)x(\d+), split-K (\d+), cluster (\d+)x(\d+)x1")


def evo_config(family: str, p: dict) -> str:
    if family != "hopper":
        return family
    return (f"{p['BM']}x{p['BN']}{' transposed' if p['SWAP_AB'] else ''} split-K {p['SPLIT_K']}"
            f"{' (cluster)' if p['SPLIT_CLUSTER'] else ''}{' pair along M' if p['CLUSTER_M'] > 1 else ''}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sweeps", nargs="+")
    ap.add_argument("--rows", type=int, default=45)
    args = ap.parse_args()
    rows = []
    for path in args.sweeps:
        db = sqlite3.connect(path)
        for m, n, k, evo_ms, kid in db.execute("select M, N, K, min(time_ms), kernel_id from evaluations "
                                               "where status = 'ok' group by M, N, K"):
            lib_ms = db.execute("select min(time_ms) from baselines where status = 'ok' and M = ? and N = ? and K = ?",
                                (m, n, k)).fetchone()[0]
            detail = db.execute("select detail from baselines where status = 'ok' and M = ? and N = ? and K = ? "
                                "and library = 'cublaslt_autotuned'", (m, n, k)).fetchone()
            found = ALGO.search(detail[0] or "") if detail else None
            if not lib_ms or not found:
                continue
            along_n, along_m, split, cluster_n, cluster_m = map(int, found.groups())
            family, params = db.execute("select family, params_json from kernels where id = ?", (kid,)).fetchone()
            lib = f"{along_m}x{along_n} split-K {split}, cluster {cluster_m} along M x {cluster_n} along N"
            rows.append((lib_ms / evo_ms, f"{m}x{n}x{k}", lib, evo_config(family, json.loads(params))))
    rows.sort()
    print(f"{'lib/evo':>7}  {'shape':<16} {'cuBLASLt autotuned (our M x N tile)':<52} evo's best")
    for ratio, shape, lib, ours in rows[:args.rows]:
        print(f"{ratio:7.3f}  {shape:<16} {lib:<52} {ours}")
    low = Counter(lib for ratio, _, lib, _ in rows if ratio < 0.92)
    print(f"\n{len(rows)} shapes; cuBLASLt's configuration on the {sum(low.values())} below 0.92:")
    for lib, count in low.most_common():
        print(f"  {count:3d}  {lib}")


if __name__ == "__main__":
    main()

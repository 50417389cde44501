"""Summarise next_context.sh's `evo bench` runs (session20/NEXT.md item 2): per shape, each library's time
and the archive kernel's time in every run, and per condition (quiet, loaded) the geomean of each
column over the runs, so that a load that stretches libraries and not kernels (or both) shows.

    python benchmarks/session20/context.py quiet1=/tmp/c/quiet1.sqlite load1=/tmp/c/load1.sqlite ...
"""
from __future__ import annotations

import math
import sqlite3
import sys
from collections import defaultdict


def times(path: str) -> dict[tuple[str, str], float]:
    """(shape, column) -> us: the libraries' times and the kernels' (column "kernel")."""
    db = sqlite3.connect(path)
    out = {}
    for m, n, k, lib, ms in db.execute("select M, N, K, library, time_ms from baselines where status = 'ok'"):
        out[(f"{m}x{n}x{k}", lib)] = ms * 1e3
    for m, n, k, ms in db.execute("select M, N, K, min(time_ms) from evaluations where status = 'ok' "
                                  "group by M, N, K"):
        out[(f"{m}x{n}x{k}", "kernel")] = ms * 1e3
    return out


def main() -> None:
    runs = dict(arg.split("=", 1) for arg in sys.argv[1:])
    data = {name: times(path) for name, path in runs.items()}
    backends = {b for path in runs.values() for (b,) in sqlite3.connect(path).execute("select backend from runs")}
    if backends != {"gpu"}:
        print(f"SIMULATED or mixed backends {sorted(backends)}: modelled times, not measurements")
    shapes = sorted({s for d in data.values() for s, _ in d}, key=lambda s: [int(x) for x in s.split("x")])
    columns = ["torch", "cublaslt_heuristic", "cublaslt_autotuned", "kernel"]
    print(f"{'shape':<16} {'column':<20} " + " ".join(f"{name:>9}" for name in runs))
    for s in shapes:
        for c in columns:
            print(f"{s:<16} {c:<20} " + " ".join(f"{data[r].get((s, c), math.nan):>9.2f}" for r in runs))
    # loaded / quiet per column: geomean over shapes of (mean loaded time / mean quiet time)
    print("\nloaded / quiet, geomean over shapes (above 1: the load stretched it)")
    for c in columns:
        ratios = []
        for s in shapes:
            by = defaultdict(list)
            for r in runs:
                if (s, c) in data[r]:
                    by["load" if r.startswith("load") else "quiet"].append(data[r][(s, c)])
            if by["load"] and by["quiet"]:
                ratios.append((sum(by["load"]) / len(by["load"])) / (sum(by["quiet"]) / len(by["quiet"])))
        if ratios:
            g = math.exp(sum(map(math.log, ratios)) / len(ratios))
            print(f"  {c:<20} {g:.3f}  (min {min(ratios):.3f}, max {max(ratios):.3f}, {len(ratios)} shapes)")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Session 28: from sweep archives, each shape's best speedup over the best library, with and without the
ping-pong kernels (PINGPONG=1), all within one run; and the shapes a ping-pong kernel won, by how much.

    python3 benchmarks/session28/pingpong_within_run.py A.sqlite [B.sqlite ...]
"""
import json
import math
import sqlite3
import sys


def geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def main() -> None:
    for path in sys.argv[1:]:
        rows = sqlite3.connect(path).execute(
            "select e.M, e.N, e.K, e.speedup, k.params_json from evaluations e join kernels k on k.id = e.kernel_id "
            "where e.status = 'ok' and e.speedup is not null").fetchall()
        best: dict[tuple, float] = {}
        others: dict[tuple, float] = {}  # the best without ping-pong kernels
        pingpong: dict[tuple, int] = {}
        for m, n, k, speedup, params in rows:
            shape = (m, n, k)
            best[shape] = max(best.get(shape, 0.0), speedup)
            if json.loads(params).get("PINGPONG", 0) == 1:
                pingpong[shape] = pingpong.get(shape, 0) + 1
            else:
                others[shape] = max(others.get(shape, 0.0), speedup)
        gain = {s: best[s] / others[s] for s in best if s in others}
        won = sorted((s for s in gain if gain[s] > 1), key=lambda s: -gain[s])
        print(f"{path}: {len(best)} shapes, {sum(pingpong.values())} ping-pong evaluations on {len(pingpong)} "
              f"shapes; geomean best {geomean(list(best.values())):.4f}, without ping-pong "
              f"{geomean([others[s] for s in best]):.4f}")
        print("  shapes a ping-pong kernel won, best / best without:",
              ", ".join(f"{m}x{n}x{k} {gain[(m, n, k)]:.3f}" for m, n, k in won))


if __name__ == "__main__":
    main()

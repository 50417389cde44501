"""Session 23: what wins where evo loses. For grid125's shapes of one FLOP bucket (default 1-10 GFLOP), from
a re-timing bench's archive (`evo bench kernels_of=`: the sweep's winner and the three libraries timed in
one run): the ratio, evo's winner (family and its main genes) and the fastest library with the cuBLASLt
algorithm it ran (tile, split-K, cluster), sorted by ratio.

    python benchmarks/session23/losing_bucket.py BENCH.sqlite [LOW_GFLOP HIGH_GFLOP]
"""
import json
import math
import sqlite3
import sys

GENES = ("BM", "BN", "BK", "STAGES", "SPLIT_K", "CLUSTER_M", "CLUSTER_N", "PERSISTENT", "WARPS", "TMA_STORE")


def main() -> None:
    path = sys.argv[1]
    low, high = (float(sys.argv[2]), float(sys.argv[3])) if len(sys.argv) > 3 else (1.0, 10.0)
    db = sqlite3.connect(path)
    best = {}
    for m, n, k, t, kid in db.execute("select M, N, K, min(time_ms), kernel_id from evaluations "
                                      "where status = 'ok' group by M, N, K"):
        best[(m, n, k)] = (t, kid)
    rows = []
    for (m, n, k), (t, kid) in best.items():
        gflop = 2 * m * n * k / 1e9
        if not low <= gflop < high:
            continue
        libs = db.execute("select library, time_ms, detail from baselines where M = ? and N = ? and K = ? and "
                          "status = 'ok' order by time_ms limit 1", (m, n, k)).fetchone()
        family, params = db.execute("select family, params_json from kernels where id = ?", (kid,)).fetchone()
        genes = json.loads(params)
        ours = " ".join(f"{g}={genes[g]}" for g in GENES if g in genes)
        algo = (libs[2] or "").split("runs ")[-1] if libs[2] and "runs " in libs[2] else ""
        rows.append((libs[1] / t, f"{m}x{n}x{k}", t * 1e3, libs[1] * 1e3, libs[0], algo, family, ours))
    rows.sort()
    print(f"{len(rows)} shapes of {low:g}-{high:g} GFLOP, geomean "
          f"{math.exp(sum(math.log(r[0]) for r in rows) / len(rows)):.3f}")
    for ratio, shape, kus, lus, lib, algo, family, ours in rows:
        print(f"{shape:16s} {ratio:.3f}  evo {kus:7.2f} us ({family}: {ours})")
        print(f"{'':16s}        {lib} {lus:7.2f} us ({algo})")


if __name__ == "__main__":
    main()

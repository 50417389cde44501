"""Session 21: a set's sweep against an earlier session's, shape by shape: the best kernel time, the best
library time (and which library), and the ratio, so that a change in the ratio can be told apart into the
kernels' side and the libraries' side (the cuBLASLt "autotuned" baseline changed between the sessions).

    python benchmarks/session21/compare_sets.py OLD.sqlite NEW.sqlite [--worst 12]
"""
import argparse
import math
import sqlite3


def per_shape(path: str) -> dict:
    db = sqlite3.connect(path)
    kernel = {(m, n, k): t for m, n, k, t in db.execute(
        "select M, N, K, min(time_ms) from evaluations where status = 'ok' and not throttled group by M, N, K")}
    libs: dict = {}
    for m, n, k, lib, t in db.execute("select M, N, K, library, time_ms from baselines where status = 'ok'"):
        libs.setdefault((m, n, k), {})[lib] = t
    count = db.execute("select count(*) from evaluations").fetchone()[0]
    return {"kernel": kernel, "libs": libs, "evaluations": count}


def geomean(xs: list[float]) -> float:
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--worst", type=int, default=12)
    a = ap.parse_args()
    old, new = per_shape(a.old), per_shape(a.new)
    shapes = sorted(set(old["kernel"]) & set(new["kernel"]) & set(old["libs"]) & set(new["libs"]))
    print(f"evaluations: old {old['evaluations']}, new {new['evaluations']}; {len(shapes)} shapes in both")
    rows = []
    for s in shapes:
        ob, nb = min(old["libs"][s].values()), min(new["libs"][s].values())
        rows.append((s, old["kernel"][s], new["kernel"][s], ob, nb, ob / old["kernel"][s], nb / new["kernel"][s],
                     min(new["libs"][s], key=new["libs"][s].get)))
    print(f"new / old, geomean over shapes: best kernel time {geomean([r[2] / r[1] for r in rows]):.3f}, "
          f"best library time {geomean([r[4] / r[3] for r in rows]):.3f}; ratio (best library / best kernel) "
          f"old {geomean([r[5] for r in rows]):.3f}, new {geomean([r[6] for r in rows]):.3f}")
    for lib in ("torch", "cublaslt_heuristic", "cublaslt_autotuned"):
        both = [new["libs"][s][lib] / old["libs"][s][lib] for s in shapes
                if lib in new["libs"][s] and lib in old["libs"][s]]
        moved = sum(abs(x - 1) > 0.05 for x in both)
        print(f"  {lib:<20} new / old {geomean(both):.3f} (min {min(both):.3f}, max {max(both):.3f}; "
              f"{moved} of {len(both)} shapes moved more than 5%)")
    print(f"\nthe {a.worst} lowest new ratios (times in us):")
    print(f"{'shape':<18} {'kernel old':>10} {'new':>7} {'library old':>11} {'new':>7} {'ratio old':>9} {'new':>6}  best library")
    for s, ok, nk, ob, nb, ro, rn, lib in sorted(rows, key=lambda r: r[6])[:a.worst]:
        print(f"{'x'.join(map(str, s)):<18} {ok * 1e3:>10.2f} {nk * 1e3:>7.2f} {ob * 1e3:>11.2f} {nb * 1e3:>7.2f} "
              f"{ro:>9.3f} {rn:>6.3f}  {lib}")


if __name__ == "__main__":
    main()

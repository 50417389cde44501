"""Session 21: torch's time per shape in several archives (a sweep, benches), side by side: for each pair
of runs, how many shapes differ by more than 5%, the geomean and extremes of their ratio, and the shapes
that differ most. With `BACKEND=simulated` runs these are the test double's modelled times.

    python benchmarks/session21/context_compare.py NAME=ARCHIVE NAME=ARCHIVE ... [--library torch]
"""
import argparse
import itertools
import math
import sqlite3


def times(path: str, library: str) -> dict:
    db = sqlite3.connect(path)
    return {(m, n, k): t for m, n, k, t in db.execute(
        "select M, N, K, time_ms from baselines where library = ? and status = 'ok'", (library,))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+", help="NAME=ARCHIVE")
    ap.add_argument("--library", default="torch")
    ap.add_argument("--show", type=int, default=8)
    a = ap.parse_args()
    runs = {name: times(path, a.library) for name, path in (r.split("=", 1) for r in a.runs)}
    for (na, ta), (nb, tb) in itertools.combinations(runs.items(), 2):
        shapes = sorted(set(ta) & set(tb))
        if not shapes:
            print(f"{nb} / {na}: no shape in both")
            continue
        r = sorted((tb[s] / ta[s], s) for s in shapes)
        g = math.exp(sum(math.log(x) for x, _ in r) / len(r))
        far = [(round(x, 3), "x".join(map(str, s))) for x, s in r if abs(x - 1) > 0.05]
        print(f"{nb} / {na} ({a.library}, {len(shapes)} shapes): geomean {g:.3f}, min {r[0][0]:.3f}, "
              f"max {r[-1][0]:.3f}, {len(far)} shapes beyond 5%")
        print(f"   lowest {[(round(x, 3), 'x'.join(map(str, s))) for x, s in r[:a.show]]}")
        print(f"   highest {[(round(x, 3), 'x'.join(map(str, s))) for x, s in r[::-1][:a.show]]}")


if __name__ == "__main__":
    main()

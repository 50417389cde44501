"""Session 22: the libraries as a sweep reads them against clean benches, and what that does to the ratio.

After the health-check fix, two `evo bench` runs of torch and cuBLASLt (heuristic) over grid125 (shapes in
order, then reversed, two processes) agreed with each other within 1% on all but one shape, but read the
libraries faster than grid125's sweep of the same session on most small shapes. Printed:
  1. per library, bench / sweep and bench / bench: geomean, extremes, shapes beyond 2% and 5%;
  2. the sweep's ratio (its best library / its best kernel, per shape) beside the same ratio with each
     library at its bench time ("fast-mode libraries": the lower of the two benches; cuBLASLt autotuned,
     which the benches did not run, scaled by the heuristic's bench / sweep factor on that shape), per
     FLOP bucket, and the lowest shapes. The kernels keep their sweep times in both: whether they too ran
     in the slow mode there is not known, so the second ratio is a lower bound for this shortlist.

    python benchmarks/session22/sweep_vs_bench.py SWEEP.sqlite BENCH_A.sqlite BENCH_B.sqlite
"""
import collections
import math
import sqlite3
import sys


def libraries(path: str) -> dict:
    out: dict = {}
    for m, n, k, lib, t in sqlite3.connect(path).execute(
            "select M, N, K, library, time_ms from baselines where status = 'ok' and mode = 'rotating'"):
        out.setdefault((m, n, k), {})[lib] = t
    return out


def best_kernels(path: str) -> dict:
    return {(m, n, k): t for m, n, k, t in sqlite3.connect(path).execute(
        "select M, N, K, min(time_ms) from evaluations where status = 'ok' and not throttled group by M, N, K")}


def geomean(xs) -> float:
    xs = list(xs)
    return math.exp(sum(map(math.log, xs)) / len(xs))


def name(s) -> str:
    return "x".join(map(str, s))


def bucket(s) -> str:
    f = 2 * s[0] * s[1] * s[2]
    return ("<1 GFLOP" if f < 1e9 else "1-10 GFLOP" if f < 1e10 else "10-100 GFLOP" if f < 1e11 else
            "0.1-1 TFLOP" if f < 1e12 else ">=1 TFLOP")


def compare(a: dict, b: dict, lib: str, label: str) -> None:
    r = sorted((b[s][lib] / a[s][lib], s) for s in a if s in b and lib in a[s] and lib in b[s])
    beyond = [(round(x, 3), name(s)) for x, s in r if abs(x - 1) > 0.05]
    print(f"{lib:<20} {label}: {len(r)} shapes, geomean {geomean(x for x, _ in r):.4f}, min {r[0][0]:.3f} "
          f"({name(r[0][1])}), max {r[-1][0]:.3f} ({name(r[-1][1])}); beyond 2%: "
          f"{sum(abs(x - 1) > 0.02 for x, _ in r)}, beyond 5%: {len(beyond)}")


def main() -> None:
    sweep_path, a_path, b_path = sys.argv[1:4]
    sweep, a, b = libraries(sweep_path), libraries(a_path), libraries(b_path)
    kernels = best_kernels(sweep_path)
    print("1. library times, one run against another")
    for lib in ("torch", "cublaslt_heuristic"):
        compare(sweep, a, lib, "bench A / sweep")
        compare(sweep, b, lib, "bench B / sweep")
        compare(a, b, lib, "bench B / bench A")
    rows, measured, scaled = [], [], 0
    for s, kernel in kernels.items():
        libs = sweep[s]
        fast = {lib: min(a[s][lib], b[s][lib]) for lib in ("torch", "cublaslt_heuristic")}
        measured.append(min(fast.values()) / kernel)  # the two libraries the benches ran, nothing scaled
        if "cublaslt_autotuned" in libs:
            factor = fast["cublaslt_heuristic"] / libs["cublaslt_heuristic"]
            fast["cublaslt_autotuned"] = libs["cublaslt_autotuned"] * factor
            scaled += min(fast, key=fast.get) == "cublaslt_autotuned"
        rows.append((min(fast.values()) / kernel, min(libs.values()) / kernel, s, kernel, min(fast.values())))
    print(f"\n2. best library / best kernel over {len(rows)} shapes: the sweep's {geomean(r[1] for r in rows):.3f}, "
          f"with fast-mode libraries {geomean(r[0] for r in rows):.3f} (the autotuned one scaled, and the fastest, "
          f"on {scaled} shapes); with torch and the heuristic alone, as the benches measured them, "
          f"{geomean(measured):.3f}")
    by = collections.defaultdict(list)
    for r, m in zip(rows, measured):
        by[bucket(r[2])].append((*r, m))
    for label in ("<1 GFLOP", "1-10 GFLOP", "10-100 GFLOP", "0.1-1 TFLOP", ">=1 TFLOP"):
        v = by[label]
        print(f"   {label:<13} {len(v):3d} shapes: sweep {geomean(r[1] for r in v):.3f}, "
              f"fast-mode libraries {geomean(r[0] for r in v):.3f}, torch and heuristic alone "
              f"{geomean(r[5] for r in v):.3f}")
    print(f"   shapes below 0.85: sweep {sum(r[1] < 0.85 for r in rows)}, fast-mode libraries {sum(r[0] < 0.85 for r in rows)}; "
          f"below 0.95: {sum(r[1] < 0.95 for r in rows)}, {sum(r[0] < 0.95 for r in rows)}")
    print("   lowest with fast-mode libraries (times in us):")
    for fast_ratio, sweep_ratio, s, kernel, lib in sorted(rows)[:12]:
        print(f"   {name(s):<18} {fast_ratio:.3f} (sweep {sweep_ratio:.3f})  kernel {kernel * 1e3:8.2f}  "
              f"library {lib * 1e3:8.2f}")


if __name__ == "__main__":
    main()

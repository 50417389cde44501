"""Where a sweep and `evo bench kernels_of=` disagree, by operand size (session 23 saw it on the H200).

A sweep's per-shape best kernel is the fastest of up to 24 picks, each timed in a worker that also compiles
beside it; `evo bench kernels_of=SWEEP` times each of those winners again, once, beside the libraries. A
best of 24 draws should read a little faster than one fresh draw, never slower. Per bucket of operand bytes
(2 (MK + KN + MN)): the kernels' bench / sweep time, the per-shape difference in microseconds, and the
libraries' bench / sweep (best library each); then, for the bucket where the kernels disagree most, each
shape's ratio to the best library both ways and where in the sweep its winner was evaluated (evaluation id:
a sweep goes round the shapes pick by pick, so a low id is early in the worker's life).

    python sweep_vs_bench.py SWEEP.sqlite BENCH.sqlite
"""
import argparse
import math
import sqlite3

BUCKETS = [(0, 72 << 10), (72 << 10, 1033 << 10), (1033 << 10, 8 << 20), (8 << 20, 64 << 20), (64 << 20, 1 << 62)]


def bests(path: str) -> tuple[dict, dict, dict]:
    """Per shape: best kernel time (ms), best library time (ms), (evaluation id, kernel id) of the best kernel."""
    db = sqlite3.connect(path)
    kernel, where = {}, {}
    for i, m, n, k, kid, t in db.execute("select id, M, N, K, kernel_id, time_ms from evaluations where status = 'ok'"):
        if (m, n, k) not in kernel or t < kernel[(m, n, k)]:
            kernel[(m, n, k)], where[(m, n, k)] = t, (i, kid)
    library = {(m, n, k): t for m, n, k, t in db.execute(
        "select M, N, K, min(time_ms) from baselines where status = 'ok' group by M, N, K")}
    return kernel, library, where


def geomean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sweep")
    ap.add_argument("bench")
    a = ap.parse_args()
    ks, ls, where = bests(a.sweep)
    kb, lb, bench_where = bests(a.bench)
    shapes = [s for s in ks if s in kb and s in ls and s in lb]
    size = {s: 2 * (s[0] * s[2] + s[2] * s[1] + s[0] * s[1]) for s in shapes}
    print(f"{len(shapes)} shapes in both; times are each side's best (ms -> us)")
    print("operand bytes (KiB)   shapes   kernel bench/sweep   kernel bench-sweep us: median [min..max]   "
          "library bench/sweep   same kernel")
    worst, worst_g = None, 2.0
    for lo, hi in BUCKETS:
        group = [s for s in shapes if lo <= size[s] < hi]
        if not group:
            continue
        g = geomean([kb[s] / ks[s] for s in group])
        d = sorted((kb[s] - ks[s]) * 1e3 for s in group)
        same = sum(where[s][1] == bench_where[s][1] for s in group)
        print(f"{lo >> 10:>9}-{min(hi >> 10, 10**9):<10}  {len(group):6d}   {g:18.3f}   {d[len(d) // 2]:+8.3f} "
              f"[{d[0]:+.2f}..{d[-1]:+.2f}]{'':17s} {geomean([lb[s] / ls[s] for s in group]):.3f}   {same}/{len(group)}")
        if g < worst_g:
            worst, worst_g = group, g
    print("\nthe bucket where the kernels disagree most, by the sweep's ratio to the best library:")
    print("shape              sweep ratio   bench ratio   kernel sweep/bench us   library sweep/bench us   winner's eval id")
    for s in sorted(worst or [], key=lambda s: ls[s] / ks[s]):
        print(f"{'x'.join(map(str, s)):18s} {ls[s] / ks[s]:11.3f}   {lb[s] / kb[s]:11.3f}   "
              f"{ks[s] * 1e3:9.2f} / {kb[s] * 1e3:<9.2f}   {ls[s] * 1e3:9.2f} / {lb[s] * 1e3:<9.2f}     {where[s][0]}")
    if worst:
        print(f"geomean over the bucket: sweep {geomean([ls[s] / ks[s] for s in worst]):.3f}, "
              f"bench {geomean([lb[s] / kb[s] for s in worst]):.3f}")
    print(f"geomean over all {len(shapes)}: sweep {geomean([ls[s] / ks[s] for s in shapes]):.3f}, "
          f"bench {geomean([lb[s] / kb[s] for s in shapes]):.3f}")


if __name__ == "__main__":
    main()

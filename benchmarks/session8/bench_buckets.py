"""Per FLOP bucket: the geomean of `vs_best` (best library time / the archive winner's time), the
geomean roofline fraction of the winners and of the best library, and the mean SM clock, read from the
table that `evo bench kernels_of=...` prints: `python3 bench_buckets.py LOG`. stdlib only."""
import math
import sys

BUCKETS = [("<1 GFLOP", 0, 1), ("1-10 GFLOP", 1, 10), ("10-100 GFLOP", 10, 100), ("0.1-1 TFLOP", 100, 1000),
           (">=1 TFLOP", 1000, math.inf)]


def geomean(xs):
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


rows = []
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) == 20 and f[3] == "rotating":  # M N K mode GFLOP floor MHz, 3 libraries x 3, the winner x 4
        gflop, mhz, vs = float(f[4]), float(f[6]), float(f[19])
        floor, best_lib = float(f[5]), min(float(f[i]) for i in (7, 10, 13))  # microseconds
        rows.append((gflop, mhz, vs, floor / float(f[16]), floor / best_lib))
print(f"{'bucket':14} {'shapes':>6} {'vs best lib':>11} {'winner roof':>11} {'lib roof':>8} {'MHz':>5}")
for name, lo, hi in BUCKETS + [("all", 0, math.inf)]:
    sel = [r for r in rows if lo <= r[0] < hi]
    if sel:
        print(f"{name:14} {len(sel):>6} {geomean([r[2] for r in sel]):>11.3f} {geomean([r[3] for r in sel]):>11.3f} "
              f"{geomean([r[4] for r in sel]):>8.3f} {sum(r[1] for r in sel) / len(sel):>5.0f}")

"""Per-shape best speedup over the best library (both timed in the same run) of two sweep archives,
side by side, and what the new archive's winner is: `python3 compare_sweeps.py OLD.sqlite NEW.sqlite`.
Shapes measured in only one archive are listed apart. Throttled evaluations are left out, as the
archive's own cells do. stdlib only."""
import json
import math
import sqlite3
import sys


def bests(path):
    db = sqlite3.connect(path)
    rows = db.execute(
        "select e.M, e.N, e.K, e.speedup, e.time_ms, e.best_library_ms, k.family, k.params_json from evaluations e "
        "join kernels k on k.id = e.kernel_id where e.status = 'ok' and not coalesce(e.throttled, 0) "
        "and e.speedup is not null").fetchall()
    out = {}
    for M, N, K, speedup, ms, lib, family, params in rows:
        if (M, N, K) not in out or speedup > out[(M, N, K)][0]:
            out[(M, N, K)] = (speedup, ms, lib, family, json.loads(params or "{}"))
    return out


def describe(family, p):
    if family != "hopper":
        return family
    text = f"{p['BM']}x{p['BN']}/{p['CONSUMERS']} st{p['STAGES']}"
    if p.get("SPLIT_K", 1) > 1:
        text += f" split{p['SPLIT_K']}{' cluster' if p['SPLIT_CLUSTER'] else ''}"
    if p.get("TAIL_SPLIT", 1) > 1:
        text += f" tail{p['TAIL_SPLIT']}"
    if p.get("CTAS_PER_SM", 1) > 1:
        text += " 2cta"
    if p.get("SWAP_AB", 0):
        text += " swap"
    return text


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def main(old_path, new_path):
    old, new = bests(old_path), bests(new_path)
    both = sorted(set(old) & set(new), key=lambda s: s[0] * s[1] * s[2])
    print(f"{'shape':>18} {'old x lib':>9} {'new x lib':>9} {'new/old':>8}  new winner")
    for s in both:
        o, n = old[s][0], new[s][0]
        print(f"{'x'.join(map(str, s)):>18} {o:9.3f} {n:9.3f} {n / o:8.3f}  {describe(n and new[s][3], new[s][4])}")
    print(f"\n{len(both)} shapes in both: geomean x lib old {geomean([old[s][0] for s in both]):.3f}, "
          f"new {geomean([new[s][0] for s in both]):.3f}; new/old {geomean([new[s][0] / old[s][0] for s in both]):.3f}")
    for name, pick in (("tail split", lambda p: p.get("TAIL_SPLIT", 1) > 1),
                       ("64x192", lambda p: (p.get("BM"), p.get("BN")) == (64, 192)),
                       ("cluster split", lambda p: p.get("SPLIT_CLUSTER") == 1)):
        won = [s for s in both if new[s][3] == "hopper" and pick(new[s][4])]
        print(f"new winners with {name}: {len(won)}"
              + (f", new/old on those {geomean([new[s][0] / old[s][0] for s in won]):.3f}" if won else ""))
    try:  # per FLOP bucket, where evo is installed
        from evo.core.shapes import Shape
        from evo.core.summary import BUCKETS
        for label, _, _ in BUCKETS:
            inside = [s for s in both if Shape(*s).bucket == label]
            if inside:
                print(f"  {label:>13}: {len(inside):3} shapes, x lib old {geomean([old[s][0] for s in inside]):.3f} "
                      f"new {geomean([new[s][0] for s in inside]):.3f}, min new {min(new[s][0] for s in inside):.3f}")
    except ImportError:
        pass
    below = [s for s in both if new[s][0] < 0.85]
    print(f"new below 0.85: {len(below)}: " + ", ".join(f"{'x'.join(map(str, s))} {new[s][0]:.3f}" for s in below))
    only = sorted(set(old) ^ set(new))
    if only:
        print(f"{len(only)} shapes in one archive only (not compared)")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

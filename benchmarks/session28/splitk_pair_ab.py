"""Split-K over L2 in 2-CTA multicast pairs (hopper CLUSTER_M=2 with SPLIT_K > 1, allowed since session 28)
against the same kernels unpaired. The aim: session 28's worst grid125 shape, 256x256x16384 (0.78 of
cuBLASLt on an H100), where cuBLASLt runs 64x64 tiles with split-K 8 in 2x1 clusters and evo's best was the
same tiles and split without a cluster. A pair shares each B tile between two M tiles, which halves B's
traffic out of L2.

Shapes: those of the given sweep archives on which a hopper split-K pick over L2 (not transposed, not
paired) was timed, lowest ratio to the best library first. Kernels per shape: the sweep's winner; the
shape's PER_SHAPE fastest such split-K picks; each of them as a multicast pair (the same genes otherwise).
Every kernel and the libraries are timed in one evaluator run (3 replays of 10 ms, 2 correctness draws, no
racing). Prints per shape the winner, the best unpaired pick, the best paired one and the library, then
the pairs (unpaired time / paired time: above 1, the pair is faster) by k-steps a split and work items
an SM. Writes rows.json and pairs.json.

    python benchmarks/session28/splitk_pair_ab.py SWEEP.sqlite [SWEEP.sqlite ...] --out /tmp/skpair --budget-s 240
"""
from __future__ import annotations

import json
import sqlite3
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "session14"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "session24"))
from deep_ab import harness_args, times_side_by_side  # noqa: E402
from pingpong_ab import sweep_shapes  # noqa: E402

from evo.core.summary import geomean  # noqa: E402
from evo.families import FAMILIES  # noqa: E402

HOPPER = FAMILIES["hopper"]
NUM_SMS = 132


def split_picks(path: str, shape, per_shape: int) -> list[dict]:
    """The shape's `per_shape` fastest hopper split-K picks over L2 of the sweep, unpaired and plain."""
    db = sqlite3.connect(path)
    found = []
    for params_json, _ in db.execute(
            "select k.params_json, min(e.time_ms) t from evaluations e join kernels k on k.id = e.kernel_id "
            "where e.status = 'ok' and k.family = 'hopper' and e.M = ? and e.N = ? and e.K = ? "
            "group by k.id order by t", (shape.M, shape.N, shape.K)):
        p = json.loads(params_json)
        if p["SPLIT_K"] > 1 and not p["SPLIT_CLUSTER"] and not p["SWAP_AB"] and p["CLUSTER_M"] == 1:
            found.append(p)
    return found[:per_shape]


def main() -> None:
    ap = harness_args(__doc__, "/tmp/skpair")
    ap.add_argument("sweeps", nargs="+")
    ap.add_argument("--per-shape", type=int, default=2)
    ap.add_argument("--max-shapes", type=int, default=0, help="only the first N shapes, lowest ratio first (0: all)")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for path in args.sweeps:
        for ratio, shape, family, winner in sweep_shapes(path):
            picks = split_picks(path, shape, args.per_shape)
            if picks:
                rows.append((ratio, shape, family, winner, picks))
    rows.sort(key=lambda r: r[0])
    rows = rows[:args.max_shapes or None]
    jobs, roles, pair_of, info = [], defaultdict(set), {}, {}
    for _, shape, family, winner, picks in rows:
        w = FAMILIES[family].candidate(winner)
        jobs.append((w, shape))
        roles[(w.id, shape)].add("winner")
        for p in picks:
            twin = dict(p, CLUSTER_M=2)
            if HOPPER.problem(twin):
                print(f"  {shape}: no pair for {p} ({HOPPER.problem(twin)})")
                continue
            c, paired = HOPPER.candidate(p), HOPPER.candidate(twin)
            jobs += [(c, shape), (paired, shape)]
            roles[(c.id, shape)].add("pick")
            roles[(paired.id, shape)].add("paired")
            pair_of[(paired.id, shape)] = c.id
            info[paired.id] = p
    seen, unique = set(), []
    for c, s in jobs:
        if (c.id, s) not in seen and c.declaration.supports(s, num_sms=NUM_SMS):
            seen.add((c.id, s))
            unique.append((c, s))
    print(f"{len(rows)} shapes, {len(unique)} evaluations", flush=True)
    times, lib = times_side_by_side(unique, out / "skpair.sqlite", "splitk_pair_ab.py", args)
    table, pairs = [], []
    print(f"{'shape':<18} {'winner':>8} {'pick':>8} {'paired':>8} {'library':>8} (us)  winner/paired")
    for ratio, shape, _, _, _ in rows:
        mine = {kid: t for (kid, s), t in times.items() if s == shape and t}
        best = {r: min((t for kid, t in mine.items() if r in roles[(kid, shape)]), default=None)
                for r in ("winner", "pick", "paired")}
        if not best["winner"]:
            continue
        us = {r: f"{t * 1e3:.2f}" if t else "-" for r, t in best.items()}
        gain = f"{best['winner'] / best['paired']:.3f}" if best["paired"] else "-"
        print(f"{str(shape):<18} {us['winner']:>8} {us['pick']:>8} {us['paired']:>8} "
              f"{(lib.get(shape) or 0) * 1e3:8.2f}       {gain}")
        table.append({"shape": str(shape), "sweep_ratio": ratio, "library_ms": lib.get(shape),
                      **{f"{r}_ms": t for r, t in best.items()}})
        for kid, t in mine.items():
            single = pair_of.get((kid, shape))
            if single and mine.get(single):
                p = info[kid]
                tiles = -(-shape.M // p["BM"]) * -(-shape.N // p["BN"])
                pairs.append({"shape": str(shape), "params": p, "ratio": mine[single] / t,
                              "k_steps_a_split": -(-shape.K // 64) // p["SPLIT_K"],
                              "items_an_sm": tiles * p["SPLIT_K"] / NUM_SMS})
    (out / "rows.json").write_text(json.dumps(table, indent=1))
    (out / "pairs.json").write_text(json.dumps(pairs, indent=1))
    with_lib = [r for r in table if r["library_ms"]]
    if with_lib:
        fastest = [min(t for k in ("winner_ms", "pick_ms", "paired_ms") if (t := r[k])) for r in with_lib]
        print(f"\nvs the best library, {len(with_lib)} shapes: winner "
              f"{geomean([r['library_ms'] / r['winner_ms'] for r in with_lib]):.3f}, best of all "
              f"{geomean([r['library_ms'] / t for r, t in zip(with_lib, fastest)]):.3f}")
    groups = defaultdict(list)
    for q in pairs:
        groups[("<= 16" if q["k_steps_a_split"] <= 16 else "> 16",
                "<= 1" if q["items_an_sm"] <= 1 else "> 1")].append(q["ratio"])
    print("\npairs (unpaired time / paired time; above 1: the pair is faster)")
    print(f"{'k-steps a split':<16} {'items an SM':<12} {'pairs':>5} {'geomean':>8} {'min':>6} {'max':>6}")
    for (ks, per_sm), rs in sorted(groups.items()):
        print(f"{ks:<16} {per_sm:<12} {len(rs):>5} {geomean(rs):8.3f} {min(rs):6.3f} {max(rs):6.3f}")


if __name__ == "__main__":
    main()

"""Ping-pong consumers in 2-CTA multicast pairs (hopper PINGPONG=1 with CLUSTER_M=2, new in session 26)
against the same kernels unpaired, and against cuBLASLt, which runs 128x128 tiles in 2-CTA clusters on the
K = 256 shapes where it still beats evo (session 25: 4096x1024x256, 6.12 us against 6.88).

Shapes: those of the given sweep archives with at least 1 GFLOP, more 128x128 tiles than SMs and at most
MAX_K_STEPS k-steps (K <= 64 * that), lowest ratio to the best library first. Kernels per shape: the sweep's
winner; the shape's ping-pong picks on today's hopper shortlist (`_pingpong_beside`) or, where it has
none, the first 128x128 pick as ping-pong; each of those ping-pong kernels as a multicast pair; the source
128x128 pick as a multicast pair without ping-pong. Every kernel and the libraries are timed in one
evaluator run (3 replays of 10 ms, 2 correctness draws, no racing). Prints per shape the winner, the best
unpaired ping-pong kernel, the best paired one and the library, then the pairs (paired / unpaired, the
same kernel otherwise) by loop length and tiles an SM. Writes rows.json and pairs.json.

    python benchmarks/session26/pair_ab.py SWEEP.sqlite [SWEEP.sqlite ...] --out /tmp/pair --budget-s 300
"""
from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "session14"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "session24"))
from deep_ab import harness_args, times_side_by_side  # noqa: E402
from pingpong_ab import sweep_shapes  # noqa: E402

from evo.core.summary import geomean  # noqa: E402
from evo.families import FAMILIES  # noqa: E402
from evo.families.hopper import deepest_fitting  # noqa: E402

HOPPER = FAMILIES["hopper"]
NUM_SMS = 132


def pingpong_kernels(shape) -> tuple[list[dict], dict | None]:
    """The shape's ping-pong picks on the shortlist (or the first 128x128 pick made ping-pong), and the
    128x128 pick they come from."""
    picks = HOPPER.suggest(shape.M, shape.N, shape.K, NUM_SMS, limit=24)
    source = next((p for p in picks if (p["BM"], p["BN"]) == (128, 128) and not p["PINGPONG"]
                   and p["SPLIT_K"] == 1 and p["TAIL_SPLIT"] == 1 and not p["STREAM_K"] and not p["SWAP_AB"]), None)
    pps = [p for p in picks if p["PINGPONG"]]
    if not pps and source is not None:
        made = deepest_fitting(dict(source, PINGPONG=1, CONSUMERS=2, CTAS_PER_SM=1, PERSISTENT=1), 8)
        pps = [made] if made else []
    return pps, source


def main() -> None:
    ap = harness_args(__doc__, "/tmp/pair")
    ap.add_argument("sweeps", nargs="+")
    ap.add_argument("--min-gflop", type=float, default=1.0)
    ap.add_argument("--max-k-steps", type=int, default=32)
    ap.add_argument("--max-shapes", type=int, default=0, help="only the first N shapes, lowest ratio first (0: all)")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = sorted((r for path in args.sweeps for r in sweep_shapes(path)
                   if 2 * r[1].M * r[1].N * r[1].K / 1e9 >= args.min_gflop and -(-r[1].K // 64) <= args.max_k_steps
                   and -(-r[1].M // 128) * -(-r[1].N // 128) > NUM_SMS),
                  key=lambda r: r[0])[:args.max_shapes or None]
    jobs, roles, pair_of = [], defaultdict(set), {}  # roles[(id, shape)]: winner / pp / paired pp / paired pick
    for _, shape, family, winner in rows:
        w = FAMILIES[family].candidate(winner)
        jobs.append((w, shape))
        roles[(w.id, shape)].add("winner")
        pps, source = pingpong_kernels(shape)
        for p in pps:
            c, paired = HOPPER.candidate(p), HOPPER.candidate(dict(p, CLUSTER_M=2))
            jobs += [(c, shape), (paired, shape)]
            roles[(c.id, shape)].add("pp")
            roles[(paired.id, shape)].add("paired pp")
            pair_of[(paired.id, shape)] = c.id
        if source is not None:
            c, paired = HOPPER.candidate(source), HOPPER.candidate(dict(source, CLUSTER_M=2))
            jobs += [(c, shape), (paired, shape)]
            roles[(c.id, shape)].add("pick")
            roles[(paired.id, shape)].add("paired pick")
            pair_of[(paired.id, shape)] = c.id
    seen, unique = set(), []
    for c, s in jobs:
        if (c.id, s) not in seen and c.declaration.supports(s, num_sms=NUM_SMS):
            seen.add((c.id, s))
            unique.append((c, s))
    print(f"{len(rows)} shapes, {len(unique)} evaluations", flush=True)
    params = {c.id: c.params for c, _ in unique}
    times, lib = times_side_by_side(unique, out / "pair.sqlite", "pair_ab.py", args)
    table, pairs = [], []
    print(f"{'shape':<18} {'winner':>8} {'pp':>8} {'paired pp':>9} {'library':>8} (us)  paired pp/winner")
    for ratio, shape, _, _ in rows:
        mine = {kid: t for (kid, s), t in times.items() if s == shape and t}
        best = {r: min((t for kid, t in mine.items() if r in roles[(kid, shape)]), default=None)
                for r in ("winner", "pp", "paired pp", "pick", "paired pick")}
        if not best["winner"]:
            continue
        us = {r: f"{t * 1e3:.2f}" if t else "-" for r, t in best.items()}
        gain = f"{best['winner'] / best['paired pp']:.3f}" if best["paired pp"] else "-"
        print(f"{str(shape):<18} {us['winner']:>8} {us['pp']:>8} {us['paired pp']:>9} "
              f"{(lib.get(shape) or 0) * 1e3:8.2f}       {gain}")
        table.append({"shape": str(shape), "sweep_ratio": ratio, "library_ms": lib.get(shape),
                      **{f"{r}_ms": t for r, t in best.items()}})
        for kid, t in mine.items():
            single = pair_of.get((kid, shape))
            if single and mine.get(single):
                kind = "paired pp" if "paired pp" in roles[(kid, shape)] else "paired pick"
                pairs.append({"shape": str(shape), "kind": kind, "params": params[kid], "ratio": mine[single] / t,
                              "k_steps": -(-shape.K // 64), "tiles": -(-shape.M // 128) * -(-shape.N // 128)})
    (out / "rows.json").write_text(json.dumps(table, indent=1))
    (out / "pairs.json").write_text(json.dumps(pairs, indent=1))
    with_lib = [r for r in table if r["library_ms"]]
    if with_lib:
        kernels = ("winner_ms", "pp_ms", "paired pp_ms", "pick_ms", "paired pick_ms")
        print(f"\nvs the best library, {len(with_lib)} shapes: winner "
              f"{geomean([r['library_ms'] / r['winner_ms'] for r in with_lib]):.3f}, best of all "
              f"{geomean([r['library_ms'] / min(r[k] for k in kernels if r[k]) for r in with_lib]):.3f}")
    groups = defaultdict(list)
    for r in pairs:
        k = r["k_steps"]
        loop = "<= 4" if k <= 4 else "<= 16" if k <= 16 else "> 16"
        per_sm = r["tiles"] / NUM_SMS
        groups[(r["kind"], f"k-steps {loop}", "tiles/SM <= 8" if per_sm <= 8 else "tiles/SM > 8")].append(r["ratio"])
    print(f"\n{'pair (unpaired / paired), loop, tiles an SM':<48} {'pairs':>5} {'geomean':>8} {'min':>6} {'max':>6}")
    for key in sorted(groups):
        v = groups[key]
        print(f"{', '.join(key):<48} {len(v):>5} {geomean(v):>8.3f} {min(v):>6.3f} {max(v):>6.3f}")


if __name__ == "__main__":
    main()

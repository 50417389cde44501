"""Ping-pong consumers (hopper's PINGPONG gene, new in session 24) against the sweep's winners (issue 13).

For the shapes of the given sweep archives with at least 1 GFLOP and more 128x128 tiles than SMs (where a CTA
gets two tiles or more, so that one consumer's epilogue can run beside the other's wgmmas), lowest ratio to
the best library first: the shape's sweep winner, the shape's first hopper shortlist picks that split nothing,
and each of those picks as ping-pong consumers (PINGPONG=1; the pick's own epilogue and with two TMA staging
tiles), each at the deepest pipeline up to 8 stages that fits. A tile that no consumer
can own whole (more than 128 accumulators a thread: 128x256, 256x128, 128x192) is offered as 128x128. Every
kernel and the libraries are timed in one evaluator run (3 replays of 10 ms, 2 correctness draws, no racing).
Prints per shape the winner, the best base pick and the best ping-pong kernel, then the ping-pong kernels
against the pick each came from, by variant, and by loop length, tile and tiles an SM (the table a shortlist
rule would come from). Writes rows.json (per shape) and pairs.json (per pair).

    python benchmarks/session24/pingpong_ab.py SWEEP.sqlite [SWEEP.sqlite ...] --out /tmp/pp --budget-s 400
"""
from __future__ import annotations

import json
import sqlite3
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "session14"))
from deep_ab import harness_args, times_side_by_side  # noqa: E402

from evo.core.shapes import Shape  # noqa: E402
from evo.core.summary import geomean  # noqa: E402
from evo.families import FAMILIES  # noqa: E402
from evo.families.hopper import deepest_fitting  # noqa: E402

HOPPER = FAMILIES["hopper"]
NUM_SMS = 132
PICKS = 3  # shortlist picks a shape that split nothing, each paired with its ping-pong variants


def splits_nothing(p: dict) -> bool:
    return p["SPLIT_K"] == 1 and p["TAIL_SPLIT"] == 1 and not p["STREAM_K"] and not p["SWAP_AB"] and p["CLUSTER_M"] == 1


def variants(p: dict) -> list[tuple[str, dict]]:
    """p as ping-pong consumers: (label, params) for each epilogue (p's own, two TMA staging tiles) that makes
    a valid kernel."""
    out = []
    tile = dict(BM=p["BM"], BN=p["BN"]) if p["BM"] * p["BN"] <= 128 * 128 else dict(BM=128, BN=128)
    for store in sorted({p["TMA_STORE"], 2}):
        q = dict(p, **tile, PINGPONG=1, CONSUMERS=2, CTAS_PER_SM=1, PERSISTENT=1, TMA_STORE=store)
        q = deepest_fitting(q, 8)
        if q is not None:
            out.append((f"pp tma{store}", q))
    return out


def sweep_shapes(path: str) -> list[tuple[float, Shape, str, dict]]:
    """(ratio to the best library, shape, winner's family, winner's params) of every shape the sweep timed."""
    db = sqlite3.connect(path)
    out = []
    for m, n, k, t, kid in db.execute("select M, N, K, min(time_ms), kernel_id from evaluations "
                                      "where status = 'ok' group by M, N, K"):
        lib = db.execute("select min(time_ms) from baselines where M = ? and N = ? and K = ? and status = 'ok'",
                         (m, n, k)).fetchone()[0]
        family, params = db.execute("select family, params_json from kernels where id = ?", (kid,)).fetchone()
        out.append((lib / t if lib else 0.0, Shape(m, n, k), family, json.loads(params)))
    return out


def main() -> None:
    ap = harness_args(__doc__, "/tmp/pp")
    ap.add_argument("sweeps", nargs="+")
    ap.add_argument("--min-gflop", type=float, default=1.0)
    ap.add_argument("--max-shapes", type=int, default=0, help="only the first N shapes, lowest ratio first (0: all)")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = sorted((r for path in args.sweeps for r in sweep_shapes(path)
                   if 2 * r[1].M * r[1].N * r[1].K / 1e9 >= args.min_gflop
                   and -(-r[1].M // 128) * -(-r[1].N // 128) > NUM_SMS),
                  key=lambda r: r[0])[:args.max_shapes or None]  # by ratio alone: rows hold params dicts
    jobs, meta = [], defaultdict(list)  # meta[(kernel id, shape)]: (role, label, source pick's id)
    for _, shape, family, winner in rows:
        fam = FAMILIES[family]
        w = fam.candidate(winner)
        jobs.append((w, shape))
        meta[(w.id, shape)].append(("winner", family, w.id))
        picks = [p for p in HOPPER.suggest(shape.M, shape.N, shape.K, limit=24) if splits_nothing(p)][:PICKS]
        if family == "hopper" and splits_nothing(HOPPER.complete(winner)) and HOPPER.complete(winner) not in picks:
            picks.insert(0, HOPPER.complete(winner))
        for p in picks:
            base = HOPPER.candidate(p)
            if base.id != w.id:
                jobs.append((base, shape))
            meta[(base.id, shape)].append(("base", "pick", base.id))
            for label, q in variants(p):
                c = HOPPER.candidate(q)
                if c.declaration.supports(shape):
                    jobs.append((c, shape))
                    meta[(c.id, shape)].append(("pingpong", label, base.id))
    seen, unique = set(), []
    for c, s in jobs:  # one evaluation per (kernel, shape)
        if (c.id, s) not in seen:
            seen.add((c.id, s))
            unique.append((c, s))
    print(f"{len(rows)} shapes, {len(unique)} evaluations", flush=True)
    times, lib = times_side_by_side(unique, out / "pingpong.sqlite", "pingpong_ab.py", args)
    params = {c.id: c.params for c, _ in unique}
    table, pairs, pair_rows = [], defaultdict(list), []
    print(f"{'shape':<18} {'winner':>8} {'best base':>9} {'best pp':>8} {'library':>8}  pp/winner  best ping-pong kernel")
    for ratio, shape, _, _ in rows:
        mine = {key[0]: t for key, t in times.items() if key[1] == shape and t}
        roles = {r: [kid for kid in mine if any(role == r for role, *_ in meta[(kid, shape)])]
                 for r in ("winner", "base", "pingpong")}
        if not roles["winner"] or not roles["pingpong"]:
            continue
        win = min(mine[k] for k in roles["winner"])
        base = min(mine[k] for k in roles["base"] + roles["winner"])
        best_pp = min(roles["pingpong"], key=lambda k: mine[k])
        g = {k: v for k, v in params[best_pp].items() if k in ("BM", "BN", "STAGES", "PINGPONG", "TMA_STORE", "GROUP_M")}
        print(f"{str(shape):<18} {win * 1e3:8.2f} {base * 1e3:9.2f} {mine[best_pp] * 1e3:8.2f} "
              f"{(lib.get(shape) or 0) * 1e3:8.2f}  {win / mine[best_pp]:9.3f}  {g}")
        table.append({"shape": str(shape), "sweep_ratio": ratio, "winner_ms": win, "base_ms": base,
                      "pingpong_ms": mine[best_pp], "pingpong": params[best_pp], "library_ms": lib.get(shape)})
        for kid in roles["pingpong"]:
            for role, label, source in set(meta[(kid, shape)]):
                if role == "pingpong" and mine.get(source):
                    q = params[kid]
                    pairs[label].append(mine[source] / mine[kid])
                    pair_rows.append({"shape": str(shape), "variant": label, "source": params[source], "pingpong": q,
                                      "ratio": mine[source] / mine[kid], "k_steps": -(-shape.K // 64),
                                      "tiles": -(-shape.M // q["BM"]) * -(-shape.N // q["BN"])})
    (out / "rows.json").write_text(json.dumps(table, indent=1))
    (out / "pairs.json").write_text(json.dumps(pair_rows, indent=1))
    if table:
        gain = geomean([r["winner_ms"] / r["pingpong_ms"] for r in table])
        print(f"\ngeomean over {len(table)} shapes: best ping-pong / winner {gain:.3f}, "
              f"best of (winner, picks, ping-pong) / winner "
              f"{geomean([r['winner_ms'] / min(r['pingpong_ms'], r['base_ms']) for r in table]):.3f}")
        with_lib = [r for r in table if r["library_ms"]]
        print("vs the best library in this run: winner "
              f"{geomean([r['library_ms'] / r['winner_ms'] for r in with_lib]):.3f}, with ping-pong "
              f"{geomean([r['library_ms'] / min(r['winner_ms'], r['pingpong_ms'], r['base_ms']) for r in with_lib]):.3f}")
    print(f"\n{'variant':<12} {'pairs':>5} {'source/variant':>14} {'min':>6} {'max':>6} {'faster by >2%':>13}")
    for label, v in sorted(pairs.items()):
        print(f"{label:<12} {len(v):>5} {geomean(v):>14.3f} {min(v):>6.3f} {max(v):>6.3f} {sum(x > 1.02 for x in v):>13}")
    # the table a shortlist rule would be written from: by loop length, tile and tiles an SM
    groups = defaultdict(list)
    for r in pair_rows:
        k = r["k_steps"]
        loop = "<= 4" if k <= 4 else "<= 16" if k <= 16 else "<= 64" if k <= 64 else "> 64"
        per_sm = r["tiles"] / NUM_SMS
        rounds = "<= 2" if per_sm <= 2 else "<= 8" if per_sm <= 8 else "> 8"
        tile = f"{r['pingpong']['BM']}x{r['pingpong']['BN']}"
        groups[(r["variant"], f"k-steps {loop}", tile, f"tiles/SM {rounds}")].append(r["ratio"])
    print(f"\n{'variant, loop, tile, tiles an SM':<52} {'pairs':>5} {'source/variant':>14} {'min':>6} {'max':>6}")
    for key in sorted(groups):
        v = groups[key]
        print(f"{', '.join(key):<52} {len(v):>5} {geomean(v):>14.3f} {min(v):>6.3f} {max(v):>6.3f}")


if __name__ == "__main__":
    main()

"""Two shortlist gaps that session 20's random hopper genomes pointed at (issues 13, 14), as pairs. On six
small grid125 shapes, 120 random genomes a shape beat the 24-pick shortlist on two (kernel times, two runs):
64x1024x1024 by 5.1% with a transposed product of 48-row tiles (the shortlist offers no transposed tile at
M = 64: `swapped_rows(64)` is empty), and 4096x64x1024 by 7.1% with the shortlist's 64x64 tile at 11
stages and the TMA store (the shortlist takes 7 stages there: `_deep_beside` wants 64 k-steps an item).

For every shape of the given sets, all its shortlist picks (24) are timed, and beside each of its first
`--picks` hopper picks (6) the variants that apply:
- `deep_short`: a pick with stages of at most 20 KB (BM + BN <= 160) whose work items run 16 to 63
  k-steps, with the deepest pipeline that fits (up to 16 stages);
- `swap_small_m`: at M <= 64, a plain pick (no transposed product) of 64-row tiles as a transposed
  product of 32-row and of 48-row tiles (two variants), other genes unchanged where valid.
One evaluator run, libraries in it, no racing, 3 replays of 10 ms, correctness checked. Only the shapes
where some variant applies are run.

The rule, written before the run, for each variant kind separately: offer it in the shortlist beside its
pick (as `_deep_beside` does) if every evaluation is correct, the variant beats its shape's shortlist
best (the best of the same run's 24 picks) by at least 2% on at least 3 shapes, and the shapes' best
with it / without it has a geomean of at least 1.01 over the shapes it touches; otherwise not.

    python benchmarks/session20/gap_ab.py --sets grid125 --picks 6 --out /tmp/gap
    python benchmarks/session20/gap_ab.py --backend simulated ...   # a CPU dry run (modelled times)
"""
from __future__ import annotations

import json
import random
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "session14"))
from deep_ab import harness_args, shapes_of, side_by_side  # noqa: E402

from evo.core.shapes import Shape  # noqa: E402
from evo.core.summary import geomean  # noqa: E402
from evo.families import FAMILIES  # noqa: E402
from evo.families.hopper import deepest_fitting  # noqa: E402
from evo.search.sweep import plan  # noqa: E402

HOPPER = FAMILIES["hopper"]


def _valid(q: dict, shape: Shape) -> bool:
    return HOPPER.problem(q) is None and HOPPER.candidate(q).declaration.supports(shape)


def deep_short(p: dict, shape: Shape) -> list[dict]:
    steps = -(-shape.K // 64) // max(1, p["SPLIT_K"])
    if p["BM"] + p["BN"] > 160 or not 16 <= steps < 64 or p["SPLIT_CLUSTER"]:
        return []
    q = deepest_fitting(p, 16, p["STAGES"] + 1)
    return [q] if q is not None and _valid(q, shape) else []


def swap_small_m(p: dict, shape: Shape) -> list[dict]:
    if shape.M > 64 or p["SWAP_AB"] or p["BM"] != 64:
        return []
    return [q for bm in (32, 48) if _valid(q := dict(p, SWAP_AB=1, BM=bm), shape)]


VARIANTS = {"deep_short": deep_short, "swap_small_m": swap_small_m}


def main() -> None:
    ap = harness_args(__doc__, "/tmp/gap")
    ap.add_argument("--sets", nargs="+", default=["grid125", "llm_layers"])
    ap.add_argument("--picks", type=int, default=6, help="hopper picks a shape that get variants")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    jobs, role = [], defaultdict(list)  # (kernel, shape) -> [("pick", None) | (kind, base kernel)]
    for name in args.sets:
        for shape in shapes_of(name):
            picks = plan(list(FAMILIES), shape, budget=24, sample="shortlist", rng=random.Random(0), num_sms=132)
            extra = [(kind, c.id, q) for c in [c for c in picks if c.family == "hopper"][:args.picks]
                     for kind, make in VARIANTS.items() for q in make(c.params, shape)]
            if not extra:
                continue
            for c in picks:
                if (c.id, shape) not in role:
                    jobs.append((c, shape))
                role[(c.id, shape)].append(("pick", None))
            for kind, base, q in extra:
                c = HOPPER.candidate(q, operator=f"gap_ab:{kind}")
                if (c.id, shape) not in role:
                    jobs.append((c, shape))
                role[(c.id, shape)].append((kind, base))
    print(f"{len(jobs)} evaluations on {len({s for _, s in jobs})} shapes", flush=True)
    ms: dict = {}
    bad = 0
    for e in side_by_side(jobs, out / "gap.sqlite", "gap_ab.py", args):
        bad += not e.ok
        ms[(e.kernel_id, str(e.shape))] = e.time_ms if e.ok else None
    if args.backend != "gpu":
        print("SIMULATED (the CPU test double's modelled times, not measurements)")
    print(f"{bad} evaluations not correct or failed")
    rows = [{"kernel": k, "shape": str(s), "roles": role[(k, s)], "ms": ms.get((k, str(s)))} for k, s in role]
    (out / "gap.json").write_text(json.dumps(rows, indent=1))
    best_pick = {}
    for r in rows:
        if r["ms"] and any(kind == "pick" for kind, _ in r["roles"]):
            best_pick[r["shape"]] = min(best_pick.get(r["shape"], r["ms"]), r["ms"])
    print(f"{'variant':<14} {'pairs':>5} {'base/variant':>12} {'min':>6} {'max':>6} {'shapes':>6} "
          f"{'beat best 2%':>12} {'best with/without':>17}")
    for kind in VARIANTS:
        pairs, best_var = [], {}
        for r in rows:
            for k, base in r["roles"]:
                if k == kind and r["ms"] and ms.get((base, r["shape"])):
                    pairs.append(ms[(base, r["shape"])] / r["ms"])
                    best_var[r["shape"]] = min(best_var.get(r["shape"], r["ms"]), r["ms"])
        if not pairs:
            print(f"{kind:<14} no pairs")
            continue
        shapes = [s for s in best_var if s in best_pick]
        beat = [s for s in shapes if best_pick[s] / best_var[s] >= 1.02]
        lift = geomean([best_pick[s] / min(best_pick[s], best_var[s]) for s in shapes]) if shapes else float("nan")
        print(f"{kind:<14} {len(pairs):>5} {geomean(pairs):>12.3f} {min(pairs):>6.3f} {max(pairs):>6.3f} "
              f"{len(shapes):>6} {len(beat):>12} {lift:>17.3f}")
        print(f"  beat the shape's best by 2%: {sorted((round(best_pick[s] / best_var[s], 3), s) for s in beat)}")


if __name__ == "__main__":
    main()

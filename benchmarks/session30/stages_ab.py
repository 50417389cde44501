"""One pipeline stage more than the shortlist's cap (issues 13 and 14): every compare run kept in benchmarks/
found `STAGES 7 -> 8` (or 9-10) on single shapes (197x3072x768 in four runs, 256x4096x1024 in two: +1.6-5.1%
re-timed; session30/findable.txt), where the shortlist caps unsplit hopper picks at 7 stages
(`hopper._fit_stages`) and offers its deepest pipeline beside a pick only from 16 k-steps an item with
BM + BN <= 160 (`hopper._deep_beside`). So: on a sweep's shapes whose winner is a hopper pick at exactly
7 stages, that winner against itself at 8, 9 and 10 stages (where they fit), timed side by side.

Every kernel and the libraries in one evaluator run (3 replays of 10 ms, 2 correctness draws, no racing),
shapes in a random order (seeded) so that a cut by --budget-s leaves a sample, not the first FLOP bucket.
Prints per shape the winner's time and each deeper one's ratio (7-stage time / deeper time: > 1 deeper is
faster), then the geomean of the best deeper variant by k-steps an item and tile size; writes rows.json.

    python benchmarks/session30/stages_ab.py SWEEP.sqlite [SWEEP.sqlite ...] --out /tmp/stages --budget-s 200
"""
from __future__ import annotations

import json
import random
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


def k_steps_per_item(p: dict, K: int) -> int:
    return -(-K // 64) // max(1, p["SPLIT_K"])


def deeper(p: dict) -> list[dict]:
    """p at 8, 9 and 10 stages, those that fit (deduplicated: a deeper ask that fits no more is left out)."""
    out = []
    for most in (8, 9, 10):
        q = deepest_fitting(p, most, fewest=8)
        if q is not None and q not in out:
            out.append(q)
    return out


def bucket(p: dict, K: int) -> str:
    steps = k_steps_per_item(p, K)
    k = "< 16 k-steps" if steps < 16 else "16-63 k-steps" if steps < 64 else ">= 64 k-steps"
    return f"{k}, BM+BN {'<= 160' if p['BM'] + p['BN'] <= 160 else '> 160'}"


def main() -> None:
    ap = harness_args(__doc__, "/tmp/stages")
    ap.add_argument("sweeps", nargs="+")
    ap.add_argument("--max-shapes", type=int, default=0, help="at most N shapes (0: all)")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = [r for path in args.sweeps for r in sweep_shapes(path) if r[2] == "hopper" and r[3].get("STAGES") == 7]
    random.Random(0).shuffle(rows)
    rows = rows[:args.max_shapes or None]
    jobs, role = [], {}
    for _, shape, _, winner in rows:
        for p, r in [(winner, 7)] + [(q, q["STAGES"]) for q in deeper(winner)]:
            c = HOPPER.candidate(p)
            if (c.id, shape) not in role and c.declaration.supports(shape, num_sms=NUM_SMS):
                role[(c.id, shape)] = r
                jobs.append((c, shape))
    print(f"{len(rows)} shapes whose sweep winner is a hopper pick at 7 stages, {len(jobs)} evaluations", flush=True)
    times, lib = times_side_by_side(jobs, out / "stages.sqlite", "stages_ab.py", args)
    print(f"{'shape':<18} {'7 stages':>9} (us)   7 / 8    7 / 9    7 / 10   winner's genes")
    table, by_bucket = [], defaultdict(list)
    for ratio, shape, _, winner in rows:
        mine = {role[(kid, s)]: t for (kid, s), t in times.items() if s == shape and t}
        if 7 not in mine or len(mine) < 2:
            continue
        cells = [f"{mine[7] / mine[s]:7.3f}" if s in mine else "      -" for s in (8, 9, 10)]
        best = max(mine[7] / t for s, t in mine.items() if s != 7)
        genes = " ".join(f"{k}={winner[k]}" for k in ("BM", "BN", "CONSUMERS", "SPLIT_K", "SWAP_AB", "CTAS_PER_SM",
                                                       "PINGPONG", "TMA_STORE"))
        print(f"{str(shape):<18} {mine[7] * 1e3:9.2f}      {'  '.join(cells)}   {genes}")
        by_bucket[bucket(winner, shape.K)].append(best)
        table.append({"shape": str(shape), "sweep_ratio": ratio, "library_ms": lib.get(shape),
                      "ms_by_stages": mine, "params": winner, "bucket": bucket(winner, shape.K)})
    (out / "rows.json").write_text(json.dumps(table, indent=1))
    print("\n7-stage time / best deeper variant's (> 1: a deeper pipeline is faster), by k-steps an item and tile size")
    for b, vals in sorted(by_bucket.items()):
        print(f"  {b:<32} {len(vals):3d} shapes  geomean {geomean(vals):.3f}  "
              f"deeper faster by 1% or more on {sum(v >= 1.01 for v in vals)}, slower by 1% on {sum(v <= 0.99 for v in vals)}")


if __name__ == "__main__":
    main()

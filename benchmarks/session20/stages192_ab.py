"""Six or seven stages for the split-K picks over L2 whose tiles are 64x128 or 128x64 (issue 13). Session
20's neighbourhood run (170 hopper configurations a shape on four long-K shapes) found the shortlist's
pick of 1024x256x16384 and 512x512x16384 (64x128, split-K 4, ordered fix-up, 5 stages) slower than the
same kernel with 6 stages (which ran 1.038x and 1.062x as fast), the best of the 170 on both; 8 stages
ran slower than 5 (one measurement each). `_fit_stages` caps such picks at 5 stages: session 14
measured the deepest pipeline up to 7 no faster for large stages (0.998 over 150 pairs). This times
every such shortlist pick of the given sets (24 picks a shape) at 5 stages beside the same kernel at 6
and at 7, side by side in one evaluator run, libraries in the same run, no racing, 3 replays of 10 ms,
correctness checked.

The rule, written before the run: `_fit_stages` gives such picks S stages (6 or 7, the better geomean)
if every evaluation is correct, the geomean of (5-stage time / S-stage time) over all pairs is at least
1.01 and at most 10% of the pairs run 2% slower with S; if that holds only for K >= 8192 (and the rest
is at least 0.995), the rule is limited to K >= 8192. Otherwise nothing changes.

    python benchmarks/session20/stages192_ab.py --sets grid125 llm_layers --out /tmp/stages192
    python benchmarks/session20/stages192_ab.py --backend simulated ...   # a CPU dry run (modelled times)
"""
from __future__ import annotations

import json
import random
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "session14"))
from deep_ab import harness_args, shapes_of, side_by_side  # noqa: E402

from evo.core.summary import geomean  # noqa: E402
from evo.families import FAMILIES  # noqa: E402
from evo.families.hopper import _problem  # noqa: E402
from evo.search.sweep import plan  # noqa: E402

VARIANTS = (6, 7)


def eligible(p: dict) -> bool:
    return p["SPLIT_K"] > 1 and not p["SPLIT_CLUSTER"] and p["BM"] + p["BN"] == 192 and p["STAGES"] == 5


def main() -> None:
    ap = harness_args(__doc__, "/tmp/stages192")
    ap.add_argument("--sets", nargs="+", default=["grid125", "llm_layers"])
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    fam = FAMILIES["hopper"]
    jobs, role = [], {}
    for name in args.sets:
        for shape in shapes_of(name):
            picks = plan(list(FAMILIES), shape, budget=24, sample="shortlist", rng=random.Random(0), num_sms=132)
            for cand in picks:
                if cand.family != "hopper" or not eligible(cand.params):
                    continue
                for stages in (5, *VARIANTS):
                    q = dict(cand.params, STAGES=stages)
                    if _problem(q) is not None:
                        continue
                    c = fam.candidate(q, operator="stages192_ab")
                    if (c.id, shape) not in role:
                        jobs.append((c, shape))
                    role.setdefault((c.id, shape), []).append((cand.id, stages))
    print(f"{len(jobs)} evaluations", flush=True)
    times: dict = defaultdict(dict)  # (shape, base pick) -> {stages: ms}
    bad = 0
    for e in side_by_side(jobs, out / "stages192.sqlite", "stages192_ab.py", args):
        bad += not e.ok
        for base, stages in role[(e.kernel_id, e.shape)]:
            times[(str(e.shape), base)][stages] = e.time_ms if e.ok else None
    if args.backend != "gpu":
        print("SIMULATED (the CPU test double's modelled times, not measurements)")
    print(f"{bad} evaluations not correct or failed")
    rows = []
    for (shape, base), t in sorted(times.items()):
        rows.append({"shape": shape, "base": base, "ms": {str(k): v for k, v in t.items()}})
    (out / "pairs.json").write_text(json.dumps(rows, indent=1))
    print(f"{'variant':<8} {'K':<8} {'pairs':>5} {'geomean 5/S':>11} {'min':>6} {'max':>6} {'slower 2%':>9}")
    for stages in VARIANTS:
        for label, keep in (("all", lambda k: True), (">=8192", lambda k: k >= 8192), ("<8192", lambda k: k < 8192)):
            r = [t[5] / t[stages] for (shape, _), t in times.items()
                 if t.get(5) and t.get(stages) and keep(int(shape.split("x")[2]))]
            if r:
                print(f"{stages:<8} {label:<8} {len(r):>5} {geomean(r):>11.3f} {min(r):>6.3f} {max(r):>6.3f} "
                      f"{sum(x < 0.98 for x in r):>9}")
        worst = sorted(((t[5] / t[stages], shape) for (shape, _), t in times.items() if t.get(5) and t.get(stages)))
        print(f"  {stages} stages: worst {[(round(x, 3), s) for x, s in worst[:4]]}, "
              f"best {[(round(x, 3), s) for x, s in worst[-4:]]}")


if __name__ == "__main__":
    main()

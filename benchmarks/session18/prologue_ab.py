"""Hopper's prologue overlapped with the kernel before it, as pairs (issue 13, launch latency). Since session
18 the hopper kernel sets up its barriers and prefetches its tensor maps' descriptors before
`griddepcontrol.wait`, so that under a programmatic dependent launch (the evaluator's default since that
session) this prologue overlaps the previous kernel's tail; before, the wait was its first statement. For
every given shape, the first PICKS hopper shortlist picks as they render now ("variant") against the same
source with the wait moved back to the top ("base"), evaluated side by side in one evaluator run with PDL,
libraries in the same run, no racing (benchmarks/session14/deep_ab.py's harness). A ratio base/variant
above 1: the overlapped prologue is faster.

    python benchmarks/session18/prologue_ab.py --shapes 64x64x256 16384x256x256 --picks 4 --out /tmp/prologue
"""
from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "session14"))
from deep_ab import harness_args, kind, side_by_side  # noqa: E402

from evo.core.kernel import Candidate  # noqa: E402
from evo.core.shapes import Shape  # noqa: E402
from evo.core.summary import geomean  # noqa: E402
from evo.families import FAMILIES  # noqa: E402

WAIT = 'asm volatile("griddepcontrol.wait;" ::: "memory");'
FIRST_STATEMENT = "extern __shared__ uint8_t smem_raw[];"


def wait_first(source: str) -> str:
    """The hopper source with its wait moved back to the first statement (as before session 18)."""
    if source.count(WAIT) != 1 or source.count(FIRST_STATEMENT) != 1:
        raise SystemExit("the hopper template changed: this script moves one wait before `extern __shared__`")
    return source.replace(WAIT, "").replace(FIRST_STATEMENT, WAIT + "\n    " + FIRST_STATEMENT)


def main() -> None:
    ap = harness_args(__doc__, "/tmp/prologue")
    ap.add_argument("--shapes", nargs="+", required=True, help="MxNxK")
    ap.add_argument("--picks", type=int, default=4)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    fam = FAMILIES["hopper"]
    jobs, meta = [], {}
    for shape in (Shape.parse(x) for x in args.shapes):
        for p in fam.suggest(shape.M, shape.N, shape.K, limit=24)[:args.picks]:
            now = fam.candidate(p)
            before = Candidate.make(wait_first(now.source), family="hopper", params=p)
            jobs += [(before, shape), (now, shape)]
            meta[(before.id, shape)] = (p, "base")
            meta[(now.id, shape)] = (p, "other")
    print(f"{len(jobs)} evaluations ({len(jobs) // 2} pairs)", flush=True)
    times: dict = defaultdict(dict)
    for e in side_by_side(jobs, out / "prologue.sqlite", "prologue_ab.py", args):
        p, which = meta[(e.kernel_id, e.shape)]
        key = (str(e.shape), json.dumps(p, sort_keys=True))
        times[key][which] = e.time_ms if e.ok else None
        times[key][which + "_pdl"] = bool(e.launch and e.launch.get("pdl"))
        times[key]["lib"] = e.best_library_ms
    rows = [{"shape": shape, "kind": kind(json.loads(p)), "params": json.loads(p), "ratio": t["base"] / t["other"],
             "base_ms": t["base"], "other_ms": t["other"], "lib_ms": t.get("lib"),
             "pdl": [t.get("base_pdl"), t.get("other_pdl")]}
            for (shape, p), t in times.items() if t.get("base") and t.get("other")]
    (out / "pairs.json").write_text(json.dumps(rows, indent=1))
    if args.backend != "gpu":
        print("SIMULATED (the CPU test double's modelled times, not measurements)")
    not_pdl = [r for r in rows if r["pdl"] != [True, True]]
    if not_pdl:
        print(f"{len(not_pdl)} pairs not both timed as programmatic dependent launches: {not_pdl[:3]}")
    by = defaultdict(list)
    for r in rows:
        by[r["shape"]].append(r["ratio"])
    print(f"{'shape':<20} {'pairs':>5} {'geomean base/variant':>20} {'min':>6} {'max':>6}")
    for shape, g in by.items():
        print(f"{shape:<20} {len(g):>5} {geomean(g):>20.3f} {min(g):>6.3f} {max(g):>6.3f}")
    if rows:
        g = [r["ratio"] for r in rows]
        print(f"{'all':<20} {len(g):>5} {geomean(g):>20.3f} {min(g):>6.3f} {max(g):>6.3f}")


if __name__ == "__main__":
    main()

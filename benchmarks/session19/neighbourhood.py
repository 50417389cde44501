"""Every hopper configuration of a small sub-genome around long-K shapes where we lose most, against the 24-pick
shortlist of all families, in one evaluator run (issues 13 and 14). Session 19's random sample (120
genomes of the whole hopper genome a shape) beat the shortlist on 1 of 6 worst shapes by 1.1%; this asks
the sharper question: in the region where the library's kernels lie (cuBLAS runs 1024x256x16384 as
128x64 tiles, split-K 4, 8 stages, 2-CTA clusters; session 14 and 19), does the hopper family hold a
kernel the shortlist misses? Tiles BM, BN in {64, 128}, one or two consumers, split-K over L2 in
{2, 3, 4, 6, 8} with atomics or ordered partials, 4 to 10 stages (whatever is valid and declared for
the shape), plus the shortlist; libraries in the same run, no racing, 3 replays of 10 ms.

    python benchmarks/session19/neighbourhood.py --shapes 1024x256x16384 256x1024x16384 --out /tmp/nb
    python benchmarks/session19/neighbourhood.py --backend simulated ...   # a CPU dry run (modelled times)

Prints per shape the shortlist's best, the sub-genome's best and its genes, and how many of the
sub-genome beat the shortlist's best; writes every time to times.json.
"""
from __future__ import annotations

import itertools
import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "session14"))
from deep_ab import harness_args, side_by_side  # noqa: E402

from evo.core.shapes import Shape  # noqa: E402
from evo.core.summary import geomean  # noqa: E402
from evo.families import FAMILIES  # noqa: E402
from evo.search.sweep import plan  # noqa: E402

AXES = {"BM": (64, 128), "BN": (64, 128), "CONSUMERS": (1, 2), "SPLIT_K": (2, 3, 4, 6, 8), "FIXUP": (0, 1),
        "STAGES": (4, 6, 8, 10)}


def sub_genome(shape: Shape) -> list[dict]:
    """The valid hopper configurations of AXES (the family default elsewhere) whose declaration takes `shape`."""
    fam = FAMILIES["hopper"]
    out = []
    for values in itertools.product(*AXES.values()):
        p = dict(fam.default, **dict(zip(AXES, values)))
        if fam.problem(p) is None and fam.candidate(p).declaration.supports(shape):
            out.append(p)
    return out


def main() -> None:
    ap = harness_args(__doc__, "/tmp/neighbourhood")
    ap.add_argument("--shapes", nargs="+", required=True)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    fam = FAMILIES["hopper"]
    jobs, origin = [], {}
    for shape in map(Shape.parse, args.shapes):
        for cand in plan(list(FAMILIES), shape, budget=24, sample="shortlist", rng=random.Random(0), num_sms=132):
            jobs.append((cand, shape))
            origin[(cand.id, shape)] = "shortlist"
        for p in sub_genome(shape):
            cand = fam.candidate(p, operator="neighbourhood")
            if (cand.id, shape) not in origin:  # a shortlist pick already in the run keeps its label
                jobs.append((cand, shape))
                origin[(cand.id, shape)] = "sub-genome"
    print(f"{len(jobs)} evaluations on {len(args.shapes)} shapes", flush=True)
    times: dict[str, list] = {}
    for e in side_by_side(jobs, out / "neighbourhood.sqlite", "neighbourhood.py", args):
        times.setdefault(str(e.shape), []).append(
            {"origin": origin[(e.kernel_id, e.shape)], "kernel": e.kernel_id, "ms": e.time_ms if e.ok else None,
             "status": str(e.status), "lib_ms": e.best_library_ms,
             "params": next((c.params for c, s in jobs if c.id == e.kernel_id and s == e.shape), None)})
    (out / "times.json").write_text(json.dumps(times, indent=1))
    if args.backend != "gpu":
        print("SIMULATED (the CPU test double's modelled times, not measurements)")
    print(f"{'shape':<16} {'shortlist us':>12} {'sub-genome us':>13} {'faster':>9} {'lib us':>8}  sub-genome best")
    gains = []
    for shape, rows in times.items():
        ok = [r for r in rows if r["ms"]]
        short = min((r["ms"] for r in ok if r["origin"] == "shortlist"), default=None)
        sub = sorted((r for r in ok if r["origin"] == "sub-genome"), key=lambda r: r["ms"])
        lib = min((r["lib_ms"] for r in rows if r["lib_ms"]), default=None)
        if not short or not sub:
            print(f"{shape:<16} incomplete: {len(ok)} correct of {len(rows)}")
            continue
        gains.append(short / sub[0]["ms"])
        genes = {k: v for k, v in sub[0]["params"].items() if k in AXES}
        print(f"{shape:<16} {short * 1e3:>12.2f} {sub[0]['ms'] * 1e3:>13.2f} "
              f"{sum(r['ms'] < short for r in sub):>4}/{len(sub):<4} {lib * 1e3 if lib else 0:>8.2f}  {genes}")
    if gains:
        print(f"geomean shortlist best / sub-genome best: {geomean(gains):.3f} over {len(gains)} shapes")


if __name__ == "__main__":
    main()

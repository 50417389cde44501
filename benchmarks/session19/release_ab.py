"""Hopper's consumers releasing a stage once per warpgroup, as pairs (issue 13). Today every consumer warp's
lane 0 arrives on the stage's `empty` barrier in every CTA of the cluster (4 arrivals per consumer
warpgroup per CTA; with a multicast pair 16 a stage, 8 of them remote, two `mapa` + remote arrives in a
row per warp). CUTLASS's sm90 pipeline (`PipelineTmaAsync`, read in session 19) has one thread per
consumer warpgroup signal each destination CTA, spread over warps: 2 x consumers arrivals in a 2-CTA
cluster. For every given shape, the first PICKS hopper shortlist picks as they render ("base") against
the same source releasing once per warpgroup and destination ("variant", `release_once`), and with
`--pairs` the same for each pick's multicast twin (CLUSTER_M=2) where that is valid; evaluated side by
side in one evaluator run (correctness checked), libraries in the same run, no racing. A ratio
base/variant above 1: releasing once is faster. With --pairs the table also gives unpaired base /
paired variant: whether the multicast pair then beats the kernel it pairs.

    python benchmarks/session19/release_ab.py --shapes 1024x256x16384 4096x1024x256 --picks 2 --pairs --out /tmp/rel
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

EDITS = [  # (text in the rendered hopper source, its replacement)
    ("mbar_init(&empty[s], CONSUMERS * 4 * CLUSTER_M);",
     "mbar_init(&empty[s], CONSUMERS * CLUSTER_M);"),
    ("if (prev_stage >= 0 && lane == 0) release_stage(&empty[prev_stage]);",
     "if (prev_stage >= 0 && lane == 0 && warp < CLUSTER_M) release_stage_in(&empty[prev_stage], warp);"),
    ("// ---- wgmma shared-memory descriptors",
     "// release_ab.py: one arrival per consumer warpgroup on each CTA of the cluster, warp w signalling CTA w\n"
     "__device__ __forceinline__ void release_stage_in(uint64_t* bar, uint32_t cta) {\n"
     "#if CLUSTER_M > 1\n    mbar_arrive_in(bar, cta);\n#else\n    (void)cta;\n    mbar_arrive(bar);\n#endif\n}\n\n"
     "// ---- wgmma shared-memory descriptors"),
]
COUNTS = {EDITS[0][0]: 1, EDITS[1][0]: 2, EDITS[2][0]: 1}  # how often each text stands in the template


def release_once(source: str) -> str:
    """The hopper source with each consumer warpgroup releasing a stage once per CTA of its cluster."""
    for old, new in EDITS:
        if source.count(old) != COUNTS[old]:
            raise SystemExit(f"the hopper template changed: {old!r} stands {source.count(old)} times, not "
                             f"{COUNTS[old]}")
        source = source.replace(old, new)
    return source


def main() -> None:
    ap = harness_args(__doc__, "/tmp/release")
    ap.add_argument("--shapes", nargs="+", required=True, help="MxNxK")
    ap.add_argument("--picks", type=int, default=2)
    ap.add_argument("--pairs", action="store_true", help="also each pick's multicast twin (CLUSTER_M=2)")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    fam = FAMILIES["hopper"]
    jobs, meta = [], {}
    for shape in (Shape.parse(x) for x in args.shapes):
        for p in fam.suggest(shape.M, shape.N, shape.K, limit=24)[:args.picks]:
            twins = [("plain", p)]
            twin = dict(p, CLUSTER_M=2)
            if args.pairs and p["CLUSTER_M"] == 1 and fam.problem(twin) is None \
                    and fam.candidate(twin).declaration.supports(shape):
                twins.append(("pair", twin))
            for label, q in twins:
                base = fam.candidate(q)
                variant = Candidate.make(release_once(base.source), family="hopper", params=q)
                jobs += [(base, shape), (variant, shape)]
                meta[(base.id, shape)] = (p, label, "base")
                meta[(variant.id, shape)] = (p, label, "variant")
    print(f"{len(jobs)} evaluations", flush=True)
    times: dict = defaultdict(dict)
    for e in side_by_side(jobs, out / "release.sqlite", "release_ab.py", args):
        p, label, which = meta[(e.kernel_id, e.shape)]
        key = (str(e.shape), json.dumps(p, sort_keys=True))
        times[key][f"{label}_{which}"] = e.time_ms if e.ok else None
        times[key]["lib"] = e.best_library_ms
        if not e.ok:
            print(f"{e.shape} {label} {which}: {e.status} {e.error[:200] if e.error else ''}", flush=True)
    rows = [{"shape": shape, "kind": kind(json.loads(p)), "params": json.loads(p), **t}
            for (shape, p), t in times.items()]
    (out / "pairs.json").write_text(json.dumps(rows, indent=1))
    if args.backend != "gpu":
        print("SIMULATED (the CPU test double's modelled times, not measurements)")
    print(f"{'comparison':<44} {'n':>4} {'geomean':>8} {'min':>6} {'max':>6}")
    for name, num, den in (("plain: base / variant", "plain_base", "plain_variant"),
                           ("multicast pair: base / variant", "pair_base", "pair_variant"),
                           ("unpaired base / multicast pair base", "plain_base", "pair_base"),
                           ("unpaired base / multicast pair variant", "plain_base", "pair_variant")):
        g = [r[num] / r[den] for r in rows if r.get(num) and r.get(den)]
        if g:
            print(f"{name:<44} {len(g):>4} {geomean(g):>8.3f} {min(g):>6.3f} {max(g):>6.3f}")


if __name__ == "__main__":
    main()

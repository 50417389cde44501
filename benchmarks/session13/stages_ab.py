"""The search's finds of the thirteenth session as paired measurements (NEXT.md item 1), for every
shape of the given shape sets, evaluated side by side in one evaluator run, libraries in the same
run, no racing (both members of a pair get every replay):
- `stages`: the first PICKS split picks of the hopper shortlist (split-K over L2 or a tail split,
  either reduction) as the shortlist makes them (5 stages where split) against the same
  configuration with the deepest pipeline up to 7 stages that fits;
- `swap`: on shapes with M <= 256, the first PICKS plain picks (SWAP_AB=0) against the same
  configuration as a transposed product (SWAP_AB=1), where that is a valid kernel (the shortlist
  offers transposed tiles only where they pad M less).
Prints the pairs by kind and writes them as JSON; the archive keeps every evaluation
(stages_pairs.py reads it too).

    python benchmarks/session13/stages_ab.py --sets llm_layers grid125 --picks 3 --out /tmp/stages
"""
from __future__ import annotations

import argparse
import json
import math
import time
from collections import defaultdict
from pathlib import Path

from omegaconf import OmegaConf

from evo.archive import Archive
from evo.config import EvaluatorConfig
from evo.core.shapes import Shape, build_shape_set
from evo.evaluation.evaluator import Evaluator
from evo.families import FAMILIES
from evo.families.hopper import _problem

CONF = Path(__file__).resolve().parents[2] / "conf" / "shapes"


def shapes_of(name: str) -> list[Shape]:
    c = OmegaConf.load(CONF / f"{name}.yaml")
    return build_shape_set(listed=list(c.get("list", [])), grid=list(c.get("grid", [])))


def kind(what: str, p: dict) -> str:
    if what == "swap":
        return f"swap, SPLIT_K={'1' if p['SPLIT_K'] == 1 else '>1'}"
    split = "split-K" if p["SPLIT_K"] > 1 else "tail split"
    return f"stages, {split}, FIXUP={p.get('FIXUP', 0)}"


def deeper(p: dict) -> dict | None:
    """p with the deepest pipeline up to 7 stages that fits, where p is split (else None)."""
    if not ((p["SPLIT_K"] > 1 and not p["SPLIT_CLUSTER"]) or p.get("TAIL_SPLIT", 1) > 1):
        return None
    for stages in range(7, p["STAGES"], -1):
        q = dict(p, STAGES=stages)
        if _problem(q) is None:
            return q
    return None


def transposed(p: dict) -> dict | None:
    """p as a transposed product (SWAP_AB=1), where p is plain and that is a valid kernel."""
    if p["SWAP_AB"]:
        return None
    q = dict(p, SWAP_AB=1)
    return q if _problem(q) is None else None


VARIANTS = {"stages": deeper, "swap": transposed}


def pairs_for(shape: Shape, what: str, picks: int) -> list[tuple[dict, dict]]:
    if what == "swap" and shape.M > 256:
        return []
    out = []
    for p in FAMILIES["hopper"].suggest(shape.M, shape.N, shape.K, limit=24):
        q = VARIANTS[what](p)
        if q is not None and FAMILIES["hopper"].candidate(q).declaration.supports(shape):
            out.append((p, q))
        if len(out) == picks:
            break
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", nargs="+", default=["llm_layers", "grid125"])
    ap.add_argument("--picks", type=int, default=3, help="pairs per shape and kind (shortlist order)")
    ap.add_argument("--kinds", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    ap.add_argument("--out", default="/tmp/stages")
    ap.add_argument("--backend", default="gpu", help="simulated: a CPU dry run of the script (modelled times)")
    ap.add_argument("--budget-s", type=float, default=0, help="stop queueing results after this (0: none)")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    fam = FAMILIES["hopper"]
    jobs, meta = [], {}
    for name in args.sets:
        for shape in shapes_of(name):
            for what in args.kinds:
                for base, other in pairs_for(shape, what, args.picks):
                    a, b = fam.candidate(base), fam.candidate(other)
                    jobs += [(a, shape), (b, shape)]
                    meta.setdefault((a.id, shape), []).append((what, base, "base"))
                    meta.setdefault((b.id, shape), []).append((what, base, "other"))
    print(f"{len(jobs)} evaluations ({len(jobs) // 2} pairs)", flush=True)
    archive = Archive.open(out / "stages.sqlite")
    run = archive.start_run(kind="bench", config={"script": "stages_ab.py", **vars(args)}, seed=0, backend=args.backend)
    cfg = EvaluatorConfig(backend=args.backend, draws=2, replays=3, target_replay_ms=10, cache_dir="/tmp/evo-cache")
    ev = Evaluator(cfg, archive=archive, run_id=run).start()
    times: dict = defaultdict(dict)
    t0 = time.time()
    try:
        for e in ev.evaluate(jobs, race=False):
            for what, base, which in meta[(e.kernel_id, e.shape)]:  # a base kernel can open two kinds of pair
                times[(what, str(e.shape), json.dumps(base, sort_keys=True))][which] = e.time_ms if e.ok else None
            if args.budget_s and time.time() - t0 > args.budget_s:
                print("budget reached: stopping", flush=True)
                break
    finally:
        ev.close()
    rows = []
    for (what, shape, base_json), t in times.items():
        base = json.loads(base_json)
        if t.get("base") and t.get("other"):
            rows.append({"shape": shape, "kind": kind(what, base), "base": base, "ratio": t["base"] / t["other"],
                         "base_ms": t["base"], "other_ms": t["other"]})
    (out / "pairs.json").write_text(json.dumps(rows, indent=1))
    by = defaultdict(list)
    for r in rows:
        by[r["kind"]].append(r["ratio"])
    if args.backend != "gpu":
        print("SIMULATED (the CPU test double's modelled times, not measurements)")
    print(f"{'kind':<32} {'pairs':>5} {'geomean base/variant':>20} {'min':>6} {'max':>6} {'variant slower by >2%':>21}")
    for k, g in sorted(by.items()):
        gm = math.exp(sum(map(math.log, g)) / len(g))
        print(f"{k:<32} {len(g):>5} {gm:>20.3f} {min(g):>6.3f} {max(g):>6.3f} {sum(x < 0.98 for x in g):>21}")


if __name__ == "__main__":
    main()

"""Split-K kernels with deeper pipelines, paired (NEXT.md item 1): for every shape of the given shape
sets, the first PICKS split picks of the hopper shortlist (split-K over L2 or a tail split, with either
reduction) as the shortlist makes them (5 stages where split) and the same configuration with the
deepest pipeline up to 7 stages that fits, evaluated side by side in one evaluator run, libraries
in the same run, no racing (both members of a pair get every replay). Prints the pairs by kind and
writes them as JSON; the archive keeps every evaluation (stages_pairs.py reads it too).

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


def kind(p: dict) -> str:
    split = "split-K" if p["SPLIT_K"] > 1 else "tail split"
    return f"{split}, FIXUP={p.get('FIXUP', 0)}"


def deeper(p: dict) -> dict | None:
    for stages in range(7, p["STAGES"], -1):
        q = dict(p, STAGES=stages)
        if _problem(q) is None:
            return q
    return None


def pairs_for(shape: Shape, picks: int) -> list[tuple[dict, dict]]:
    out = []
    for p in FAMILIES["hopper"].suggest(shape.M, shape.N, shape.K, limit=24):
        split = (p["SPLIT_K"] > 1 and not p["SPLIT_CLUSTER"]) or p.get("TAIL_SPLIT", 1) > 1
        q = deeper(p) if split else None
        if q is not None:
            out.append((p, q))
        if len(out) == picks:
            break
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", nargs="+", default=["llm_layers", "grid125"])
    ap.add_argument("--picks", type=int, default=3, help="split picks per shape (shortlist order)")
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
            for base, deep in pairs_for(shape, args.picks):
                a, b = fam.candidate(base), fam.candidate(deep)
                jobs += [(a, shape), (b, shape)]
                meta[(a.id, shape)] = (base, deep, "base")
                meta[(b.id, shape)] = (base, deep, "deep")
    print(f"{len(jobs)} evaluations ({len(jobs) // 2} pairs)", flush=True)
    archive = Archive.open(out / "stages.sqlite")
    run = archive.start_run(kind="bench", config={"script": "stages_ab.py", **vars(args)}, seed=0, backend=args.backend)
    cfg = EvaluatorConfig(backend=args.backend, draws=2, replays=3, target_replay_ms=10, cache_dir="/tmp/evo-cache")
    ev = Evaluator(cfg, archive=archive, run_id=run).start()
    times: dict = defaultdict(dict)
    t0 = time.time()
    try:
        for e in ev.evaluate(jobs, race=False):
            base, deep, which = meta[(e.kernel_id, e.shape)]
            times[(str(e.shape), json.dumps(base, sort_keys=True))][which] = e.time_ms if e.ok else None
            if args.budget_s and time.time() - t0 > args.budget_s:
                print("budget reached: stopping", flush=True)
                break
    finally:
        ev.close()
    rows = []
    for (shape, base_json), t in times.items():
        base = json.loads(base_json)
        if t.get("base") and t.get("deep"):
            rows.append({"shape": shape, "kind": kind(base), "base": base, "ratio": t["base"] / t["deep"],
                         "base_ms": t["base"], "deep_ms": t["deep"]})
    (out / "pairs.json").write_text(json.dumps(rows, indent=1))
    by = defaultdict(list)
    for r in rows:
        by[r["kind"]].append(r["ratio"])
    if args.backend != "gpu":
        print("SIMULATED (the CPU test double's modelled times, not measurements)")
    print(f"{'kind':<24} {'pairs':>5} {'geomean base/deep':>17} {'min':>6} {'max':>6} {'deep slower by >2%':>18}")
    for k, g in sorted(by.items()):
        gm = math.exp(sum(map(math.log, g)) / len(g))
        print(f"{k:<24} {len(g):>5} {gm:>17.3f} {min(g):>6.3f} {max(g):>6.3f} {sum(x < 0.98 for x in g):>18}")


if __name__ == "__main__":
    main()

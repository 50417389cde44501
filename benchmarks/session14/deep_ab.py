"""Pipelines deeper than 7 stages as pairs (issue 13): the library's kernels on the shapes the hopper family
cannot reach run 6 to 16 stages (session14 run_b, ncu: nvjet 64x32 tiles with 16 stages on 64x4096x4096,
64x64 with 13 on 256x256x16384, 128x64 with 8 on 1024x256x16384). For every shape of the given sets, the
first PICKS hopper shortlist picks whose pipeline can go deeper than it is (up to 16 stages in 227 KB of
shared memory) against the same configuration with the deepest pipeline that fits, evaluated side by side in
one evaluator run, libraries in the same run, no racing. Prints the pairs by tile and split and writes them
as JSON (pairs.json).

With `--variant pair` (NEXT.md item 4, after `git apply benchmarks/session14/cluster_splitk.patch`): the
first PICKS split-K picks over L2 whose configuration is also valid as a multicast pair (CLUSTER_M=2: CTA
pairs on neighbouring M tiles sharing B), against that pair; the "stages" column then reads 2 (the pair).
With `--variant tma_store` (benchmarks/session15/NEXT.md): the first PICKS picks whose configuration is
also valid with TMA_STORE (the epilogue's chunks stored by TMA), against that configuration (two staging
tiles where they fit, else one, else one with fewer stages); the "stages" column then reads [staging tiles,
stages] of the variant. `--variant tma_store_fewer` pairs the picks where two staging tiles do not fit
at their stages with two tiles at the deepest pipeline that does fit, and `--variant multicast` the picks
that split nothing with the same picks as multicast pairs (CLUSTER_M=2) (both benchmarks/session16/NEXT.md).
`--variant one_cta_tma` pairs the 2-CTAs-per-SM picks with one persistent CTA per SM storing through two
staging tiles, `--variant wider_split` the split-K picks with a tile twice as large and twice the
splits, and `--variant cluster_split4` the picks that split nothing with a 4-CTA cluster adding K quarters
over DSMEM (all benchmarks/session17/NEXT.md).

    python benchmarks/session14/deep_ab.py --sets llm_layers grid125 --picks 3 --out /tmp/deep
"""
from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from pathlib import Path

from omegaconf import OmegaConf

from evo.archive import Archive
from evo.config import EvaluatorConfig
from evo.core.shapes import Shape, build_shape_set
from evo.core.summary import geomean
from evo.evaluation.evaluator import Evaluator
from evo.families import FAMILIES
from evo.families._family import ANY_SPLITS
from evo.families.hopper import _problem, deepest_fitting

CONF = Path(__file__).resolve().parents[2] / "conf" / "shapes"
DEEPEST = 16


def shapes_of(name: str) -> list[Shape]:
    c = OmegaConf.load(CONF / f"{name}.yaml")
    return build_shape_set(listed=list(c.get("list", [])), grid=list(c.get("grid", [])))


def deepest(p: dict) -> dict | None:
    return deepest_fitting(p, DEEPEST, p["STAGES"] + 1)


def pair(p: dict) -> dict | None:
    """p as a multicast pair (CLUSTER_M=2), where p is split-K over L2 and the pair is valid."""
    if p["CLUSTER_M"] != 1 or p["SPLIT_K"] == 1 or p["SPLIT_CLUSTER"]:
        return None
    q = dict(p, CLUSTER_M=2)
    return q if _problem(q) is None else None


def tma_store(p: dict) -> dict | None:
    """p with its epilogue's chunks stored by TMA (benchmarks/session15), where that is valid (whole plain
    tiles: no split, no tail split, not transposed): through two staging tiles a consumer (TMA_STORE=2) at
    p's stages, else one (TMA_STORE=1) at p's stages, else one with the deepest pipeline that fits beside
    it (the pairs' "stages" column gives the variant's). The winners on K = 256, 128x128 tiles at 2 CTAs
    per SM with 3 stages, take one staging tile at 3 stages."""
    if p["TMA_STORE"]:
        return None
    two = dict(p, TMA_STORE=2)
    return two if _problem(two) is None else deepest_fitting(dict(p, TMA_STORE=1), p["STAGES"])


def tma_store_fewer(p: dict) -> dict | None:
    """p with two staging tiles (TMA_STORE=2) and the deepest pipeline that fits beside them, only where
    they do not fit at p's stages (benchmarks/session16/NEXT.md): the K = 256 winners, 128x128 tiles at
    2 CTAs per SM with 3 stages, then run two tiles at 2 stages (one tile at 3 gained nothing)."""
    if p["TMA_STORE"] or _problem(dict(p, TMA_STORE=2)) is None:
        return None
    return deepest_fitting(dict(p, TMA_STORE=2), p["STAGES"] - 1)


def multicast(p: dict) -> dict | None:
    """p as a multicast pair (CLUSTER_M=2: two CTAs on neighbouring M tiles sharing B's loads), where p
    splits nothing and the pair is valid (benchmarks/session16/NEXT.md: the K = 256 shapes, where a
    tile's few k-steps make its loads and stores weigh most; pairs were measured no faster on 4096^3 and
    8192^3, benchmarks/seeds/multicast/)."""
    if p["CLUSTER_M"] != 1 or p["SPLIT_K"] > 1 or p["TAIL_SPLIT"] > 1 or p["STREAM_K"]:
        return None
    q = dict(p, CLUSTER_M=2)
    return q if _problem(q) is None else None


def one_cta_tma(p: dict) -> dict | None:
    """A 2-CTAs-per-SM pick as one persistent CTA per SM with two staging tiles (TMA_STORE=2, one tile's
    store overlapping the next tile's loads) and two consumers where the tile allows, at the deepest
    pipeline that fits (benchmarks/session17/NEXT.md item 2): what cuBLASLt's autotuned pick runs on
    16384x256x256, a persistent 128x128 tile over 132 CTAs, against our 128x128 winners at 2 CTAs an SM."""
    if p["CTAS_PER_SM"] != 2 or p["SPLIT_K"] > 1 or p["TAIL_SPLIT"] > 1 or p["STREAM_K"] or p["SWAP_AB"]:
        return None
    for consumers in (2, 1):
        q = deepest_fitting(dict(p, CTAS_PER_SM=1, PERSISTENT=1, TMA_STORE=2, CONSUMERS=consumers), DEEPEST, 2)
        if q is not None:
            return q
    return None


def wider_split(p: dict) -> dict | None:
    """A split-K pick over L2 with its tile doubled along its smaller side and twice the splits (the
    same CTA count; the other operand is read through L2 half as often), at the deepest pipeline that fits
    (benchmarks/session17/NEXT.md item 3: on 1024x256x16384 our split-K 4 over 64x128 tiles loads about
    192 MB through L2 for 40 MB of operands; the libraries pick split-K 4-8 over larger tiles)."""
    if p["SPLIT_K"] == 1 or p["SPLIT_CLUSTER"] or p["SWAP_AB"] or p["SPLIT_K"] * 2 not in ANY_SPLITS:
        return None
    grown = dict(p, BM=p["BM"] * 2) if p["BM"] <= p["BN"] else dict(p, BN=p["BN"] * 2)
    return deepest_fitting(dict(grown, SPLIT_K=p["SPLIT_K"] * 2), DEEPEST, 2)


def cluster_split4(p: dict) -> dict | None:
    """A pick that splits nothing, as a 4-CTA cluster adding its K quarters over DSMEM (SPLIT_CLUSTER=1,
    SPLIT_K=4), at the deepest pipeline that fits (benchmarks/session17/NEXT.md item 4: on 64x64x256 the
    library spreads the 64x64 output over 8 CTAs in 4-CTA clusters; our best runs it in 1 CTA, and the
    shortlist's cluster splits stop at 2)."""
    if p["SPLIT_K"] > 1 or p["TAIL_SPLIT"] > 1 or p["STREAM_K"] or p["SWAP_AB"] or p["CLUSTER_M"] > 1:
        return None
    return deepest_fitting(dict(p, SPLIT_CLUSTER=1, SPLIT_K=4, PERSISTENT=0, TMA_STORE=0), DEEPEST, 2)


VARIANTS = {"deep": deepest, "pair": pair, "tma_store": tma_store, "tma_store_fewer": tma_store_fewer,
            "multicast": multicast, "one_cta_tma": one_cta_tma, "wider_split": wider_split,
            "cluster_split4": cluster_split4}


def harness_args(doc: str, out: str) -> argparse.ArgumentParser:
    """The options every script on side_by_side takes (session 19's scripts use it): --out, --backend,
    --budget-s; the description is the docstring's first paragraph."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--out", default=out)
    ap.add_argument("--backend", default="gpu", help="simulated: a CPU dry run of the script (modelled times)")
    ap.add_argument("--budget-s", type=float, default=0, help="stop queueing results after this (0: none)")
    return ap


def side_by_side(jobs: list, archive_path: Path, script: str, args: argparse.Namespace):
    """Every (candidate, shape) of `jobs` evaluated in one evaluator run, recorded in `archive_path`
    (libraries in the same run, no racing, 3 replays of 10 ms, 2 correctness draws), yielded as the
    results arrive; queueing stops after `args.budget_s` (0: none)."""
    archive = Archive.open(archive_path)
    run = archive.start_run(kind="bench", config={"script": script, **vars(args)}, seed=0, backend=args.backend)
    cfg = EvaluatorConfig(backend=args.backend, draws=2, replays=3, target_replay_ms=10, cache_dir="/tmp/evo-cache")
    ev = Evaluator(cfg, archive=archive, run_id=run).start()
    t0 = time.time()
    try:
        for e in ev.evaluate(jobs, race=False):
            yield e
            if args.budget_s and time.time() - t0 > args.budget_s:
                print("budget reached: stopping", flush=True)
                return
    finally:
        ev.close()


def times_side_by_side(jobs: list, archive_path: Path, script: str, args: argparse.Namespace) -> tuple[dict, dict]:
    """side_by_side's results as ({(kernel id, shape): time in ms, None where not correct}, {shape: best
    library ms}), each failure printed as it arrives, and a SIMULATED line when not on the GPU."""
    times, lib = {}, {}
    for e in side_by_side(jobs, archive_path, script, args):
        times[(e.kernel_id, e.shape)] = e.time_ms if e.ok else None
        lib[e.shape] = e.best_library_ms
        if not e.ok:
            print(f"  {e.shape} {e.kernel_id}: {e.status.value} {str(e.error)[:200]}", flush=True)
    if args.backend != "gpu":
        print("SIMULATED (the CPU test double's modelled times, not measurements)")
    return times, lib


def kind(p: dict) -> str:
    split = ("split-K" if p["SPLIT_K"] > 1 and not p["SPLIT_CLUSTER"] else "cluster split" if p["SPLIT_K"] > 1
             else "tail split" if p["TAIL_SPLIT"] > 1 else "no split")
    return f"{p['BM']}x{p['BN']} {split}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", nargs="+", default=["llm_layers", "grid125"])
    ap.add_argument("--picks", type=int, default=3)
    ap.add_argument("--out", default="/tmp/deep")
    ap.add_argument("--backend", default="gpu", help="simulated: a CPU dry run of the script (modelled times)")
    ap.add_argument("--budget-s", type=float, default=0, help="stop queueing results after this (0: none)")
    ap.add_argument("--variant", default="deep", choices=list(VARIANTS))
    ap.add_argument("--shapes", nargs="+", default=None, help="these shapes (MxNxK) in place of --sets")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    fam = FAMILIES["hopper"]
    jobs, meta = [], {}
    shapes = [Shape.parse(x) for x in args.shapes] if args.shapes else [x for name in args.sets for x in shapes_of(name)]
    for shape in shapes:
        n = 0
        for p in fam.suggest(shape.M, shape.N, shape.K, limit=24):
            q = VARIANTS[args.variant](p)
            if q is None or not fam.candidate(q).declaration.supports(shape):
                continue
            a, b = fam.candidate(p), fam.candidate(q)
            jobs += [(a, shape), (b, shape)]
            label = {"deep": q["STAGES"], "pair": q["CLUSTER_M"], "multicast": q["CLUSTER_M"],
                     "one_cta_tma": (q["CONSUMERS"], q["STAGES"]),
                     "wider_split": (q["BM"], q["BN"], q["SPLIT_K"], q["STAGES"]),
                     "cluster_split4": (q["SPLIT_K"], q["STAGES"])}.get(
                args.variant, (q["TMA_STORE"], q["STAGES"]))
            meta.setdefault((a.id, shape), []).append((p, label, "base"))
            meta.setdefault((b.id, shape), []).append((p, label, "other"))
            n += 1
            if n == args.picks:
                break
    print(f"{len(jobs)} evaluations ({len(jobs) // 2} pairs)", flush=True)
    if not jobs:
        raise SystemExit("no pick has such a variant" + (": multicast pairs with split-K need "
                         "`git apply benchmarks/session14/cluster_splitk.patch` first" if args.variant == "pair" else ""))
    times: dict = defaultdict(dict)
    for e in side_by_side(jobs, out / "deep.sqlite", "deep_ab.py", args):
        for base, stages, which in meta[(e.kernel_id, e.shape)]:
            key = (str(e.shape), json.dumps(base, sort_keys=True), stages)
            times[key][which] = e.time_ms if e.ok else None
            times[key]["lib"] = e.best_library_ms
    rows = []
    for (shape, base_json, stages), t in times.items():
        base = json.loads(base_json)
        if t.get("base") and t.get("other"):
            rows.append({"shape": shape, "kind": kind(base), "base": base, "stages": stages, "ratio": t["base"] / t["other"],
                         "base_ms": t["base"], "other_ms": t["other"], "lib_ms": t.get("lib")})
    (out / "pairs.json").write_text(json.dumps(rows, indent=1))
    by = defaultdict(list)
    for r in rows:
        by[r["kind"]].append(r["ratio"])
    if args.backend != "gpu":
        print("SIMULATED (the CPU test double's modelled times, not measurements)")
    print(f"{'tile, split':<28} {'pairs':>5} {'geomean base/variant':>20} {'min':>6} {'max':>6} {'variant slower by >2%':>21}")
    for k, g in sorted(by.items(), key=lambda kv: -len(kv[1])):
        print(f"{k:<28} {len(g):>5} {geomean(g):>20.3f} {min(g):>6.3f} {max(g):>6.3f} {sum(x < 0.98 for x in g):>21}")


if __name__ == "__main__":
    main()

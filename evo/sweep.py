"""`evo sweep`: evaluate family genomes on a shape set, exhaustively, by seeded random sample, or
from each family's heuristic shortlist. With `sweep.sample=random` it is the random-search
baseline that the evolutionary search must beat at equal budget.

`sweep.budget` is the number of configurations evaluated per shape.
"""
from __future__ import annotations

import random
from collections import defaultdict

from archive import Archive
from archive.elites import cell_of, elites, offer
from evo.config import EvoConfig, as_dict
from evo.evaluation.evaluator import Evaluator
from evo.families import FAMILIES
from evo.kernel import Candidate
from evo.progress import Progress
from evo.shapes import Shape, build_shape_set
from evo.summary import bucket_table, format_bucket_table


#: picks taken from each family per round of a shortlist (the Hopper family wins most shapes)
SHORTLIST_SHARE = {"hopper": 3, "ampere": 1, "simt": 1}


def plan(families: list[str], shape: Shape, *, budget: int, sample: str, rng: random.Random,
         num_sms: int) -> list[Candidate]:
    """The configurations to evaluate on one shape (only those whose declaration supports it)."""
    if sample == "shortlist":  # the families' picks, best-ranked first, taken in turn
        picks = {f: FAMILIES[f].suggest(shape.M, shape.N, shape.K, num_sms, limit=2 * budget) for f in families}
        share = {f: SHORTLIST_SHARE.get(f, 1) for f in families}
        pool = [(f, p) for rank in range(budget) for f in families
                for p in picks[f][rank * share[f]:(rank + 1) * share[f]]]
    else:
        pool = [(f, p) for f in families for p in FAMILIES[f].all_valid]
        if sample == "random" and len(pool) > budget:
            rng.shuffle(pool)
    out = []
    for family, params in pool:
        cand = FAMILIES[family].candidate(params, operator=f"sweep_{sample}")
        if cand.declaration.supports(shape, num_sms=num_sms):
            out.append(cand)
        if len(out) >= budget:
            break
    return out


def run_sweep(c: EvoConfig, raw=None, *, log=print) -> dict:
    shapes = build_shape_set(listed=c.shapes.list, grid=c.shapes.grid)
    families = [c.family] if c.family else sorted(FAMILIES)
    from evo.preflight import preflight
    preflight(c)
    archive = Archive.open(c.archive.path)
    run_id = archive.start_run(kind="sweep", config=as_dict(raw), seed=c.search.seed, backend=c.evaluator.backend)
    ev = Evaluator(c.evaluator, archive=archive, run_id=run_id, log=log)
    try:
        ev.start()
        if c.evaluator.backend == "simulated":
            log("NOTE: evaluator=simulated: times are MODELLED by the CPU test double, not measured")
        rng = random.Random(c.search.seed)
        pairs = [(cand, s) for s in shapes for cand in plan(families, s, budget=c.sweep.budget,
                                                            sample=c.sweep.sample, rng=rng, num_sms=ev.num_sms)]
        log(f"sweep of {', '.join(families)} ({c.sweep.sample}, {c.sweep.budget} per shape): "
            f"{len(pairs)} evaluations on {len(shapes)} shapes, run {run_id} in {c.archive.path}")
        for cand, _ in pairs:  # compile everything ahead, on every core
            ev.prepare(cand)
        failures: dict[str, int] = defaultdict(int)
        progress = Progress(len(pairs), "sweep", enabled=c.search.progress)
        for e in ev.evaluate(pairs):
            if not e.ok:
                failures[str(e.status)] += 1
            offer(archive, run_id, cell_of(e.shape), e)
            progress.update(note=f"{e.shape} {e.status}")
        progress.close()
        best = {Shape(r["M"], r["N"], r["K"]): r for r in elites(archive, run_id)}
        for r in best.values():
            shape = Shape(r["M"], r["N"], r["K"])
            floor = ev.peaks(ev.devices[0].key).floor_ms(shape.flops, shape.min_bytes)
            r["roofline_fraction"] = floor / r["time_ms"]
        summary = bucket_table({s: best.get(s, {}) for s in shapes})
        log(format_bucket_table(summary))
        if failures:
            log("failures: " + ", ".join(f"{k} {v}" for k, v in sorted(failures.items())))
        archive.put_state(run_id, "summary", summary)
        archive.set_run_status(run_id, "finished")
        return {"run_id": run_id, "summary": summary, "failures": dict(failures)}
    except BaseException:
        archive.set_run_status(run_id, "failed")
        raise
    finally:
        ev.close()

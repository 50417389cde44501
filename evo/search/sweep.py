"""`evo sweep`: evaluate family genomes on a shape set, exhaustively, by seeded random sample, or
from each family's heuristic shortlist. With `sweep.sample=random` it is the random-search
baseline that the evolutionary search must beat at equal budget.

`sweep.budget` is the number of configurations evaluated per shape. A correct evaluation timed on a
throttled GPU is kept out of the best-per-shape cells (not re-measured); the summary says how many.
"""
from __future__ import annotations

import logging
import random
from collections import defaultdict
from typing import TYPE_CHECKING

from tabulate import tabulate

from evo.archive.elites import cell_of, elites, offer, throttled
from evo.archive.records import throttled_baselines
from evo.config import EvoConfig, as_dict
from evo.core.errors import ConfigError
from evo.core.kernel import Candidate
from evo.core.logs import RESULT, simulated_note
from evo.core.shapes import Shape, build_shape_set
from evo.core.signals import stop_signals_held
from evo.core.summary import bucket_table
from evo.families import FAMILIES
from evo.search.cost_model import CostModel, features
from evo.search.libraries_first import time_libraries_first
from evo.search.progress import Progress
from evo.search.session import recorded_session

if TYPE_CHECKING:
    from evo.archive import Archive
    from evo.evaluation.evaluator import Evaluator

log = logging.getLogger(__name__)


#: picks taken from each family per round of a shortlist (the Hopper family wins most shapes)
SHORTLIST_SHARE = {"hopper": 3, "skinny": 2, "ampere": 1, "simt": 1}
#: families a shortlist takes only where no other family it samples supports the shape: the CUDA-core
#: simt was never a shape's best in the H200 shortlist sweeps (238 shapes of grid125 and llm_layers;
#: at most 0.35 of the best), so its slots go to the tensor-core families' next picks
FALLBACK_ONLY = frozenset({"simt"})
#: families a shortlist takes only on some shapes: the mma.sync ampere family won 6 of the 100 grid125
#: shapes with M > 64, every one with K = 64, and lost every mid-M llm_layers shape to hopper by 2-20x
#: (benchmarks/families/mid_m_analysis.md), so above M = 64 its slot goes to hopper's next pick unless K is short
ONLY_WHERE = {"ampere": lambda shape: shape.M <= 64 or shape.K <= 128}


def sampled_families(families: list[str], shape: Shape) -> list[str]:
    """The families a shortlist (or the search's seeding) takes on a shape: those ONLY_WHERE allows
    there, or all of them where it allows none (asked for alone, a family is sampled)."""
    return [f for f in families if ONLY_WHERE.get(f, lambda _: True)(shape)] or families


#: with sweep.order=prior, the shortlist the prior chooses from: what a 24-pick sweep evaluates
PRIOR_POOL = 24


def plan(families: list[str], shape: Shape, *, budget: int, sample: str, rng: random.Random,
         num_sms: int, prior: CostModel | None = None) -> list[Candidate]:
    """The configurations to evaluate on one shape (only those whose declaration supports it). With a
    cost model (`prior`, sweep.order=prior) a shortlist's `budget` picks are the model's predicted
    fastest of the PRIOR_POOL-pick shortlist, fastest first."""
    if sample == "shortlist" and prior is not None:
        pool_plan = plan(families, shape, budget=max(budget, PRIOR_POOL), sample=sample, rng=rng, num_sms=num_sms)
        predicted = prior.predict([features(c, shape, num_sms=num_sms) for c in pool_plan])
        order = sorted(range(len(pool_plan)), key=lambda i: (predicted[i], i))  # ties: the heuristic's order
        return [pool_plan[i] for i in order[:budget]]
    if sample == "shortlist":  # the families' picks, best-ranked first, taken in turn
        taken = sampled_families(families, shape)
        picks = {f: FAMILIES[f].suggest(shape.M, shape.N, shape.K, num_sms, limit=2 * budget) for f in taken}
        share = {f: SHORTLIST_SHARE.get(f, 1) for f in families}
        pool = [(f, p) for rank in range(budget) for f in taken
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
        if len(out) >= budget and sample != "shortlist":  # a shortlist's pool is small: see it whole
            break
    if sample == "shortlist" and any(c.family not in FALLBACK_ONLY for c in out):
        out = [c for c in out if c.family not in FALLBACK_ONLY]
    return out[:budget]


def _prior_model(c: EvoConfig) -> CostModel | None:
    """The cost model that orders a shortlist (sweep.order=prior): the shipped prior, no measurements."""
    if c.sweep.order != "prior":
        return None
    if c.sweep.sample != "shortlist":
        raise ConfigError(f"sweep.order=prior orders a shortlist's picks: give sweep.sample=shortlist "
                          f"(sweep.sample={c.sweep.sample} has no ranking to reorder)")
    from evo.search import cost_prior  # here: `python -m evo.search.cost_prior` imports this module first
    prior = cost_prior.load()
    if prior is None:
        raise ConfigError(f"sweep.order=prior, but {cost_prior.PRIOR_PATH} is missing or fit to other features: "
                          f"rebuild it with `python -m evo.search.cost_prior ARCHIVE...`, or run with sweep.order=heuristic")
    pool = max(c.sweep.budget, PRIOR_POOL)
    same = (" (at this budget it takes every pick: only their order changes)" if c.sweep.budget >= PRIOR_POOL else "")
    on_double = (f"; on evaluator={c.evaluator.backend} its times are modelled, so this checks the plumbing, "
                 f"not the choice" if c.evaluator.backend != "gpu" else "")
    log.info(f"sweep.order=prior: each shape's {c.sweep.budget} picks are the cost model's predicted fastest of "
             f"its {pool}-pick shortlist{same}, by a prior fit to {prior.rows} measurements on {prior.gpu}{on_double}")
    return CostModel(prior=prior)


def run_sweep(c: EvoConfig, raw=None, *, families: list[str] | None = None) -> dict:
    """The sweep of `families` (default: `c.family`, or every family)."""
    shapes = build_shape_set(listed=c.shapes.list, grid=c.shapes.grid)
    families = families or ([c.family] if c.family else sorted(FAMILIES))
    prior = _prior_model(c)  # before the session: a setting it refuses costs no GPU start
    with recorded_session(c, kind="sweep", raw_config=as_dict(raw, fallback=c)) as s:
        ev, archive, run_id = s.evaluator, s.archive, s.run_id
        rng = random.Random(c.search.seed)
        if c.sweep.sample != "shortlist":  # the families' whole genomes are listed first: seconds, not silence
            article = "an" if c.sweep.sample[0] in "aeiou" else "a"
            log.info(f"planning {article} {c.sweep.sample} sweep of {len(shapes)} shape{'s' * (len(shapes) != 1)} "
                     f"over every valid configuration of {', '.join(families)} ...")
        plans = {shape: plan(families, shape, budget=c.sweep.budget, sample=c.sweep.sample, rng=rng,
                             num_sms=ev.num_sms, prior=prior) for shape in shapes}
        # rank-major: every shape's first pick, then every shape's second, ...: a sweep cut short has
        # spent its time on each shape's best-ranked configurations
        pairs = [(plans[shape][rank], shape) for rank in range(c.sweep.budget) for shape in shapes
                 if rank < len(plans[shape])]
        log.info(f"sweep of {', '.join(families)} ({c.sweep.sample}, {c.sweep.budget} per shape): "
                 f"{len(pairs)} evaluations on {len(shapes)} shape{'s' * (len(shapes) != 1)}")
        for cand, _ in pairs:  # compile everything ahead, on every core
            ev.prepare(cand)
        time_libraries_first(ev, shapes, progress=c.search.progress)  # on the GPU while those compile
        failures: dict[str, int] = defaultdict(int)
        kept_out = 0  # correct, but timed on a throttled GPU: not in the cells
        raced = 0  # timed with one replay: far slower than the shape's fastest so far
        progress = Progress(len(pairs), "sweep", enabled=c.search.progress)
        done = 0
        try:
            for e in ev.evaluate(pairs):
                if not e.ok:
                    failures[str(e.status)] += 1
                offer(archive, run_id, cell_of(e.shape), e)
                if e.ok and throttled(e):
                    kept_out += 1
                raced += e.raced(c.evaluator.replays)
                done += 1
                progress.update(note=f"{e.shape} {e.status}")
        except KeyboardInterrupt:  # stopped: what finished is in the archive; show its table before leaving
            with stop_signals_held():
                progress.close()
                summary = _summary(archive, run_id, ev, shapes)
                log.info(f"{simulated_note(c.evaluator.backend)}stopped after {done} of {len(pairs)} evaluations; "
                         "speedup of the best configuration per shape so far over the best library:\n"
                         + format_bucket_table(summary), extra=RESULT)
                archive.put_state(run_id, "summary", summary)
            raise
        progress.close()
        summary = _summary(archive, run_id, ev, shapes)
        log.info(f"{simulated_note(c.evaluator.backend)}speedup of the best configuration per shape over the best "
                 "library:\n"
                 + format_bucket_table(summary), extra=RESULT)
        if c.sweep.budget > 1:
            bench_also = (" evaluator=simulated" if c.evaluator.backend == "simulated" else "") + (
                " evaluator.pdl=true" if c.evaluator.pdl else "")  # timed as it was swept
            log.info(f"each shape's ratio is its fastest of up to {c.sweep.budget} kernel timings against the one "
                     f"stored timing of each library on that GPU: the best of many draws favours the kernels, and on "
                     f"small shapes a re-timing has read the same kernels faster than a sweep did (docs/timing.md, "
                     f"known gaps); `evo bench kernels_of={c.archive.path}{bench_also}` times each shape's best again beside "
                     f"the libraries, one timing each", extra=RESULT)
        if failures:
            log.info("failures: " + ", ".join(f"{k} {v}" for k, v in sorted(failures.items())))
        if raced:
            log.info(f"{raced} of {len(pairs)} evaluations were timed with one replay of {c.evaluator.replays}: over "
                     f"{c.evaluator.race_factor}x slower than their shape's fastest (evaluator.race_factor=0 times all alike)")
        if kept_out:
            log.warning(f"{kept_out} of {len(pairs)} evaluations were correct but timed on a throttled GPU: kept out "
                        f"of the cells, not re-measured")
        for d in ev.devices:  # each GPU keeps baselines of its own
            flattered = throttled_baselines(archive, d.key, shapes, c.evaluator.mode)
            if flattered:
                log.warning(f"{len(flattered)} of {len(shapes)} shapes have as their baseline on {d.key} a library "
                            "timed on a throttled GPU, so their ratios are flattered: " + "; ".join(
                                f"{s} ({lib} at {mhz:.0f} MHz)" for s, (lib, mhz) in flattered.items()))
        archive.put_state(run_id, "summary", summary)  # first: a stop during the check below loses nothing
        drift = _check_drift(ev, shapes, simulated_note(c.evaluator.backend))
        if drift:
            archive.put_state(run_id, "library_drift", drift)
        return {"run_id": run_id, "summary": summary, "failures": dict(failures), "throttled": kept_out,
                "raced": raced, "library_drift": drift}


#: libraries reading this much slower after a run's kernels than before them: the worker changed launch mode
DRIFT_WARN = 1.03


def _check_drift(ev: Evaluator, shapes: list[Shape], note: str) -> dict | None:
    """The libraries timed again after the kernels (Evaluator.library_drift, a few seconds), reported; a
    diagnostic of a finished sweep: a failure or Ctrl-C here skips it, and the sweep's results stand."""
    try:
        drift = ev.library_drift(shapes)
    except KeyboardInterrupt:
        log.warning("stopped while the libraries were timed again after the kernels: that check is skipped; the "
                    "sweep itself had finished and is stored")
        return None
    except Exception as e:  # noqa: BLE001 -- the sweep is done and stored; only its after-check failed
        log.warning(f"timing the libraries again after the kernels failed ({type(e).__name__}: {e}); the sweep's "
                    "results stand")
        return None
    if drift:
        _report_drift(drift, note)
    return drift


def _report_drift(drift: dict, note: str) -> None:
    """Say how the libraries read when timed again after the kernels (Evaluator.library_drift)."""
    gpu, shape, lib, then, now = drift["worst"]
    gpus = len(drift["per_gpu"])
    where = f" on GPU {drift['gpu']} (the largest of {gpus} GPUs)" if gpus > 1 else ""
    restarts = (f"; {drift['restarts']} worker restart(s) during the run returned a worker to its fresh mode, so "
                "a step before a restart does not show here" if drift.get("restarts") else "")
    told = (f"{note}the libraries, timed again alone after the kernels on the {len(drift['shapes'])} smallest "
            f"shapes, read {drift['ratio']:.3f}x their stored times{where} (geomean; {drift['pairs']} timings; most: "
            f"{lib} on {shape}, {then * 1e3:.2f} -> {now * 1e3:.2f} us{' on GPU ' + gpu if gpus > 1 else ''}"
            f"{restarts})")
    if drift["ratio"] >= DRIFT_WARN:
        log.warning(f"{told}: the GPU worker stepped into a slower launch mode during the run, which the kernels "
                    "timed after the step took and the libraries, timed first, did not; the ratios of small shapes "
                    "above are understated by up to that much (docs/timing.md, \"Two launch modes\")")
    elif drift["ratio"] <= 1 / DRIFT_WARN:
        log.warning(f"{told}: faster now than when first timed (a throttled GPU or another mode then; stored "
                    "times may come from an earlier run into this archive): the ratios above may be flattered")
    else:
        log.info(f"{told}: no change of launch mode showed", extra=RESULT)


def _summary(archive: Archive, run_id: int, ev: Evaluator, shapes: list[Shape]) -> list[dict]:
    """The bucket table of the run's best evaluation per shape (shapes without one count as uncovered),
    with each best's fraction of the first GPU's roofline floor."""
    best = {Shape(r["M"], r["N"], r["K"]): r for r in elites(archive, run_id)}
    for shape, r in best.items():
        floor = ev.peaks(ev.devices[0].key).floor_ms(shape.flops, shape.min_bytes)
        r["roofline_fraction"] = floor / r["time_ms"]
    return bucket_table({shape: best.get(shape, {}) for shape in shapes})


def format_bucket_table(rows: list[dict]) -> str:
    """The rows of `bucket_table` as a terminal table."""
    def f(x, spec=".3f"):
        return format(x, spec) if x is not None else "-"
    return tabulate([[r["bucket"], r["shapes"], r["covered"], f(r["geomean_speedup"]), f(r["min_speedup"], ".2f"),
                      f(r["max_speedup"], ".2f"), f(r["median_roofline"])] for r in rows],
                    headers=["FLOP bucket", "shapes", "covered", "geomean vs best lib", "min", "max", "median roofline"],
                    disable_numparse=True, colalign=("left",) + ("right",) * 6)

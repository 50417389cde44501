"""`evo compare`'s last step: every arm's per-shape best kernel timed again, side by side.

An arm's per-shape best is the fastest of many noisy measurements, so it reads faster than the
kernel is (the winner's curse), and more so for a search, which measures many near-copies of its
best kernel (a compile option that changes nothing, one more stage): on the H200 one kernel's time
varies by 0.45% (sd) between evaluations, and the best of ten draws of one kernel reads about 0.7%
fast. A search that "beats" a sweep by 1% could be doing nothing but drawing more often. So the
bests of every arm and seed (the shortlist's too) are evaluated again in one session, in
`compare.retime_rounds` rounds, each round in its own shuffled order, and each kernel's re-timed
time is the median of its rounds: a fresh measurement no selection has touched, for every arm alike.
Kept in `compare.out`/retime.sqlite (a later `compare.report_only=true` reads it back).
"""
from __future__ import annotations

import copy
import logging
import random
import statistics
from pathlib import Path

from evo.archive import Archive
from evo.archive.empty import no_kernels, other_run_with_kernels, run_label
from evo.archive.queries import elites, kernel_source, run_timings
from evo.config import EvoConfig
from evo.core.errors import ArchiveError
from evo.core.kernel import Candidate
from evo.core.shapes import Shape
from evo.search.session import recorded_session

log = logging.getLogger(__name__)

RETIME_ARCHIVE = "retime.sqlite"


def bests(path: Path) -> dict[Shape, Candidate]:
    """An arm's per-shape best kernel, from its archive."""
    a = Archive.open(path, create=False, readonly=True)
    try:
        run = a.last_run()
        if run is None:
            raise ArchiveError(f"{path} holds no run: nothing to take per-shape bests from")
        cells = elites(a, run["id"])
        if not cells:  # a self-test or bench recorded after the search: the search's cells, saying so
            other = other_run_with_kernels(a, run["id"])
            if other is None:
                raise ArchiveError(no_kernels(a, run, "archive elites"))
            log.info(f"{path}: {run_label(run)} has no kernels; taking the per-shape bests of {run_label(other)}")
            cells = elites(a, other["id"])
        return {Shape(e["M"], e["N"], e["K"]): Candidate(kernel_source(a, e["kernel_id"]), e["family"],
                                                         e["params_json"] or "{}", e["operator"] or "seed")
                for e in cells}
    finally:
        a.close()


def retime(c: EvoConfig, wanted: dict[tuple[str, Shape], Candidate]) -> dict[tuple[str, Shape], float]:
    """Time every (kernel, shape) of `wanted` again, `compare.retime_rounds` times in shuffled orders,
    in a session of its own recorded in `compare.out`/retime.sqlite; returns the median per pair
    (pairs that failed every round are left out)."""
    r = copy.deepcopy(c)
    r.archive.path = str(Path(c.compare.out) / RETIME_ARCHIVE)
    pairs = sorted(wanted.items(), key=lambda kv: (kv[0][1].M, kv[0][1].N, kv[0][1].K, kv[0][0]))
    rng = random.Random(c.search.seed)
    order = []
    for _ in range(c.compare.retime_rounds):
        turn = [(cand, shape) for (_, shape), cand in pairs]
        rng.shuffle(turn)
        order += turn
    log.info(f"compare: re-timing {len(pairs)} per-shape bests of every arm, {c.compare.retime_rounds} rounds "
             f"({len(order)} evaluations) in {r.archive.path}")
    with recorded_session(r, kind="retime") as s:
        for _ in s.evaluator.evaluate(order, measure_libraries=False, race=False):  # each recorded in the archive as it ends
            pass
        medians, _ = _medians(s.archive, s.run_id)
    return medians


def stored(out: Path, wanted: set[tuple[str, Shape]]) -> dict[tuple[str, Shape], float] | None:
    """The re-timed medians of the last finished re-timing in `out`, if it timed every pair wanted
    (a pair that failed there is left out of the medians, as `retime` leaves it)."""
    path = out / RETIME_ARCHIVE
    if not path.is_file():
        return None
    a = Archive.open(path, create=False, readonly=True)
    try:
        run = a.last_run("retime")
        if run is None or run["status"] != "finished":
            return None
        medians, tried = _medians(a, run["id"])
    finally:
        a.close()
    return medians if wanted <= tried else None


def _medians(a: Archive, run_id: int) -> tuple[dict[tuple[str, Shape], float], set[tuple[str, Shape]]]:
    """A re-timing run's median time per (kernel, shape) over its correct rounds, and every pair it tried."""
    times: dict[tuple[str, Shape], list[float]] = {}
    tried = set()
    for row in run_timings(a, run_id):
        key = (row["kernel_id"], Shape(row["M"], row["N"], row["K"]))
        tried.add(key)
        if row["status"] == "ok" and row["time_ms"]:
            times.setdefault(key, []).append(row["time_ms"])
    return {key: statistics.median(ts) for key, ts in times.items()}, tried

"""MAP-Elites cells keyed by shape: the best correct kernel per cell, and each cell's history.

A cell compares a GPU-independent objective: the speedup over the best library timed on the GPU
that ran the kernel (the same GPU, the same timing mode), so kernels timed on different GPUs of
a cluster compete fairly; the time decides only where a speedup is missing (no library timed).
On one GPU the two orders agree. Ties go to the smaller kernel id, so a cell's elite does not
depend on the order in which evaluations arrive.

An evaluation timed while the GPU was throttled (any of its timings flagged, see docs/timing.md)
is kept out of the cells: its time is not a fair one, whichever way it errs. What the cell made of
each correct evaluation is recorded in its row (`evaluations.cell_offer`), so reports can count
the evaluations kept out.
"""
from __future__ import annotations

import logging
from enum import IntEnum

from evo.archive.store import Archive, now
from evo.core.records import Evaluation
from evo.core.shapes import Shape

log = logging.getLogger(__name__)


class AddStatus(IntEnum):
    NOT_ADDED = 0
    IMPROVE_EXISTING = 1
    NEW = 2


#: values of `evaluations.cell_offer` (NULL: not offered, or not correct)
OFFER_NEW, OFFER_IMPROVED, OFFER_SLOWER, OFFER_THROTTLED = "new", "improved", "slower", "throttled"


def cell_of(shape: Shape) -> str:
    """The cell of a shape of the run's set: the shape itself ("MxNxK")."""
    return str(shape)


def throttled(e: Evaluation) -> bool:
    """Whether the timing that gives the evaluation's time (the fitness mode) ran on a throttled GPU;
    diagnostic modes measured beside it do not count."""
    t = e.timing
    return bool(t and t.throttled)


def offer(archive: Archive, run_id: int, cell: str, e: Evaluation) -> AddStatus:
    """Offer an evaluation to its cell: kept when correct, timed unthrottled and faster than the
    cell's elite. The decision on a correct evaluation is written to its row."""
    if not e.ok or e.time_ms is None:
        return AddStatus.NOT_ADDED
    with archive.transaction():
        if throttled(e):
            log.debug(f"{e.kernel_id[:12]} at {cell} was timed on a throttled GPU: kept out of the cell")
            _record(archive, e, OFFER_THROTTLED)
            return AddStatus.NOT_ADDED
        row = archive.db.execute("select time_ms, speedup, kernel_id from elites where run_id = ? and cell = ?",
                                 [run_id, cell]).fetchone()
        if row and not _beats(e, *row):
            _record(archive, e, OFFER_SLOWER)
            return AddStatus.NOT_ADDED
        archive._insert("elites", {
            "run_id": run_id, "cell": cell, "M": e.shape.M, "N": e.shape.N, "K": e.shape.K, "kernel_id": e.kernel_id,
            "evaluation_id": e.id, "time_ms": e.time_ms, "speedup": e.speedup, "updated_at": now()}, replace=True)
        count = archive.db.execute("select count(*) from evaluations where run_id = ?", [run_id]).fetchone()[0]
        archive._insert("elite_history", {"run_id": run_id, "cell": cell, "kernel_id": e.kernel_id,
                                          "time_ms": e.time_ms, "speedup": e.speedup, "evaluations_so_far": count,
                                          "at": now()})
        _record(archive, e, OFFER_IMPROVED if row else OFFER_NEW)
    return AddStatus.IMPROVE_EXISTING if row else AddStatus.NEW


def _beats(e: Evaluation, time_ms: float, speedup: float | None, kernel_id: str) -> bool:
    """Does `e` beat the cell's elite (its time, speedup and kernel)?"""
    assert e.time_ms is not None
    mine, theirs = (e.speedup, speedup) if e.speedup is not None and speedup is not None else (-e.time_ms, -time_ms)
    return mine > theirs or (mine == theirs and e.kernel_id < kernel_id)


def _record(archive: Archive, e: Evaluation, decision: str) -> None:
    if e.id is not None:
        archive.db.conn.execute("update evaluations set cell_offer = ? where id = ?", [decision, e.id])


def elites(archive: Archive, run_id: int) -> list[dict]:
    return list(archive.db.query("select * from elites where run_id = ? order by M, N, K", [run_id]))

"""MAP-Elites cells keyed by shape: the fastest correct kernel per cell, and each cell's history."""
from __future__ import annotations

from enum import IntEnum

from evo.archive.store import Archive, now
from evo.core.records import Evaluation
from evo.core.shapes import Shape


class AddStatus(IntEnum):
    NOT_ADDED = 0
    IMPROVE_EXISTING = 1
    NEW = 2


def cell_of(shape: Shape) -> str:
    """The cell of a shape of the run's set: the shape itself ("MxNxK")."""
    return str(shape)


def offer(archive: Archive, run_id: int, cell: str, e: Evaluation) -> AddStatus:
    """Offer an evaluation to its cell: kept when correct and faster than the cell's elite."""
    if not e.ok or e.time_ms is None:
        return AddStatus.NOT_ADDED
    with archive.transaction():
        row = archive.db.execute("select time_ms from elites where run_id = ? and cell = ?", [run_id, cell]).fetchone()
        if row and row[0] <= e.time_ms:
            return AddStatus.NOT_ADDED
        archive._insert("elites", {
            "run_id": run_id, "cell": cell, "M": e.shape.M, "N": e.shape.N, "K": e.shape.K, "kernel_id": e.kernel_id,
            "evaluation_id": e.id, "time_ms": e.time_ms, "speedup": e.speedup, "updated_at": now()}, replace=True)
        count = archive.db.execute("select count(*) from evaluations where run_id = ?", [run_id]).fetchone()[0]
        archive._insert("elite_history", {"run_id": run_id, "cell": cell, "kernel_id": e.kernel_id,
                                          "time_ms": e.time_ms, "speedup": e.speedup, "evaluations_so_far": count,
                                          "at": now()})
    return AddStatus.IMPROVE_EXISTING if row else AddStatus.NEW


def elites(archive: Archive, run_id: int) -> list[dict]:
    return list(archive.db.query("select * from elites where run_id = ? order by M, N, K", [run_id]))

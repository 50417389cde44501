"""Migration: the best individuals of each island are copied to its neighbours."""
from __future__ import annotations

from evo.islands.population import Island


def neighbours(i: int, n: int, topology: str) -> list[int]:
    if n < 2 or topology == "off":
        return []
    if topology == "ring":
        return [(i + 1) % n]
    if topology == "full":
        return [j for j in range(n) if j != i]
    raise ValueError(f"unknown migration topology {topology!r}")


def migrate(islands: list[Island], *, topology: str, migrants: int) -> int:
    """Send each island's best `migrants` to its neighbours (all sent before any is received)."""
    outgoing = [(isl.index, [m for m in isl.best(migrants)]) for isl in islands]
    moved = 0
    for src, people in outgoing:
        for dst in neighbours(src, len(islands), topology):
            island = islands[dst]
            arrivals = [p for p in people if p.shape in island.shapes]
            island.add([type(p)(p.kernel_id, p.shape, p.fitness) for p in arrivals])
            moved += len(arrivals)
    return moved

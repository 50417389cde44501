"""An island: a population of individuals (a kernel at its home shape, with its fitness)."""
from __future__ import annotations

import random
from dataclasses import dataclass, field

from evo.core.shapes import Shape


@dataclass
class Individual:
    kernel_id: str
    shape: Shape  # the shape it is evaluated (and selected) on
    fitness: float = 0.0  # speedup over the best library on `shape` (0 when incorrect)

    def to_json(self) -> dict:
        return {"kernel_id": self.kernel_id, "shape": str(self.shape), "fitness": self.fitness}

    @staticmethod
    def from_json(d: dict) -> Individual:
        return Individual(d["kernel_id"], Shape.parse(d["shape"]), d["fitness"])


def tournament(pool: list[Individual], k: int, rng: random.Random, size: int) -> list[Individual]:
    """k winners of tournaments of `size` aspirants drawn with replacement from `pool` (the fittest wins;
    ties: the first drawn). Our own few lines, drawing only from `rng`: no global state is touched."""
    winners = []
    for _ in range(k):
        aspirants = [rng.choice(pool) for _ in range(size)]
        winners.append(max(aspirants, key=lambda i: i.fitness))
    return winners


@dataclass
class Island:
    index: int
    shapes: list[Shape]  # the shapes this island works on
    family: str | None = None  # specialization: the family its seeds come from (None: all)
    members: list[Individual] = field(default_factory=list)
    capacity: int = 12
    tournament: int = 3

    def select(self, k: int, rng: random.Random, pool: list[Individual] | None = None) -> list[Individual]:
        """k parents by tournament among `pool` (default: the members)."""
        pool = pool or self.members
        return tournament(pool, k, rng, size=min(self.tournament, len(pool)))

    def best(self, k: int = 1) -> list[Individual]:
        return sorted(self.members, key=lambda i: -i.fitness)[:k]

    def add(self, newcomers: list[Individual]) -> None:
        """(mu + lambda): keep the best `capacity`, at most one individual per (kernel, shape)."""
        seen, kept = set(), []
        for ind in sorted(self.members + newcomers, key=lambda i: -i.fitness):
            key = (ind.kernel_id, ind.shape)
            if key not in seen:
                seen.add(key)
                kept.append(ind)
        self.members = kept[:self.capacity]

    def to_json(self) -> dict:
        return {"index": self.index, "shapes": [str(s) for s in self.shapes], "family": self.family,
                "members": [m.to_json() for m in self.members]}

    def load(self, d: dict) -> None:
        self.members = [Individual.from_json(m) for m in d["members"]]


def make_islands(n: int, shapes: list[Shape], *, specialize: str, families: list[str | None], capacity: int,
                 tournament: int) -> list[Island]:
    """n islands; with specialize=family each gets a family in turn, with =bucket a share of the shapes."""
    islands = []
    buckets = sorted({s.bucket for s in shapes}, key=lambda b: min(s.flops for s in shapes if s.bucket == b))
    for i in range(n):
        mine = shapes
        if specialize == "bucket" and len(buckets) > 1:
            mine_buckets = buckets[i % len(buckets)::n] if n < len(buckets) else [buckets[i % len(buckets)]]
            mine = [s for s in shapes if s.bucket in mine_buckets] or shapes
        family = families[i % len(families)] if specialize == "family" else None
        islands.append(Island(i, list(mine), family, capacity=capacity, tournament=tournament))
    return islands


def regroup(islands: list[Island], saved: dict[int, dict], measured: list[Individual]) -> str:
    """Load saved populations into `islands`, whose number may differ from what was saved (a resume
    with another `islands.n`); returns what changed, "" when nothing did.

    Island i takes saved population i (trimmed to its capacity, when `islands.population` shrank).
    Saved islands beyond the new number are dissolved: their members join every remaining island
    that works on their shape, each island keeping its best `capacity`. A new island starts with
    the best of `measured` (the run's evaluations so far) on its shapes, as if the other islands had
    sent it migrants; one with nothing measured on its shapes stays empty, makes no children, and
    fills through migration.
    """
    notes = []
    for isl in islands:
        if isl.index in saved:
            isl.load(saved[isl.index])
            if len(isl.members) > isl.capacity:
                isl.add([])
    gone = sorted(i for i in saved if i >= len(islands))
    for i in gone:
        members = [Individual.from_json(m) for m in saved[i]["members"]]
        for isl in islands:
            isl.add([Individual(m.kernel_id, m.shape, m.fitness) for m in members if m.shape in isl.shapes])
    if gone:
        notes.append(f"{len(gone)} island(s) removed, their members joined the remaining islands")
    new = [isl for isl in islands if isl.index not in saved]
    for isl in new:
        isl.add([Individual(m.kernel_id, m.shape, m.fitness) for m in measured if m.shape in isl.shapes])
    if new and saved:
        sizes = ", ".join(f"{isl.index}: {len(isl.members)}" for isl in new)
        notes.append(f"{len(new)} island(s) added, filled with the best kernels measured on their shapes ({sizes})")
    return "; ".join(notes)

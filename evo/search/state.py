"""The search's own state: a planned child, and the counters saved with every generation."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from evo.core.kernel import Candidate
from evo.core.shapes import Shape


@dataclass
class Plan:
    """A child to evaluate, and who made it."""
    island: int
    operator: str
    candidate: Candidate | None
    shape: Shape
    parent_fitness: float | None
    context: str
    failure: str = ""  # why the operator produced no candidate
    failure_kind: str = ""  # "unavailable" (the API, not the operator: no penalty), "no_edit", ...
    parents: list = field(default_factory=list)
    repair_depth: int = 0  # 0: a new child; n: the n-th repair attempt in a chain
    origin: str = ""  # a repair: the kernel whose child failed (what revert_gene reverts towards)
    duplicate: bool = False  # its (kernel, shape) was measured before this generation
    shape_best: float | None = None  # the speedup of the shape's fastest kernel when the child was planned
    declined: list[str] = field(default_factory=list)  # structural operators that had nothing to propose first
    repeated: list[str] = field(default_factory=list)  # structural operators whose child was a duplicate first


@dataclass
class SearchState:
    generation: int = 0
    spent: int = 0  # (kernel, shape) evaluations made by this run
    elapsed_s: float = 0.0
    failures: Counter = field(default_factory=Counter)
    stalled: int = 0  # generations in a row without a new evaluation
    repairs: list[dict] = field(default_factory=list)  # failed children waiting for a repair, oldest first
    repair_uses: int = 0  # repair operator uses so far
    screened_out: int = 0  # children the cost model kept from the GPU
    raced: int = 0  # evaluations timed with one replay: far slower than their shape's fastest (racing)
    finds: list[dict] = field(default_factory=list)  # changes that set new shape bests (replay_change draws them)

    def to_json(self) -> dict:
        return {"generation": self.generation, "spent": self.spent, "elapsed_s": self.elapsed_s,
                "failures": dict(self.failures), "stalled": self.stalled, "repairs": self.repairs,
                "repair_uses": self.repair_uses, "screened_out": self.screened_out,
                "raced": self.raced, "finds": self.finds}

    @staticmethod
    def from_json(d: dict) -> SearchState:
        return SearchState(d["generation"], d["spent"], d["elapsed_s"], Counter(d.get("failures", {})),
                           d.get("stalled", 0), list(d.get("repairs", [])), d.get("repair_uses", 0),
                           d.get("screened_out", 0), d.get("raced", 0), list(d.get("finds", [])))

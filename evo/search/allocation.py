"""Where the next evaluation goes: a bandit over shapes by expected gain.

Every shape is an arm. Its expected gain per evaluation is

    p(improve) * headroom + exploration

- `headroom`: how much there is left to win, in log time: half the gap to the floor plus half the
  gap to the best library (when behind it), capped. The floor is the roofline's, or a latency floor
  where that is longer (`search.latency_floor_us`, off by default: on the H200 it moved the quick
  preset's evaluations off 64x64x64, 68 of 173 -> 20 of 160, without better bests in that one A/B,
  benchmarks/session13/README.md).
- `p(improve)`: the recent progress, a discounted rate of evaluations that improved the shape's
  best by at least `MIN_GAIN` (Beta(1, 1) prior, so an untried shape starts at 1/2).
- `exploration`: a UCB term, so no shape is starved.

A shape without any correct kernel yet comes first (for its first `UNKNOWN_FIRST` evaluations; a
shape where nothing works must not swallow the budget either). Then, with `min_evaluations`
(`search.min_evaluations_per_shape`, off by default), a shape with fewer evaluations than that comes
before any shape by expected gain, the one with the fewest first. Within one generation each pick counts as a
try (without a win) at once, so the children of one generation spread over the shapes that pay.
The geomean over shapes weighs every shape's log gain equally, hence a plain sum of log gains.
The state is plain JSON, saved with the search and restored on resume.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from evo.core.shapes import Shape

DISCOUNT = 0.9  # per try on a shape: recent progress counts most
MIN_GAIN = 0.005  # a best improved by less than 0.5% is noise, not progress
HEADROOM_CAP = 1.0  # log time: at most e-fold is expected from one shape
EXPLORATION = 0.05
UNKNOWN_FIRST = 3  # evaluations a shape without a correct kernel goes first for (then: by expected gain)


@dataclass
class ShapeArm:
    tries: float = 0.0  # discounted
    wins: float = 0.0  # discounted
    best_ms: float | None = None
    speedup: float | None = None
    evaluations: int = 0  # undiscounted: how many went here

    def to_json(self) -> list:
        return [self.tries, self.wins, self.best_ms, self.speedup, self.evaluations]

    @staticmethod
    def from_json(d: list) -> ShapeArm:
        return ShapeArm(*d)


@dataclass
class ShapeAllocator:
    floor_ms: dict[Shape, float]  # roofline floor of each shape
    latency_floor_ms: float = 0.0  # no shape's headroom is counted below this (search.latency_floor_us)
    min_evaluations: int = 0  # a shape with fewer comes before any by gain (search.min_evaluations_per_shape)
    arms: dict[Shape, ShapeArm] = field(default_factory=dict)
    pending: dict[Shape, int] = field(default_factory=dict)  # picks of this generation not observed yet

    def __post_init__(self):
        for s in self.floor_ms:
            self.arms.setdefault(s, ShapeArm())

    def headroom(self, shape: Shape) -> float:
        a = self.arms[shape]
        if not a.best_ms:
            return HEADROOM_CAP
        roof = max(0.0, math.log(a.best_ms / max(self.floor_ms[shape], self.latency_floor_ms)))
        lib = max(0.0, -math.log(a.speedup)) if a.speedup else 0.0
        return min(HEADROOM_CAP, 0.5 * roof + 0.5 * lib)

    def gain(self, shape: Shape) -> float:
        """Expected log gain of one more evaluation on `shape`."""
        a = self.arms[shape]
        waiting = self.pending.get(shape, 0)
        if a.best_ms is None and a.evaluations < UNKNOWN_FIRST:  # nothing known yet: first, one pick at a time
            return 1e6 / (1 + a.tries + waiting)
        if a.evaluations + waiting < self.min_evaluations:  # below the floor: before any shape by gain
            return 1e3 / (1 + a.evaluations + waiting)
        total = sum(x.evaluations for x in self.arms.values()) + sum(self.pending.values())
        p = (a.wins + 1) / (a.tries + waiting + 2)
        return p * self.headroom(shape) + EXPLORATION * math.sqrt(math.log(total + 1) / (a.evaluations + waiting + 1))

    def pick(self, shapes: list[Shape]) -> Shape:
        """The shape of `shapes` with the highest expected gain (ties: the first), pending until observed."""
        best = max(shapes, key=self.gain)
        self.pending[best] = self.pending.get(best, 0) + 1
        return best

    def settle(self) -> None:
        """A new generation: picks never observed (children not evaluated) are forgotten."""
        self.pending.clear()

    def observe(self, shape: Shape, time_ms: float | None, speedup: float | None) -> bool:
        """One evaluation's result on `shape` (time None: not correct). Returns whether it improved
        the shape's best by at least MIN_GAIN."""
        a = self.arms.get(shape)
        if a is None:
            return False
        a.evaluations += 1
        a.tries = DISCOUNT * a.tries + 1
        if self.pending.get(shape):
            self.pending[shape] -= 1
        improved = time_ms is not None and (a.best_ms is None or time_ms < a.best_ms * (1 - MIN_GAIN))
        if time_ms and (a.best_ms is None or time_ms < a.best_ms):
            a.best_ms, a.speedup = time_ms, speedup
        a.wins = DISCOUNT * a.wins + (1.0 if improved else 0.0)
        return improved

    def share(self) -> dict[str, int]:
        """Evaluations per shape so far (for reports)."""
        return {str(s): a.evaluations for s, a in self.arms.items()}

    def to_json(self) -> dict:
        return {str(s): a.to_json() for s, a in self.arms.items()}

    def load(self, d: dict) -> None:
        for key, value in d.items():
            shape = Shape.parse(key)
            if shape in self.arms:
                self.arms[shape] = ShapeArm.from_json(value)

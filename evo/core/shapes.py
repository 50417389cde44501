"""Matrix shapes, shape sets and FLOP buckets.

A shape is (M, N, K) of C[M,N] = A[M,K] @ B[K,N]. Shape sets come from the `shapes` config
group: an explicit list of "MxNxK" strings, a cubic grid of sizes, or both. A listed entry may give
M as a range, "LO-HIxNxK" (a model's token counts at one weight): it stands for the points
`range_points(LO, HI)`, each searched as its own shape; `evo export` turns them back into a
dispatch table over M.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

from evo.core.errors import ShapeError

#: FLOP buckets used in every report: (label, low inclusive, high exclusive), in FLOP.
BUCKETS: tuple[tuple[str, float, float], ...] = (
    ("<1 GFLOP", 0.0, 1e9),
    ("1-10 GFLOP", 1e9, 1e10),
    ("10-100 GFLOP", 1e10, 1e11),
    ("0.1-1 TFLOP", 1e11, 1e12),
    (">=1 TFLOP", 1e12, math.inf),
)


@dataclass(frozen=True, order=True)
class Shape:
    M: int
    N: int
    K: int

    def __post_init__(self):
        for name in ("M", "N", "K"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ShapeError(f"{name} must be a positive integer, got {value!r}")

    @property
    def flops(self) -> int:
        return 2 * self.M * self.N * self.K

    @property
    def min_bytes(self) -> int:
        """Fewest bytes an fp16 GEMM must move: A and B read once, C written once."""
        return 2 * (self.M * self.K + self.K * self.N + self.M * self.N)

    @property
    def bucket(self) -> str:
        return flop_bucket(self.flops)

    def __str__(self) -> str:
        return f"{self.M}x{self.N}x{self.K}"

    @classmethod
    def parse(cls, text: str) -> Shape:
        parts = str(text).lower().replace("×", "x").split("x")
        if len(parts) != 3:
            raise ShapeError(f"shape {text!r} is not of the form MxNxK (e.g. 77x4096x4096)")
        try:
            return cls(*(int(p) for p in parts))
        except ValueError:
            raise ShapeError(f"shape {text!r} is not of the form MxNxK (e.g. 77x4096x4096)") from None


def range_points(lo: int, hi: int) -> list[int]:
    """The M values a range is searched at: both edges and every power of two between them.

    An exported kernel tuned at one point serves the Ms above the point below it, so edges and
    doubling steps keep every M within a factor of two of the M its kernel was tuned for."""
    if not 1 <= lo <= hi:
        raise ShapeError(f"M range {lo}-{hi} must satisfy 1 <= LO <= HI")
    inner = [1 << p for p in range(lo.bit_length(), hi.bit_length()) if lo < 1 << p < hi]
    return sorted({lo, *inner, hi})


def parse_shapes(text: str) -> list[Shape]:
    """One listed entry: "MxNxK", or "LO-HIxNxK" for an M range (its range_points)."""
    parts = str(text).lower().replace("×", "x").split("x")
    if len(parts) == 3 and "-" in parts[0].strip()[1:]:
        lo, _, hi = parts[0].strip().partition("-")
        try:
            n, k = int(parts[1]), int(parts[2])
            points = range_points(int(lo), int(hi))
        except ValueError:
            raise ShapeError(f"shape range {text!r} is not of the form LO-HIxNxK (e.g. 1-64x4096x4096)") from None
        return [Shape(m, n, k) for m in points]
    return [Shape.parse(text)]


def flop_bucket(flops: float) -> str:
    for label, low, high in BUCKETS:
        if low <= flops < high:
            return label
    raise AssertionError("buckets cover every non-negative count")


def grid_shapes(sizes: list[int]) -> list[Shape]:
    """Every (M, N, K) with each of M, N, K taken from `sizes`."""
    return [Shape(m, n, k) for m, n, k in itertools.product(sizes, repeat=3)]


def build_shape_set(*, listed: list[str], grid: list[int]) -> list[Shape]:
    """The shapes of a set, de-duplicated, in a stable order (listed first, then grid)."""
    shapes: list[Shape] = [s for entry in listed for s in parse_shapes(entry)] + grid_shapes(list(grid))
    if not shapes:
        raise ShapeError("the shape set is empty: give shapes.list (e.g. '[128x128x128]') or shapes.grid")
    seen: dict[Shape, None] = {}
    for s in shapes:
        seen.setdefault(s, None)
    return list(seen)


def log_cell(shape: Shape, *, bins_per_octave: int = 1) -> tuple[int, int, int]:
    """MAP-Elites cell of an arbitrary shape: each dimension binned on a log2 scale."""
    m, n, k = (int(math.floor(math.log2(d) * bins_per_octave)) for d in (shape.M, shape.N, shape.K))
    return m, n, k

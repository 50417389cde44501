"""Tables that summarise speedups by FLOP bucket (used by sweep, run and report)."""
from __future__ import annotations

import math
import statistics

from evo.core.shapes import BUCKETS, Shape


def geomean(values: list[float | None] | list[float]) -> float | None:
    values = [v for v in values if v and v > 0]
    return math.exp(sum(map(math.log, values)) / len(values)) if values else None


def bucket_table(best: dict[Shape, dict]) -> list[dict]:
    """best: shape -> {"speedup": x, "roofline_fraction": y}; one row per FLOP bucket plus 'all'."""
    rows = []
    for label, _, _ in BUCKETS + (("all", 0, 0),):
        items = [v for s, v in best.items() if label == "all" or s.bucket == label]
        if not items:
            continue
        speedups = [v.get("speedup") for v in items]
        rows.append({"bucket": label, "shapes": len(items),
                     "covered": sum(1 for x in speedups if x),
                     "geomean_speedup": geomean(speedups),
                     "min_speedup": min((x for x in speedups if x), default=None),
                     "max_speedup": max((x for x in speedups if x), default=None),
                     "median_roofline": _median([v.get("roofline_fraction") for v in items])})
    return rows


def _median(values: list) -> float | None:
    """The median of the known values (the mean of the middle two for an even count), or None."""
    known = [v for v in values if v]
    return statistics.median(known) if known else None

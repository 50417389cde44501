"""The run's random generator, saved with the search state (every draw of a search comes from
it, never from the process-global `random`, so its draws depend on its seed only)."""
from __future__ import annotations

import random


def rng_to_json(rng: random.Random) -> list:
    version, internal, gauss = rng.getstate()
    return [version, list(internal), gauss]


def rng_from_json(rng: random.Random, data: list) -> None:
    rng.setstate((data[0], tuple(data[1]), data[2]))

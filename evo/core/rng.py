"""The run's random generator: saved with the search state, and lent to DEAP for one call.

DEAP's operators draw from the module-level `random`. `with_rng` runs one DEAP call under our
generator's state and hands the advanced state back, so a search's draws depend on its seed only.
It swaps process-global state, so call it from the search's own thread only (never from the
threads that wait on LLM calls).
"""
from __future__ import annotations

import random
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")
_GLOBAL = threading.Lock()


def with_rng(rng: random.Random, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """fn(*args, **kwargs) with the global `random` temporarily set to `rng`'s state."""
    with _GLOBAL:
        saved = random.getstate()
        random.setstate(rng.getstate())
        try:
            return fn(*args, **kwargs)
        finally:
            rng.setstate(random.getstate())
            random.setstate(saved)


def rng_to_json(rng: random.Random) -> list:
    version, internal, gauss = rng.getstate()
    return [version, list(internal), gauss]


def rng_from_json(rng: random.Random, data: list) -> None:
    rng.setstate((data[0], tuple(data[1]), data[2]))

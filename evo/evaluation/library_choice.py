"""Which of a library's algorithms stands as its baseline (torch-free, so the CPU tests cover it).

cuBLASLt plans several algorithms for a shape. The "autotuned" baseline is the one that runs fastest
under evo's own timer (gpu_baselines screens each with one short replay); this module orders them by
those screening times and picks the first whose result passes the tolerance, so that a fast algorithm
with a wrong result costs the baseline its rank, not its existence.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class Screening:
    """Algorithm indices by screening time, fastest first, and what could not be screened."""
    order: list[int]
    failed: dict[int, str] = field(default_factory=dict)  # index -> the error's type and first line

    def summary(self, total: int) -> str:
        text = f"{len(self.order)} of {total} screened"
        if self.failed:
            first = next(iter(self.failed.values()))
            text += f", {len(self.failed)} could not be ({first})"
        return text


#: errors of our own code, not of an algorithm: they propagate, so that a bug cannot pass for a slow library
PROGRAMMING_ERRORS = (TypeError, AttributeError, NameError, KeyError, IndexError, AssertionError)


def _described(e: Exception) -> str:
    first = str(e).splitlines()[0][:120] if str(e) else ""
    return f"{type(e).__name__}: {first}".rstrip(": ")


def screen(count: int, time_one: Callable[[int], float]) -> Screening:
    """Order algorithms 0..count-1 by `time_one(i)` (ms; an error of the algorithm, or a time that is not
    a finite positive number, leaves it out, recorded; PROGRAMMING_ERRORS propagate). Ties keep the
    heuristic's order."""
    times: dict[int, float] = {}
    failed: dict[int, str] = {}
    for i in range(count):
        try:
            ms = time_one(i)
        except PROGRAMMING_ERRORS:
            raise
        except Exception as e:  # this algorithm's error (CUDA, cuBLASLt): the others still compete
            failed[i] = _described(e)
            continue
        if isinstance(ms, (int, float)) and math.isfinite(ms) and ms > 0:
            times[i] = float(ms)
        else:
            failed[i] = f"no time ({ms!r})"
    return Screening(sorted(times, key=lambda i: (times[i], i)), failed)


def first_correct(order: list[int], check: Callable[[int], str]) -> tuple[int | None, dict[int, str]]:
    """The first index of `order` whose `check` returns no reason, and the reasons of those before it
    (an algorithm whose check raises is rejected with the error; PROGRAMMING_ERRORS propagate)."""
    rejected: dict[int, str] = {}
    for i in order:
        try:
            reason = check(i)
        except PROGRAMMING_ERRORS:
            raise
        except Exception as e:
            reason = f"its check failed: {_described(e)}"
        if not reason:
            return i, rejected
        rejected[i] = reason
    return None, rejected

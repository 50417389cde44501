"""Worker side: where the time of one evaluation goes, step by step (off unless asked for).

`EVO_PROFILE=FILE` makes every GPU worker append one JSON line per evaluation to FILE: the shape,
the buffer sets and chunks of its timing, and per step (load, correctness draws, capture, refresh,
timed chunks, output checks, libraries, ...) how often it ran and its host seconds (time.perf_counter).
GPU work is queued asynchronously, so host seconds land on whichever step waits for the GPU next;
`EVO_PROFILE_SYNC=1` also waits for the worker's stream at the end of every step, so that each step
is charged its own GPU time (which serialises host and GPU: totals are then an upper bound, and
the kernel and library times the run archives are disturbed by it: profile into a scratch archive).
`benchmarks/search/throughput_profile.py` sums the lines per shape and step. Without EVO_PROFILE
every call here is a no-op: nothing is timed, nothing synchronised, nothing written.
Torch-free, so that the CPU tests cover it.
"""
from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

ENV_FILE = "EVO_PROFILE"
ENV_SYNC = "EVO_PROFILE_SYNC"


class Steps:
    """Per-step counts and seconds of one evaluation; `step(name)` times a block."""

    def __init__(self, path: str | None = None, sync: Callable[[], None] | None = None,
                 sync_steps: bool = False) -> None:
        self.path = path
        self.enabled = bool(path)
        self._sync = sync if (self.enabled and sync_steps) else None
        self.times: dict[str, list[float]] = {}  # name -> [count, seconds]
        self.info: dict = {}
        self._start = time.perf_counter()

    @classmethod
    def from_env(cls, sync: Callable[[], None] | None = None) -> Steps:
        return cls(os.environ.get(ENV_FILE) or None, sync, os.environ.get(ENV_SYNC, "") not in ("", "0"))

    @contextmanager
    def step(self, name: str) -> Iterator[None]:
        if not self.enabled:
            yield
            return
        t0 = time.perf_counter()
        try:
            yield
        finally:
            if self._sync is not None:
                self._sync()
            self.add(name, time.perf_counter() - t0)

    def add(self, name: str, seconds: float, count: int = 1) -> None:
        if self.enabled:
            entry = self.times.setdefault(name, [0, 0.0])
            entry[0] += count
            entry[1] += seconds

    def note(self, **info) -> None:
        """Facts about the evaluation (shape, sets, chunks, ...), written with its line."""
        if self.enabled:
            self.info.update(info)

    def record(self) -> dict:
        return {**self.info, "total_s": time.perf_counter() - self._start, "synced": self._sync is not None,
                "steps": {k: {"count": int(c), "s": s} for k, (c, s) in self.times.items()}}

    def write(self) -> None:
        """Append this evaluation's line to the profile file (one write, so concurrent workers'
        lines do not interleave)."""
        if not self.enabled or not self.path:
            return
        line = json.dumps(self.record()) + "\n"
        with open(self.path, "a") as f:
            f.write(line)


#: the evaluation in progress in this process (a disabled one between evaluations)
current = Steps()


def begin(sync: Callable[[], None] | None = None) -> Steps:
    """Start the steps of a new evaluation (disabled unless EVO_PROFILE is set)."""
    global current
    current = Steps.from_env(sync)
    return current


def step(name: str):
    """A block of the current evaluation, timed when profiling is on."""
    return current.step(name)

"""The libraries timed on every shape of a run before its first kernel, with a progress line.

A sweep and a search call this once they have planned their work and started its compiles (which run
on the CPU meanwhile). Library-only jobs in a worker that has not yet evaluated a kernel read the
libraries as `evo bench` and a user's process do; timed beside a shape's first kernel, as before
session 22, they took up to 15% longer on small shapes once the worker had run a few jobs (docs/timing.md,
"Two launch modes").
"""
from __future__ import annotations

import logging

from evo.core.shapes import Shape
from evo.evaluation.evaluator import Evaluator
from evo.search.progress import Progress

log = logging.getLogger(__name__)


def time_libraries_first(ev: Evaluator, shapes: list[Shape], *, progress: bool = True, retime_beside: bool = True) -> int:
    """Time the libraries where the archive has none timed alone (a library-only job) yet, or with
    `retime_beside` off (a resumed run) none at all; returns the (shape, GPU) pairs timed."""
    need = ev.shapes_without_libraries(shapes, retime_beside=retime_beside)
    if not need:
        return 0
    log.info(f"timing the libraries ({', '.join(ev.cfg.libraries)}) on {len(need)} shape{'s' * (len(need) != 1)} "
             f"first, before any kernel (docs/timing.md, \"Two launch modes\")")
    bar = Progress(len(need), "libraries", enabled=progress)
    try:
        return ev.time_libraries_first(need, on_shape=lambda s: bar.update(note=str(s)), retime_beside=retime_beside)
    finally:  # also on Ctrl-C: what follows starts on a line of its own
        bar.close()

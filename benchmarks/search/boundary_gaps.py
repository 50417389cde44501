"""Where a search's time between generations goes, on the CPU with the simulated evaluator.

    python benchmarks/search/boundary_gaps.py OUT_DIR [OVERRIDE ...]

runs `evo run +experiment=quick evaluator=simulated llm=none` (plus the overrides) in this process,
times every phase of Search.step() and the save/report after it, and prints per phase the total and
the median per generation. "gap" is the time from a generation's last evaluation result to the next
generation's first: what the GPU would wait on the host (and on compiling the first child).
OUT_DIR gets the archive and, with EVO_CACHE_DIR unset, a fresh compile cache (a cold run).
"""
from __future__ import annotations

import functools
import os
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

from evo.cli.hydra_app import compose
from evo.evaluation.evaluator import Evaluator
from evo.search import run_search
from evo.search.loop import Search

PHASES = ("_plans", "_make_children", "_check_children", "_screen", "_evaluate_children", "_fold", "_transfer",
          "save", "report")
spent: dict[str, list[float]] = defaultdict(list)
results: list[tuple[int, float]] = []  # (generation, when) of every evaluation result
generation = [0]
evaluate_started: list[tuple[int, float]] = []  # (generation, when) _evaluate_children began


def timed(name: str, fn):
    @functools.wraps(fn)
    def wrapper(self, *a, **kw):
        t0 = time.perf_counter()
        if name == "_evaluate_children":
            evaluate_started.append((self.state.generation, t0))
        try:
            return fn(self, *a, **kw)
        finally:
            spent[name].append(time.perf_counter() - t0)
            generation[0] = self.state.generation
    return wrapper


def noting_results(evaluate):
    @functools.wraps(evaluate)
    def wrapper(self, *a, **kw):
        for e in evaluate(self, *a, **kw):
            results.append((generation[0], time.perf_counter()))
            yield e
    return wrapper


def gaps() -> list[float]:
    """From each generation's last result to the next generation's first."""
    first, last = {}, {}
    for g, t in results:
        first.setdefault(g, t)
        last[g] = t
    return [first[g + 1] - last[g] for g in sorted(last) if g + 1 in first]


def to_first_result() -> list[float]:
    """From the start of a generation's _evaluate_children (its compiles start) to its first result."""
    first: dict[int, float] = {}
    for g, t in results:
        first.setdefault(g, t)
    return [first[g] - t for g, t in evaluate_started if g in first]


def main(out: str, overrides: list[str]) -> None:
    Path(out).mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("EVO_CACHE_DIR", str(Path(out) / "nvcc-cache"))
    for name in PHASES:
        setattr(Search, name, timed(name, getattr(Search, name)))
    Evaluator.evaluate = noting_results(Evaluator.evaluate)
    base = ["+experiment=quick", "evaluator=simulated", "llm=none",
            f"archive.path={Path(out) / 'search.sqlite'}"]
    t0 = time.perf_counter()
    run_search(*compose(base + overrides))
    wall = time.perf_counter() - t0
    g = gaps()
    print(f"wall {wall:.1f} s, {len(results)} evaluations, {len(g)} boundaries, gaps {sum(g):.1f} s "
          f"(median {statistics.median(g):.3f} s)")
    print(f"{'phase':<20} {'calls':>5} {'total s':>8} {'median ms':>10} {'max ms':>8}")
    for name in PHASES:
        v = spent[name]
        if v:
            print(f"{name:<20} {len(v):>5} {sum(v):>8.2f} {1e3 * statistics.median(v):>10.1f} {1e3 * max(v):>8.1f}")
    v = to_first_result()
    print(f"{'compile->1st result':<20} {len(v):>5} {sum(v):>8.2f} {1e3 * statistics.median(v):>10.1f} {1e3 * max(v):>8.1f}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])

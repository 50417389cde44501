"""How many kernels per second the driver's nvcc pool compiles, cold (an empty cache), by worker count:
the number to set beside a GPU's evaluations per second to see how many GPUs one driver keeps fed
with new kernels (cached kernels cost nothing to compile again).

    python3 benchmarks/cluster/compile_rate.py [N] [WORKERS,...]    (default: 48 kernels, 8,16,all cores)

Kernels: N distinct random configurations, half hopper and half ampere (the search's families),
a fresh set per worker count (no cache hits). Prints one line per worker count.
"""
import os
import random
import sys
import tempfile
import time

from evo.evaluation.compiler import Compiler
from evo.families import FAMILIES


def sources(n: int, rng: random.Random, seen: set) -> list[str]:
    out = []
    while len(out) < n:
        fam = FAMILIES["hopper" if len(out) % 2 == 0 else "ampere"]
        src = fam.render(fam.random(rng))
        if src not in seen:
            seen.add(src)
            out.append(src)
    return out


def main(n: int, counts: list[int]) -> None:
    rng, seen = random.Random(0), set()
    print(f"{'workers':>8} {'kernels':>8} {'seconds':>8} {'kernels/s':>10} {'failed':>7}   (cores here: {os.cpu_count()})")
    for w in counts:
        batch = sources(n, rng, seen)
        with tempfile.TemporaryDirectory() as cache:
            c = Compiler(cache_dir=cache, workers=w)
            t0 = time.perf_counter()
            results = c.compile_many(batch)
            dt = time.perf_counter() - t0
            c.close()
        failed = sum(1 for r in results if not r.ok)
        print(f"{w:>8} {n:>8} {dt:>8.1f} {n / dt:>10.2f} {failed:>7}", flush=True)


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 48
    counts = [int(x) for x in sys.argv[2].split(",")] if len(sys.argv) > 2 else [8, 16, os.cpu_count() or 1]
    main(n, counts)

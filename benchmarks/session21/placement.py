"""Session 21: do library timings depend on where their buffers land? torch.matmul on two shapes whose
library times differed by ~1 us (12%) between processes (sweep 8.8/8.0 us, bench 7.8/7.0 us; the same
algorithms, the same sets) while evo's kernels read the same in both. In one process, TimingSets are
allocated again and again after a padding allocation of a random size, and torch is timed as a graph over
the sets each time. Bimodal times within one process would point at buffer placement.
    python benchmarks/session21/placement.py
"""
import random
import sys

import torch

from evo.evaluation.gpu_buffers import TimingSets
from evo.evaluation.gpu_harness import GpuHarness
from evo.evaluation.gpu_timing import time_graph

h = GpuHarness()
random.seed(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
for M, N, K in [(256, 256, 4096), (64, 256, 16384), (4096, 1024, 256)]:
    times = []
    for trial in range(12):
        pad_mb = random.choice([0, 1, 2, 3, 5, 8, 64, 130, 257, 1000])
        pad = torch.empty(pad_mb << 20, dtype=torch.uint8, device="cuda") if pad_mb else None
        sets = TimingSets(h, M, N, K, ["rotating"])
        call = lambda i, s=sets: torch.matmul(s.A[i], s.B[i], out=s.C[i])  # noqa: E731
        t = time_graph(call, mode="rotating", launches=4 * sets.n, sets=sets.n, replays=5, stream=h.stream,
                       clock=h.clock).median_ms * 1000
        a = sets.A[0].data_ptr()
        times.append(t)
        print(f"{M}x{N}x{K} trial {trial:2d} pad {pad_mb:5d} MB  sets {sets.n}  A0 {a:#x} (mod 2MB {a % (2 << 20):#x})"
              f"  C0 {sets.C[0].data_ptr() % (2 << 20):#x}  torch {t:.2f} us", flush=True)
        del sets, pad
        torch.cuda.empty_cache()
    print(f"{M}x{N}x{K}: min {min(times):.2f} max {max(times):.2f} us", flush=True)

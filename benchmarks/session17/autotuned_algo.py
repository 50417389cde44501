"""Which cuBLASLt algorithm nvmath's autotuning picks on the shapes where it alone beats evo (issue 13):
on the K = 256 shapes of grid125 evo's best is within 2% of torch.matmul but 18% behind cuBLASLt
autotuned. Prints the picked algorithm's configuration (tile, stages, split-K, reduction, cluster, swizzle)
and its time over 200 calls (CUDA events, one buffer set: a hint, not evo's rotating-mode figure), beside
the first heuristic's. Under `ncu --nvtx --nvtx-include "picked/"` it also names the kernel.

    python3 benchmarks/session17/autotuned_algo.py 4096x1024x256 16384x256x256 ...
"""
import sys

import torch
from nvmath.linalg.advanced import Matmul


def describe(alg) -> str:
    out = []
    for name in ("algorithm_id", "tile", "stages", "split_k", "reduction_scheme", "cluster_shape", "cta_swizzling",
                 "inner_shape", "custom_option"):
        try:
            out.append(f"{name}={getattr(alg, name)}")
        except Exception as e:  # an attribute this algorithm does not report
            out.append(f"{name}=? ({type(e).__name__})")
    return " ".join(out)


def time_us(mm, stream, calls=200) -> float:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(20):
        mm.execute(stream=stream)
    start.record(stream)
    for _ in range(calls):
        mm.execute(stream=stream)
    end.record(stream)
    end.synchronize()
    return start.elapsed_time(end) * 1e3 / calls


stream = torch.cuda.current_stream()
for arg in sys.argv[1:]:
    M, N, K = map(int, arg.split("x"))
    a = torch.randn(M, K, device="cuda", dtype=torch.float16)
    b = torch.randn(K, N, device="cuda", dtype=torch.float16)
    mm = Matmul(a, b, stream=stream)
    algs = mm.plan(stream=stream)
    first = describe(algs[0])
    t_first = time_us(mm, stream)
    mm.autotune(iterations=10, stream=stream)
    picked = mm.algorithms[0] if hasattr(mm, "algorithms") else algs[0]
    t_picked = time_us(mm, stream)
    print(f"{arg}: {len(algs)} algorithms; heuristic {t_first:.2f} us: {first}")
    print(f"{arg}: autotuned {t_picked:.2f} us: {describe(picked)}", flush=True)
    torch.cuda.nvtx.range_push("picked")
    for _ in range(2):
        mm.execute(stream=stream)
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()

"""Session 21: why do timings depend on the run they are timed in? Across the archives of sessions 16-21
(`torch_across_runs.txt`) torch reads in two modes on at least 14 of 213 shapes, a constant 0.3-0.45 us
apart on small shapes and about 1 us on split-K ones (256x256x4096: 7.1 or 8.0-8.1 us), both cuBLASLt
rows moving with it. evo's kernels show the same shift drawn per evaluation: between llm_layers' sweep and
gap run, 423 of 911 kernel-shape pairs read over 0.25 us slower, shifted and unshifted kernels alternating
within a shape, while the libraries did not move (grid125's two runs: 13 of 961 pairs). Each evaluation
allocates its timing sets afresh (the worker empties torch's cache after each), so where they land is the
first suspect (step 5). Most run configurations repeat their mode: a libraries-only `evo bench` of
[64x64x256, 4096x1024x256, 64x256x16384, 256x256x4096, 64x1024x256, 64x256x1024] reads 256x256x4096 slow
in sessions 20 and 21 (8.07, 8.13 us), a standalone graph of torch reads it fast (7.1 us).

Here, in one process, on the GPU machine with evo installed:
1. torch as a plain graph over the timing sets on each of those shapes, before anything else;
2. the device's peaks measured as a worker does when it starts (`gpu_baselines.peaks`), then step 1 again:
   a change points at that start-up work;
3. the libraries measured as a worker measures them (`gpu_baselines.measure`, sealed timing), in the
   bench's shape order: does 256x256x4096 read slow as in the bench?
4. torch's CUDA kernels per call under torch.profiler (names, launches per call, mean duration) on
   256x256x4096 and 64x64x256 now, to compare between the modes (an extra kernel or launch per call?);
5. torch sealed on five allocations of each shape kept alive at once (each behind a padding allocation),
   then on the first allocation again: different times on different allocations point at placement;
6. step 3 again, later in the same process: a shape in the other mode means a later measurement is a
   new draw (then a sweep can time each library at several moments and keep the fastest).

    python benchmarks/session21/library_context.py
"""
import random

import torch

from evo.evaluation import gpu_baselines
from evo.evaluation.gpu_buffers import TimingSets
from evo.evaluation.gpu_harness import GpuHarness
from evo.evaluation.gpu_timing import time_graph

BENCH_ORDER = [(64, 64, 256), (4096, 1024, 256), (64, 256, 16384), (256, 256, 4096), (64, 1024, 256), (64, 256, 1024)]
REQ = {"modes": ["rotating"], "replays": 3, "target_replay_ms": 10}
LIBRARIES = ["torch", "cublaslt_heuristic", "cublaslt_autotuned"]


def torch_call(sets):
    return lambda i: torch.matmul(sets.A[i], sets.B[i], out=sets.C[i])


def graph_us(h, sets, hot: bool = False) -> float:
    """Rotating over every set, or (hot, added in session 22) set 0 alone: inputs in L2, one set's pages."""
    n = 1 if hot else sets.n
    return time_graph(torch_call(sets), mode="hot" if hot else "rotating", launches=min(4 * sets.n, 4000) if hot else 4 * sets.n,
                      sets=n, replays=5, stream=h.stream, clock=h.clock).median_ms * 1e3


def sealed_us(sets) -> float:
    (t,), _ = sets.time_all(torch_call(sets), REQ, verify=False)
    return t.median_ms * 1e3


def graphs(h, label: str) -> None:
    for M, N, K in BENCH_ORDER:
        sets = TimingSets(h, M, N, K, ["rotating"])
        print(f"[{label}] {M}x{N}x{K} torch graph {graph_us(h, sets):6.2f} us  hot {graph_us(h, sets, True):6.2f} us",
              flush=True)
        del sets
    torch.cuda.empty_cache()


def kernels_per_call(h, M: int, N: int, K: int, label: str, calls: int = 50) -> None:
    from torch.profiler import ProfilerActivity, profile
    sets = TimingSets(h, M, N, K, ["rotating"])
    call = torch_call(sets)
    with torch.cuda.stream(h.stream):
        call(0)
        h.stream.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for i in range(calls):
                call(i % sets.n)
            h.stream.synchronize()
    for e in prof.key_averages():
        total = getattr(e, "device_time_total", None) or getattr(e, "cuda_time_total", 0)
        if total:
            print(f"[{label}] {M}x{N}x{K} kernel {e.key[:90]:<90} {e.count / calls:4.1f}/call "
                  f"{total / max(1, e.count):7.2f} us", flush=True)
    del sets
    torch.cuda.empty_cache()


def main() -> None:
    h = GpuHarness()
    graphs(h, "1 fresh")
    peaks = gpu_baselines.peaks(h)
    print(f"peaks measured: {peaks}", flush=True)
    graphs(h, "2 after peaks")
    as_a_worker(h, "3 as a worker")
    for shape in ((256, 256, 4096), (64, 64, 256)):
        kernels_per_call(h, *shape, "4 profiler")
    rng = random.Random(0)
    for M, N, K in [(256, 256, 4096), (64, 256, 16384), (4096, 1024, 256), (64, 64, 256)]:
        kept = []
        for a in range(5):
            pad = torch.empty(rng.choice([1, 3, 37, 129, 515]) << 20, dtype=torch.uint8, device="cuda")
            sets = TimingSets(h, M, N, K, ["rotating"])
            kept.append((pad, sets))
            print(f"[5 placement] {M}x{N}x{K} allocation {a} sealed {sealed_us(sets):6.2f} us  "
                  f"graph {graph_us(h, sets):6.2f} us  hot {graph_us(h, sets, True):6.2f} us  A at {sets.A.data_ptr():#x}",
                  flush=True)
        print(f"[5 placement] {M}x{N}x{K} allocation 0 again sealed {sealed_us(kept[0][1]):6.2f} us  "
              f"graph {graph_us(h, kept[0][1]):6.2f} us  hot {graph_us(h, kept[0][1], True):6.2f} us", flush=True)
        del kept, pad, sets
        torch.cuda.empty_cache()
    as_a_worker(h, "6 as a worker again, later")


def as_a_worker(h, label: str) -> None:
    for M, N, K in BENCH_ORDER:
        for r in gpu_baselines.measure(h, M, N, K, LIBRARIES, ["rotating"], REQ, lambda s: None):
            t = f"{r.timing.median_ms * 1e3:6.2f} us" if r.timing else r.error[:80]
            print(f"[{label}] {M}x{N}x{K} {r.library:<20} {t}  {r.detail[:90]}", flush=True)
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()

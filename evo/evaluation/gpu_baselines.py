"""Worker side: the libraries timed beside a candidate, and the device's measured ceilings.

torch.matmul, cuBLASLt through nvmath-python with its first heuristic algorithm, and cuBLASLt with
the fastest of its planned algorithms as evo's own timer screens them ("autotuned"). Each is timed by
the same code (gpu_timing) on the same buffer sets as the kernels, and checked against the fp32
reference once. The checks of a kernel's timing run for the libraries too, their verdicts unread: on
an H200 with replays of 100 ms, torch.matmul timed without them ran at 1490-1610 MHz on 8192^3 and
16384x16384x4096, 6-11% slower than timed with them at 1955-1980 MHz
(benchmarks/session15/duty_cycle.py), which flattered every kernel's ratio there.
"""
from __future__ import annotations

import math
from collections.abc import Callable

import torch

from evo.core.records import LibraryResult, Peaks
from evo.evaluation import steps
from evo.evaluation.gpu_buffers import TimingSets, reference
from evo.evaluation.gpu_timing import time_events, time_graph
from evo.evaluation.tolerance import error_stats, verdict


def _torch_call(sets) -> Callable[[int], object]:
    return lambda i: torch.matmul(sets.A[i], sets.B[i], out=sets.C[i])


def describe_algorithm(algorithm) -> str:
    """What a cuBLASLt algorithm runs (tile, split-K, cluster, custom option), for the baselines' detail:
    the autotuned pick can differ from run to run, and where it beats evo the profile needs to know it."""
    parts = []
    for attr, label in (("tile", "tile"), ("split_k", "split-K"), ("cluster_shape", "cluster"),
                        ("custom_option", "option")):
        try:
            value = getattr(algorithm, attr)
        except Exception:  # an attribute this cuBLASLt does not report for this algorithm
            continue
        parts.append(f"{label} {'x'.join(map(str, value)) if isinstance(value, tuple) else value}")
    return ", ".join(parts) or "an algorithm that reports no configuration"


def _nvmath_call(sets, autotune: bool, stream, req: dict) -> tuple[Callable[[int], object], str]:
    """cuBLASLt through nvmath on the timing sets: its first heuristic algorithm, or with `autotune` the
    planned algorithm that ran fastest under evo's own timer (`_fastest`)."""
    from nvmath.linalg.advanced import Matmul
    mm = Matmul(sets.A[0], sets.B[0], stream=stream)
    algorithms = mm.plan(stream=stream)
    pick, how = 0, "first heuristic"
    if autotune and len(algorithms) > 1:
        pick = _fastest(sets, mm, algorithms, stream, req)
        how = f"fastest of them timed by evo ({SCREEN_MS:g} ms replay each), heuristic rank {pick + 1}"
    detail = f"{len(algorithms)} algorithms considered; {how}; runs {describe_algorithm(algorithms[pick])}"
    call = _execute(mm, sets, algorithms[pick], stream)
    return call, detail


# Each planned algorithm's screening replay. nvmath's own autotune times single launches with events,
# which on kernels of a few microseconds picked differently from run to run: cuBLASLt "autotuned" on the
# same shape measured 0.72-1.21x its time in the run before (grid125, sessions 19 and 20), which moved
# the best library, and every ratio to it, by up to 28%. One replay of evo's timer per algorithm (the
# kernels' own harness: same buffers and mode) picks the algorithm the library would be timed at best.
SCREEN_MS = 2.0


def _execute(mm, sets, algorithm, stream) -> Callable[[int], object]:
    outs = {}

    def call(i: int) -> None:
        mm.reset_operands(a=sets.A[i], b=sets.B[i], stream=stream)
        outs[i % 2] = mm.execute(algorithm=algorithm, stream=stream)  # keep the last results alive while written
    call.matmul = mm  # type: ignore[attr-defined]
    call.algorithm = algorithm  # type: ignore[attr-defined]
    return call


def _fastest(sets, mm, algorithms, stream, req: dict) -> int:
    """Index of the algorithm with the shortest screening replay in the first requested mode; an
    algorithm that fails to run or to time is skipped (the first heuristic one if all do)."""
    screen = {**req, "modes": req["modes"][:1], "replays": 1, "target_replay_ms": SCREEN_MS}
    best, best_ms = 0, math.inf
    for i, algorithm in enumerate(algorithms):
        try:
            timings, _ = sets.time_all(_execute(mm, sets, algorithm, stream), screen, verify=False)
        except Exception:  # not capturable or not runnable here: not a candidate
            torch.cuda.synchronize()
            continue
        if timings and timings[0].median_ms < best_ms:
            best, best_ms = i, timings[0].median_ms
    return best


def measure(harness, M: int, N: int, K: int, libraries: list[str], modes: list[str], req: dict,
            progress: Callable[[str], None]) -> list[LibraryResult]:
    results: list[LibraryResult] = []
    with steps.step("library timing sets (allocate, fill)"):
        # checked once before timing; the sets still build the checks' references, and the checks run
        # between chunks (verdicts unread), so that the GPU works as it does for a kernel
        sets = TimingSets(harness, M, N, K, modes)
    for lib in libraries:
        progress(f"baseline {lib}")
        with steps.step(f"library {lib}"):
            results += _measure_one(harness, sets, lib, modes, req)
    return results


def _measure_one(harness, sets, lib: str, modes: list[str], req: dict) -> list[LibraryResult]:
    """One library: its own result checked once, then timed like a kernel on the same sets."""
    detail = ""
    try:
        if lib == "torch":
            call = _torch_call(sets)
        else:
            call, detail = _nvmath_call(sets, lib == "cublaslt_autotuned", harness.stream, req)
        # check the library's own result once (a broken baseline would flatter every kernel)
        with torch.cuda.stream(harness.stream):
            sets.C[0].fill_(float("nan"))
            call(0)
            out = sets.C[0] if lib == "torch" else call.matmul.execute(  # type: ignore[attr-defined]
                algorithm=call.algorithm, stream=harness.stream)  # type: ignore[attr-defined]
            reason = verdict(error_stats(out.float(), reference(sets.A[0], sets.B[0])))
        if reason:
            return [LibraryResult(lib, m, "error", error=f"library result rejected: {reason}") for m in modes]
        try:
            timings, _ = sets.time_all(call, req, verify=False)
        except Exception as e:  # not capturable into a graph: time a loop with events instead
            torch.cuda.synchronize()
            timings, _ = sets.time_all(call, req, capturable=False, verify=False)
            detail += f"; timed without graphs ({type(e).__name__})"
        return [LibraryResult(lib, t.mode, "ok", timing=t, detail=detail) for t in timings]
    except Exception as e:
        return [LibraryResult(lib, m, "error", error=f"{type(e).__name__}: {e}"[:500]) for m in modes]


def _tensor_tflops(harness, n: int) -> float:
    """fp16 matmul rate at n x n x n on random data (the buffers are freed on return)."""
    with torch.cuda.stream(harness.stream):
        a = torch.randn(n, n, dtype=torch.float16, device="cuda")
        b = torch.randn(n, n, dtype=torch.float16, device="cuda")
        c = torch.empty(n, n, dtype=torch.float16, device="cuda")
    t = time_graph(lambda i: torch.matmul(a, b, out=c), mode="hot", launches=5, sets=1, replays=5,
                   stream=harness.stream, clock=harness.clock)
    return 2 * n ** 3 / (t.median_ms * 1e-3) / 1e12


def _copy_bandwidth_gbs(harness, nbytes: int = 1 << 32) -> float:
    """Device copy rate, bytes read + written (the buffers are freed on return)."""
    with torch.cuda.stream(harness.stream):
        x = torch.empty(nbytes // 2, dtype=torch.float16, device="cuda").normal_()
        y = torch.empty_like(x)
    # a plain loop: the copy is a memcpy node inside graphs, which measured slower than a copy kernel
    t = time_events(lambda i: y.copy_(x), mode="hot", launches=5, sets=1, replays=5, stream=harness.stream,
                    clock=harness.clock)
    return 2 * nbytes / (t.median_ms * 1e-3) / 1e9


def peaks(harness) -> Peaks:
    """Measured fp16 tensor-core rate (random data, best of two sizes) and copy bandwidth."""
    best_tflops = max(_tensor_tflops(harness, n) for n in (8192, 12288))
    bandwidth = _copy_bandwidth_gbs(harness)
    torch.cuda.empty_cache()
    return Peaks(tflops=best_tflops, bandwidth_gbs=bandwidth)

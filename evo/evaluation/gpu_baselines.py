"""Worker side: the libraries timed beside a candidate, and the device's measured ceilings.

torch.matmul, cuBLASLt through nvmath-python with its first heuristic algorithm, and cuBLASLt
after nvmath's autotuning. Each is timed by the same code (gpu_timing) on the same buffer sets
as the kernels, and checked against the fp32 reference once. The checks of a kernel's timing run for
the libraries too, their verdicts unread: on an H200 with replays of 100 ms, torch.matmul timed without
them ran at 1490-1610 MHz on 8192^3 and 16384x16384x4096, 6-11% slower than timed with them at 1955-1980
MHz (benchmarks/session15/duty_cycle.py), which flattered every kernel's ratio there.
"""
from __future__ import annotations

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


def _nvmath_call(sets, autotune: bool, stream) -> tuple[Callable[[int], object], str]:
    from nvmath.linalg.advanced import Matmul
    mm = Matmul(sets.A[0], sets.B[0], stream=stream)
    algorithms = mm.plan(stream=stream)
    if autotune:
        mm.autotune(iterations=10, stream=stream)
        algorithms = mm.algorithms if hasattr(mm, "algorithms") else algorithms
    detail = (f"{len(algorithms)} algorithms considered" + ("; autotuned (10 iterations)" if autotune else "; first heuristic")
              + f"; runs {describe_algorithm(algorithms[0])}")
    outs = {}

    def call(i: int) -> None:
        mm.reset_operands(a=sets.A[i], b=sets.B[i], stream=stream)
        outs[i % 2] = mm.execute(stream=stream)  # keep the last results alive while they are being written
    call.matmul = mm  # type: ignore[attr-defined]
    return call, detail


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
            call, detail = _nvmath_call(sets, lib == "cublaslt_autotuned", harness.stream)
        # check the library's own result once (a broken baseline would flatter every kernel)
        with torch.cuda.stream(harness.stream):
            sets.C[0].fill_(float("nan"))
            call(0)
            out = sets.C[0] if lib == "torch" else call.matmul.execute(stream=harness.stream)  # type: ignore[attr-defined]
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

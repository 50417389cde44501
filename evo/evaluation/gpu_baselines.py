"""Worker side: the libraries timed beside a candidate, and the device's measured ceilings.

torch.matmul, cuBLASLt through nvmath-python with its first heuristic algorithm, and cuBLASLt with
the fastest of its planned algorithms as evo's own timer screens them ("autotuned"). Each is timed by
the same code (gpu_timing) on buffer sets built as a kernel's are (an allocation of their own), and
checked against the fp32 reference once. The checks of a kernel's timing run for the libraries too,
their verdicts unread: on an H200 with replays of 100 ms, torch.matmul timed without them ran at
1490-1610 MHz on 8192^3 and 16384x16384x4096, 6-11% slower than timed with them at 1955-1980 MHz
(benchmarks/session15/duty_cycle.py), which flattered every kernel's ratio there.
"""
from __future__ import annotations

from collections.abc import Callable
from functools import partial

import torch

from evo.core.records import LibraryResult, Peaks
from evo.evaluation import library_choice, steps
from evo.evaluation.gpu_buffers import TimingSets, reference
from evo.evaluation.gpu_timing import time_events, time_graph
from evo.evaluation.tolerance import error_stats, verdict


def _torch_call(sets) -> Callable[[int], object]:
    return lambda i: torch.matmul(sets.a(i), sets.B[i], out=sets.C[i])


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


# How cuBLASLt's planned algorithms are screened. nvmath's own autotune times single launches with
# events, which on kernels of a few microseconds picked differently from run to run: cuBLASLt "autotuned"
# on the same shape measured 0.72-1.21x its time in the run before (grid125, sessions 19 and 20), which
# moved the best library, and every ratio to it, by up to 12.6%. Each algorithm here runs as a graph of
# one launch on each of the first SCREEN_SETS timing sets (at least 3 launches), replayed twice: graphs
# average out launch jitter, and without the sealed timing's refreshes and checks a screening costs a
# few graph replays, not a kernel's full timing. Only the chosen algorithm is then checked and timed
# like a kernel.
SCREEN_SETS = 256
SCREEN_REPLAYS = 2


def _cublaslt_calls(harness, sets, autotune: bool) -> list[tuple[Callable[[int], object], str]]:
    """cuBLASLt through nvmath on the timing sets, as (call, detail) in order of preference: its first
    heuristic algorithm, or with `autotune` every planned algorithm that could be screened, fastest first
    (library_choice.screen). Raises when none could be: an autotuned baseline that timed nothing would
    only be the heuristic's under another name."""
    from nvmath.linalg.advanced import Matmul
    stream = harness.stream
    # Planned on set 1, not 0: nvmath takes the algorithms' minimum operand alignment from the pointers it
    # plans with, and set i starts i x (one set's bytes) into the buffer, so set 1 is the least aligned of
    # all (where M x K or K x N is not a multiple of 8, less than 16 bytes). Planned on set 0, an algorithm
    # needing 16-byte alignment could then run on misaligned sets while timed, unchecked.
    first = min(1, sets.n - 1)
    mm = Matmul(sets.A[first], sets.B[first], stream=stream)
    algorithms = mm.plan(stream=stream)
    order, how = [0], "first heuristic"
    if autotune and len(algorithms) > 1:
        used = min(sets.n, SCREEN_SETS)
        screening = library_choice.screen(len(algorithms), partial(_screen_one, harness, sets, used, mm, algorithms))
        summary = screening.summary(len(algorithms))
        if not screening.order:
            raise RuntimeError(f"no cuBLASLt algorithm could be screened ({summary})")
        order, how = screening.order, f"fastest as graphs over {used} sets ({summary})"
    return [(_execute(mm, sets, algorithms[i], stream),
             f"{len(algorithms)} algorithms considered; {how}; heuristic rank {i + 1}; "
             f"runs {describe_algorithm(algorithms[i])}") for i in order]


def _screen_one(harness, sets, used: int, mm, algorithms, i: int) -> float:
    """Algorithm i's time per launch (ms) over one launch on each of the first `used` sets, in a graph,
    or as a plain loop where it cannot be captured (as the baseline itself would then be timed)."""
    call = _execute(mm, sets, algorithms[i], harness.stream)
    kw = dict(mode="screening", launches=max(3, used), sets=used, replays=SCREEN_REPLAYS, stream=harness.stream,
              clock=harness.clock)
    try:
        return time_graph(call, **kw).median_ms
    except library_choice.PROGRAMMING_ERRORS:
        raise
    except Exception:  # not capturable into a graph
        torch.cuda.synchronize()
        return time_events(call, **kw).median_ms


def _execute(mm, sets, algorithm, stream) -> Callable[[int], object]:
    outs = {}

    def call(i: int) -> None:
        mm.reset_operands(a=sets.a(i), b=sets.B[i], stream=stream)
        outs[i % 2] = mm.execute(algorithm=algorithm, stream=stream)  # keep the last results alive while written
    call.algorithm = algorithm  # type: ignore[attr-defined]
    call.outs = outs  # type: ignore[attr-defined]  # call(i)'s result is outs[i % 2] (nvmath returns it)
    return call


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
    """One library: its own result checked once, then timed like a kernel on the same sets. Of several
    candidate algorithms (cuBLASLt autotuned), the first whose result passes stands."""
    try:
        if lib == "torch":
            calls = [(_torch_call(sets), "")]
        else:
            calls = _cublaslt_calls(harness, sets, lib == "cublaslt_autotuned")
        # check the library's own result once (a broken baseline would flatter every kernel)
        pick, rejected = library_choice.first_correct(list(range(len(calls))),
                                                      lambda i: _check(harness, sets, lib, calls[i][0]))
        if pick is None:
            reason = next(iter(rejected.values()))
            return [LibraryResult(lib, m, "error", error=f"library result rejected: {reason}") for m in modes]
        call, detail = calls[pick]
        if rejected:
            detail += f"; {len(rejected)} faster algorithm(s) failed the tolerance"
        try:
            timings, _ = sets.time_all(call, req, verify=False)
        except Exception as e:  # not capturable into a graph: time a loop with events instead
            torch.cuda.synchronize()
            timings, _ = sets.time_all(call, req, capturable=False, verify=False)
            detail += f"; timed without graphs ({type(e).__name__})"
        return [LibraryResult(lib, t.mode, "ok", timing=t, detail=detail) for t in timings]
    except Exception as e:
        return [LibraryResult(lib, m, "error", error=f"{type(e).__name__}: {e}"[:500]) for m in modes]


def _check(harness, sets, lib: str, call) -> str:
    """The tolerance's reason to reject the library's result on set 0 (empty: it passes)."""
    with torch.cuda.stream(harness.stream):
        sets.C[0].fill_(float("nan"))
        call(0)
        out = sets.C[0] if lib == "torch" else call.outs[0]
        return verdict(error_stats(out.float(), reference(sets.a(0), sets.B[0]))) or ""


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

"""Worker side: the order of work in sealed (rotating-mode) timing, apart from the GPU calls.

One replay = `chunks` chunks; each chunk is, in this order on one stream: fresh inputs and NaN
outputs for every buffer set, the timed chunk (one launch per set between two events), and the
projection check of every set's output. Nothing in a replay waits for the GPU: the events' times
and the checks' verdicts stay on the GPU until the replay ends, where one synchronisation (the
elementwise check of one set) collects them all. So the host queues the next chunk's refresh and
check while the GPU runs the current one, instead of idling the GPU at every chunk's check.
Each check's verdicts are copied to host memory right after it is queued (to_host), before any later
chunk's launches run, and read from there: the kernels timed are untrusted, and one writing out of
bounds could otherwise overwrite an earlier chunk's verdict while it waits in device memory.
Libraries (verify=False: checked once before timing, and nvmath writes its own output) get the same
checks, their verdicts unread, so that the GPU does the same work between chunks for both.
Calls timed without graphs (libraries, launched one by one by the host) start every chunk from an
idle GPU: the host waits before the chunk's refresh, as sealed timing always did for them.
Every chunk is still refreshed before and verified after its timed launches, and the first failing
check (in chunk order; the elementwise check last) is the error reported, as before.
Torch-free, so that the CPU tests drive it with fakes (`gpu_timing.time_sealed` gives the GPU calls).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from evo.evaluation import steps


class SealedOps(Protocol):
    """What the loop needs: each call queues work on the timing stream and returns at once, except
    full_check and sync."""
    n: int  # buffer sets: launches per chunk
    graph: bool  # False: the chunk's launches are issued one by one by the host (no graph)

    def refresh(self) -> None: ...  # fresh random inputs and NaN outputs for every set

    def timed_chunk(self) -> Callable[[], float]: ...  # its milliseconds, readable after sync()

    def check(self) -> object: ...  # every set's projection verdict, left in device memory

    def to_host(self, verdict: object) -> Callable[[], str | None]: ...  # copy it to host memory; readable after sync()

    def full_check(self) -> str | None: ...  # one random set elementwise: waits for the GPU

    def sync(self) -> None: ...

    def clock(self) -> tuple[float, bool]: ...


def run_sealed(ops: SealedOps, *, chunks: int, replays: int, verify: bool,
               give_up_ms: float | None = None) -> tuple[list[float], list[tuple[float, bool]], str | None]:
    """Samples (ms per launch, one per replay), clock readings, and the first error (None: every
    timed output held). Stops after the first replay with an error, and after the first replay whose
    sample exceeds `give_up_ms` (racing: a kernel already far slower than the best on its shape
    gets one replay, not all of them; what it ran is verified as always)."""
    samples: list[float] = []
    clocks: list[tuple[float, bool]] = []
    for _ in range(replays):
        times, verdicts = [], []
        for _ in range(chunks):
            with steps.step("refresh"):
                if not ops.graph:  # launches issued from the host: start from an idle GPU, waited for
                    ops.sync()  # before the refresh, so the host's issue rate is timed as it always was
                ops.refresh()
            with steps.step("timed chunk"):
                times.append(ops.timed_chunk())
            with steps.step("check (projection)"):
                # to host memory before the next chunk's launches run (stream order), so that no
                # later launch can overwrite the verdict; it is read from there after the wait.
                # Without `verify` (a library) the checks run all the same, their verdicts unread:
                # the GPU then works alike between chunks for kernels and libraries, and so clocks alike
                verdict = ops.to_host(ops.check())
                if verify:
                    verdicts.append(verdict)
        with steps.step("check (elementwise) + wait"):
            full_error = ops.full_check()
            ops.sync()
            if not verify:
                full_error = None
        error = next((e for e in (v() for v in verdicts) if e), None) or full_error
        if error:
            return samples, clocks, error
        samples.append(sum(t() for t in times) / (chunks * ops.n))
        clocks.append(ops.clock())
        if give_up_ms is not None and samples[-1] > give_up_ms:
            break
    return samples, clocks, None


def contiguous_runs(indices: list[int], most: int) -> list[tuple[int, int, int]]:
    """(position in `indices`, first, end) of runs of consecutive indices, each at most `most` long,
    so that sets are taken as slices of the batched buffers, never as gathered copies."""
    runs: list[tuple[int, int, int]] = []
    for pos, i in enumerate(indices):
        if runs and runs[-1][2] == i and runs[-1][2] - runs[-1][1] < most:
            p, lo, _ = runs[-1]
            runs[-1] = (p, lo, i + 1)
        else:
            runs.append((pos, i, i + 1))
    return runs

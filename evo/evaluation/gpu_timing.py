"""Worker side: timing by CUDA-graph replay (hot, rotating) and by isolated launches (server).

One sample = one replay of a graph of `launches` back-to-back calls, timed with CUDA events on
the replay stream; the time per call is the sample / launches. The SM clock is read after every
sample so that throttled samples are flagged.
"""
from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable

import torch

from evo.core.records import Timing
from evo.evaluation import steps
from evo.evaluation.sealed import run_sealed


class ClockReader:
    """SM clock and slowdown reasons through NVML; a no-op where NVML is unavailable."""

    SLOWDOWN = 0x8 | 0x20 | 0x40 | 0x80  # HW slowdown, SW thermal, HW thermal, HW power brake

    def __init__(self, uuid: str):
        self.handle = None
        self.max_mhz = 0.0
        try:
            import pynvml
            pynvml.nvmlInit()
            self.nvml = pynvml
            self.handle = pynvml.nvmlDeviceGetHandleByUUID(uuid if uuid.startswith("GPU-") else f"GPU-{uuid}")
            self.max_mhz = float(pynvml.nvmlDeviceGetMaxClockInfo(self.handle, pynvml.NVML_CLOCK_SM))
        except Exception:  # no NVML: clocks are reported as 0 (unknown)
            self.handle = None

    def read(self) -> tuple[float, bool]:
        if self.handle is None:
            return 0.0, False
        try:
            mhz = float(self.nvml.nvmlDeviceGetClockInfo(self.handle, self.nvml.NVML_CLOCK_SM))
            get = getattr(self.nvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
                self.nvml.nvmlDeviceGetCurrentClocksThrottleReasons
            reasons = int(get(self.handle))
        except Exception:
            return 0.0, False
        return mhz, bool(reasons & self.SLOWDOWN) or (self.max_mhz > 0 and mhz < 0.85 * self.max_mhz)


def _summarise(mode: str, samples: list[float], launches: int, sets: int, clocks: list[tuple[float, bool]],
               method: str) -> Timing:
    med = statistics.median(samples)
    known = [c for c, _ in clocks if c > 0]
    return Timing(mode=mode, median_ms=med, spread=(max(samples) - min(samples)) / med if med > 0 else 0.0,
                  samples_ms=tuple(samples), launches=launches, buffer_sets=sets,
                  clock_mhz=sum(known) / len(known) if known else 0.0,
                  throttled=any(t for _, t in clocks), method=method)


def launches_for(estimate_ms: float, target_ms: float, sets: int, cap: int = 20000) -> int:
    """Graph length: about target_ms per replay, at least one pass over the buffer sets."""
    n = max(3, int(target_ms / max(estimate_ms, 1e-3)))
    n = max(n, sets)
    return min(max(n, 1), max(cap, sets))


def time_graph(call: Callable[[int], object], *, mode: str, launches: int, sets: int, replays: int,
               stream: torch.cuda.Stream, clock: ClockReader) -> Timing:
    """Capture `launches` calls (call(i) uses buffer set i % sets) into one graph and time replays."""
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.stream(stream):
        call(0)  # outside the capture: library handles, workspaces and lazy module loading happen here
        stream.synchronize()
        with torch.cuda.graph(graph, stream=stream):
            for i in range(launches):
                call(i % sets)
        graph.replay()  # warm-up
        stream.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        samples, clocks = [], []
        for _ in range(replays):
            start.record(stream)
            graph.replay()
            end.record(stream)
            end.synchronize()
            samples.append(start.elapsed_time(end) / launches)
            clocks.append(clock.read())
    del graph
    return _summarise(mode, samples, launches, sets, clocks, "graph")


def time_events(call: Callable[[int], object], *, mode: str, launches: int, sets: int, replays: int,
                stream: torch.cuda.Stream, clock: ClockReader) -> Timing:
    """Fallback for calls that cannot be captured: events around a loop of launches."""
    with torch.cuda.stream(stream):
        for i in range(min(launches, 3)):
            call(i % sets)
        stream.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        samples, clocks = [], []
        for _ in range(replays):
            start.record(stream)
            for i in range(launches):
                call(i % sets)
            end.record(stream)
            end.synchronize()
            samples.append(start.elapsed_time(end) / launches)
            clocks.append(clock.read())
    return _summarise(mode, samples, launches, sets, clocks, "events")


def _spin(stream: torch.cuda.Stream, us: float = 50.0) -> None:
    """Keep the GPU busy for a moment, so that work submitted next is queued before it can start
    (the start event then marks the first launch, not the host's submission latency)."""
    sleep = getattr(torch.cuda, "_sleep", None)
    if sleep is not None:
        with torch.cuda.stream(stream):
            sleep(int(us * 2000))  # cycles at ~2 GHz


def _timed_ms(run: Callable[[], None], stream: torch.cuda.Stream, start: torch.cuda.Event,
              end: torch.cuda.Event) -> float:
    """GPU time of the work `run` queues on `stream`, with the submission latency hidden (_spin)."""
    _spin(stream)
    start.record(stream)
    run()
    end.record(stream)
    end.synchronize()
    return start.elapsed_time(end)


def time_sealed(call: Callable[[int], object], sets, *, mode: str, chunks: int, replays: int,
                stream: torch.cuda.Stream, clock: ClockReader, capturable: bool = True,
                verify: bool = True, give_up_ms: float | None = None) -> tuple[Timing, str | None]:
    """Rotating-mode timing in which no launch can profit from an earlier one.

    One chunk = one launch on each of the `sets.n` buffer sets, captured as one graph. Before every
    chunk, outside the timed region, every set gets fresh random inputs and a NaN-poisoned output; after
    it, every set's output is verified (sets.queue_projection, and one set elementwise per replay;
    libraries, whose result was checked before timing and which may write elsewhere, pass verify=False:
    the checks still run, unread, so that the GPU's clock is alike for both). So every timed launch sees
    inputs no launch has seen before and writes into a poisoned buffer, and every timed output is
    checked: output reuse, input-fingerprint caches and launch-count tricks can neither pass nor gain. A
    sample is the mean time per launch over `chunks` chunks. The chunks of a replay are queued without
    waiting for the GPU (evo.evaluation.sealed; calls without graphs wait for an idle GPU before each
    chunk's refresh): their times and verdicts (each copied to host memory as soon as its check is
    queued) are read once, at the replay's end.
    `give_up_ms`: no replay after one whose sample exceeds it (racing, see run_sealed).
    Returns (timing, error or None)."""
    n = sets.n
    graph = torch.cuda.CUDAGraph() if capturable else None
    with torch.cuda.stream(stream):
        with steps.step("first launch"):
            call(0)  # outside the capture: library handles, workspaces and lazy module loading happen here
            stream.synchronize()
        if graph is not None:
            with steps.step("capture + instantiate"):
                with torch.cuda.graph(graph, stream=stream):
                    for i in range(n):
                        call(i)

        def chunk() -> None:
            if graph is not None:
                graph.replay()
            else:
                for i in range(n):
                    call(i)

        with steps.step("warm-up chunk (refresh, chunk, checks)"):
            sets.refresh()
            chunk()  # warm-up, verified like the rest
            stream.synchronize()
            # run for a library too (verdict unread): the checks' graphs are captured here, not in
            # the middle of its first timed replay
            error = sets.check_outputs(full=True)
            error = error if verify else None
        samples: list[float] = []
        clocks: list[tuple[float, bool]] = []
        if error is None:
            samples, clocks, error = run_sealed(_SealedOps(sets, chunk, stream, clock, graph is not None),
                                                chunks=chunks, replays=replays, verify=verify,
                                                give_up_ms=give_up_ms)
    if not samples:
        samples = [float("nan")]
    return _summarise(mode, samples, chunks * n, n, clocks, "graph" if capturable else "events"), error


class _SealedOps:
    """The GPU calls of a sealed replay (see evo.evaluation.sealed.run_sealed for their order)."""

    def __init__(self, sets, chunk: Callable[[], None], stream: torch.cuda.Stream, clock: ClockReader,
                 graph: bool):
        self.sets, self.n, self._chunk, self.stream, self._clock = sets, sets.n, chunk, stream, clock
        self.graph = graph

    def refresh(self) -> None:
        self.sets.refresh()

    def timed_chunk(self) -> Callable[[], float]:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        _spin(self.stream)  # without a graph, run_sealed waited for an idle GPU before the refresh
        start.record(self.stream)
        self._chunk()
        end.record(self.stream)
        return lambda: start.elapsed_time(end)

    def check(self):
        return self.sets.queue_projection()

    def to_host(self, verdict) -> Callable[[], str | None]:
        return self.sets.verdict_to_host(verdict)

    def full_check(self) -> str | None:
        return self.sets.check_elementwise()

    def sync(self) -> None:
        self.stream.synchronize()

    def clock(self) -> tuple[float, bool]:
        return self._clock.read()


def time_hot(call: Callable[[int], object], sets, *, launches: int, replays: int, stream: torch.cuda.Stream,
             clock: ClockReader, verify: bool = True) -> tuple[Timing, str | None]:
    """Hot mode: the same inputs every launch (in L2 where they fit), the output poisoned before every
    launch inside the graph; the poisoning alone is timed the same way and subtracted. Only the final
    output can be verified, so a kernel that caches results per input could look faster here: hot
    mode is a diagnostic, never the fitness."""
    poison = lambda: sets.C[0].fill_(float("nan"))  # noqa: E731
    full, alone = torch.cuda.CUDAGraph(), torch.cuda.CUDAGraph()
    with torch.cuda.stream(stream):
        sets.refresh(0)  # the final check's reference: these inputs, before any launch
        call(0)
        stream.synchronize()
        with torch.cuda.graph(full, stream=stream):
            for _ in range(launches):
                poison()
                call(0)
        with torch.cuda.graph(alone, stream=stream):
            for _ in range(launches):
                poison()
        full.replay()
        alone.replay()
        stream.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        samples, clocks = [], []
        for _ in range(replays):
            with_kernel, poison_only = (_timed_ms(g.replay, stream, start, end) for g in (full, alone))
            samples.append(max(with_kernel - poison_only, 1e-6) / launches)
            clocks.append(clock.read())
        full.replay()
        stream.synchronize()
    error = sets.check_outputs(full=True, indices=[0]) if verify else None
    del full, alone
    return _summarise("hot", samples, launches, 1, clocks, "graph"), error


def time_server(call: Callable[[int], object], *, sets: int, samples: int, gap_ms: tuple[float, float],
                stream: torch.cuda.Stream, clock: ClockReader, seed: int,
                before: Callable[[int], None] | None = None,
                after: Callable[[int], str | None] | None = None) -> tuple[Timing, str | None]:
    """Single calls separated by random idle gaps on the host, as a serving system issues them;
    `before(i)` prepares set i (fresh inputs, poisoned output) and `after(i)` verifies its output,
    both outside the timed region."""
    rng = random.Random(seed)
    times, clocks, error = [], [], None
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    with torch.cuda.stream(stream):
        call(0)
        stream.synchronize()
        for i in range(samples):
            k = (i + 1) % sets
            if before is not None:
                before(k)
                stream.synchronize()
            time.sleep(rng.uniform(*gap_ms) / 1e3)
            start.record(stream)
            call(k)
            end.record(stream)
            end.synchronize()
            times.append(start.elapsed_time(end))
            if i % 8 == 0:
                clocks.append(clock.read())
            if after is not None and (error := after(k)):
                break
    return _summarise("server", times, 1, sets, clocks, "events"), error

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


def time_graph(call: Callable[[int], None], *, mode: str, launches: int, sets: int, replays: int,
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


def time_events(call: Callable[[int], None], *, mode: str, launches: int, sets: int, replays: int,
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


def time_server(call: Callable[[int], None], *, sets: int, samples: int, gap_ms: tuple[float, float],
                stream: torch.cuda.Stream, clock: ClockReader, seed: int) -> Timing:
    """Single calls separated by random idle gaps on the host, as a serving system issues them."""
    rng = random.Random(seed)
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(samples)]
    clocks = []
    with torch.cuda.stream(stream):
        call(0)
        stream.synchronize()
        for i, (start, end) in enumerate(events):
            time.sleep(rng.uniform(*gap_ms) / 1e3)
            start.record(stream)
            call((i + 1) % sets)
            end.record(stream)
            if i % 8 == 0:
                clocks.append(clock.read())
        stream.synchronize()
    times = [s.elapsed_time(e) for s, e in events]
    return _summarise("server", times, 1, sets, clocks, "events")

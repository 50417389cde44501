"""The CPU test double of the GPU worker: same messages, modelled numbers, never measurements.

Every record it produces says backend="simulated" and its device is named "SIMULATED ...", so
its numbers cannot be mistaken for measured ones. Times follow a simple performance model of
the seed families (tile quantization, padding, pipeline depth, split-K), so that searches have
a landscape to climb in tests. Comments `// evo-sim: <behaviour>` in a source make the double
misbehave the way real bad kernels do (hang, fault, crash, incorrect, ...), to test containment.
"""
from __future__ import annotations

import hashlib
import math
import os
import re
import statistics
import time

from evo.core.compile_options import OptionError, with_options
from evo.core.records import (
    DeviceInfo,
    KernelResult,
    LibraryResult,
    Peaks,
    Status,
    Timing,
)
from evo.core.shapes import Shape
from evo.evaluation.faults import ContextLost
from evo.families.hopper import rounds

PEAKS = Peaks(tflops=790.0, bandwidth_gbs=4300.0, backend="simulated")
LIBRARY_EFFICIENCY = {"<1 GFLOP": 0.13, "1-10 GFLOP": 0.59, "10-100 GFLOP": 0.74, "0.1-1 TFLOP": 0.82,
                      ">=1 TFLOP": 0.83}
LIBRARY_FACTOR = {"torch": 1.0, "cublaslt_heuristic": 1.01, "cublaslt_autotuned": 0.99}
_DEFINE = re.compile(r"^\s*#define\s+(\w+)\s+(\d+)\s*$", re.M)
_MARKER = re.compile(r"//\s*evo-sim:\s*([\w-]+)")


def _noise(text: str, spread: float) -> float:
    h = int(hashlib.sha256(text.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
    return 1.0 + spread * (2 * h - 1)


def _unoptioned(source: str) -> str:
    """The source without its compile-options line: the model does not know what options do, so a
    kernel with options times like the same kernel without (not like a new kernel's random noise)."""
    try:
        return with_options(source, {})
    except OptionError:  # a line off the whitelist never compiles: nothing to model
        return source


def model_time_ms(source: str, shape: Shape, num_sms: int = 132) -> float:
    """Modelled kernel time: the roofline floor over an efficiency made of tile effects."""
    d = {k: int(v) for k, v in _DEFINE.findall(source)}
    if "wgmma" in source:
        base = 0.86
    elif "mma.sync" in source:
        base = 0.62
    else:
        base = 0.07
    bm, bn, split = d.get("BM", 64), d.get("BN", 64), d.get("SPLIT_K", 1)
    tm, tn = math.ceil(shape.M / bm), math.ceil(shape.N / bn)
    work = tm * tn * split
    # stream-K modelled as the finest tail split (it shares the last round out over every CTA)
    tail = 16 if d.get("STREAM_K") else d.get("TAIL_SPLIT", 1)
    waves, quantization, parts = rounds(work, d.get("CTAS_PER_SM", 1), tail, shape.K, num_sms)
    reduces = split > 1 or parts > 1  # ... and pays a split-K reduction
    padding = (shape.M * shape.N) / (tm * bm * tn * bn)
    stages = min(1.0, 0.3 + 0.1 * d.get("STAGES", 2))  # deeper pipelines help up to 7 stages
    k_per_cta = shape.K / split
    reuse = (bm * bn) / (bm * bn + 6000)  # bigger tiles re-read less
    startup = k_per_cta / (k_per_cta + 192)  # pipeline fill per tile
    eff = base * quantization * padding * stages * reuse * startup * _noise(_unoptioned(source), 0.03)
    compute = shape.flops / (PEAKS.tflops * 1e12 * max(eff, 1e-4))
    memory = shape.min_bytes * (1 + 0.5 * reduces) / (PEAKS.bandwidth_gbs * 1e9 * 0.8)
    return max(compute, memory) * 1e3 + 0.002 + 0.0005 * reduces


def library_time_ms(shape: Shape) -> float:
    """Modelled library time: compute at the bucket's efficiency, memory at 80% of the bandwidth,
    whichever is slower, plus a launch's few microseconds, as the model charges a kernel (without
    them a 64^3 library call took 0.04 us and a decode-sized one 0.13 of the roofline, so the test
    double printed "speedups" of 3.5x that no GPU shows)."""
    compute = shape.flops / (PEAKS.tflops * 1e12 * LIBRARY_EFFICIENCY[shape.bucket])
    memory = shape.min_bytes / (PEAKS.bandwidth_gbs * 1e9 * 0.8)
    return max(compute, memory) * 1e3 + 0.003


def _timing(mode: str, ms: float, key: str, race: dict | None = None) -> Timing:
    """Five modelled samples; with `race` (as GpuHarness takes it) one, when the first is slower
    than race["ms"] in race["mode"]."""
    factor = {"hot": 0.96, "rotating": 1.0, "server": 1.15}[mode]
    samples = tuple(ms * factor * _noise(f"{key}{mode}{i}", 0.01) for i in range(5))
    med = statistics.median(samples)
    if race and race.get("mode") == mode == "rotating" and samples[0] > race["ms"]:  # sealed timing only
        # one sample, as on a GPU; the modelled median, so that a kernel's time does not depend on
        # whether a faster one happened to finish first (searches on the double stay reproducible)
        samples = (med,)
    return Timing(mode=mode, median_ms=med, spread=(max(samples) - min(samples)) / med, samples_ms=samples,
                  launches=1 if mode == "server" else 100, method="simulated")


class AcceleratorError(Exception):
    """Stands for torch.AcceleratorError, which is not a RuntimeError."""


class SimulatedHarness:
    """Answers evaluate/peaks like GpuHarness, from the model above."""

    def __init__(self, device: str):
        self.info = DeviceInfo(name="SIMULATED H200 (test double, not a measurement)", uuid=f"sim-{device}",
                               num_sms=132, l2_bytes=60 * 2**20, smem_per_block_optin=232448, backend="simulated",
                               memory_bytes=141 * 10**9)

    def peaks(self) -> Peaks:
        return PEAKS

    def healthy(self) -> bool:
        return True

    def evaluate(self, req: dict, progress) -> dict:
        shape = Shape(*req["shape"])
        out: dict = {"libraries": []}
        if req.get("source") is not None:
            result = self._kernel(req["source"], shape, req, progress)
            out["kernel"] = result.to_json()
            if result.status != Status.OK:
                return out
        for lib in req.get("libraries", []):
            ms = library_time_ms(shape) * LIBRARY_FACTOR[lib]
            out["libraries"] += [LibraryResult(lib, m, "ok", timing=_timing(m, ms, f"{lib}{shape}"),
                                               backend="simulated").to_json() for m in req["modes"]]
        return out

    def _kernel(self, source: str, shape: Shape, req: dict, progress) -> KernelResult:
        gpu, launch = self.info.key, req.get("launch")
        markers = set(_MARKER.findall(source))

        def result(status: Status, error: str = "", **kw) -> KernelResult:
            return KernelResult(status, error, backend="simulated", gpu=gpu, launch=launch, **kw)

        progress("correctness draw 1")
        if "hang" in markers:
            time.sleep(3600)
        if "crash" in markers:
            os._exit(9)
        if "fault" in markers or ("fault-big-m" in markers and shape.M >= 256):
            raise ContextLost(result(Status.FAULT, "the kernel faulted: CUDA_ERROR_ILLEGAL_ADDRESS (simulated)"))
        if "launch-error" in markers:
            return result(Status.LAUNCH_ERROR, "the module could not be loaded or configured (simulated)")
        if "oob" in markers:
            return result(Status.MEMORY_VIOLATION, "wrote outside its buffers (a guard zone or an input changed) "
                          "(simulated)")
        if "incorrect" in markers or ("fp16acc" in markers and shape.K >= 512):
            return result(Status.INCORRECT, "normwise relative error 2.1e-03 exceeds 5e-04 (simulated)", max_rel_err=2.1e-3)
        if "slow" in markers:
            time.sleep(0.2)
        progress("timing")
        if "fault-timing" in markers:  # as torch reports a fault it notices late: not a RuntimeError
            raise AcceleratorError("CUDA error: an illegal memory access was encountered (simulated)")
        if "harness-bug" in markers:  # evo's own trouble, not a CUDA error
            raise ValueError("a bug in the harness (simulated)")
        ms = model_time_ms(source, shape, self.info.num_sms)
        timings = tuple(_timing(m, ms, _unoptioned(source), req.get("race")) for m in req["modes"])
        if "stateful" in markers:
            return result(Status.INCORRECT_AFTER_TIMING, "after repeated launches: NaN outputs (simulated)", timings=timings)
        return result(Status.OK, timings=timings, max_rel_err=2.1e-4, checks=req.get("draws", 3) + 1)

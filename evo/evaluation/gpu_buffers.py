"""Worker side: GPU buffers for one evaluation, shared by the harness and the library baselines.

`Guarded` puts a guard zone on each side of a matrix; `TimingSets` holds the buffer sets that
timing rotates over (one in hot mode, more than 3x L2 in rotating and server modes);
`reference` is the fp32-accumulated product every result is compared with.
Imported only inside GPU worker processes.
"""
from __future__ import annotations

import math
import os
import random
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

import torch

from evo.core.records import DeviceInfo
from evo.evaluation.gpu_timing import launches_for, time_events, time_graph, time_server
from evo.evaluation.tolerance import error_stats, verdict

if TYPE_CHECKING:
    from evo.evaluation.gpu_launch import LoadedKernel


class Harness(Protocol):
    """What the buffers need of the worker's harness: the device, its stream and clock reader."""
    info: DeviceInfo
    stream: Any
    clock: Any

GUARD_BYTES = 1 << 20
GUARD_BYTE = 0xA5
MAX_ROTATING_SETS = 8192


def fresh_generator() -> tuple[torch.Generator, int]:
    seed = int.from_bytes(os.urandom(6), "little")
    g = torch.Generator(device="cuda")
    g.manual_seed(seed)
    return g, seed


class Guarded:
    """A fp16 matrix inside one allocation with a guard zone on each side."""

    def __init__(self, rows: int, cols: int):
        n = rows * cols * 2
        self.raw = torch.empty(2 * GUARD_BYTES + n, dtype=torch.uint8, device="cuda")
        self.t = self.raw[GUARD_BYTES:GUARD_BYTES + n].view(torch.float16).view(rows, cols)
        self.front, self.back = self.raw[:GUARD_BYTES], self.raw[GUARD_BYTES + n:]

    def arm(self) -> None:
        self.front.fill_(GUARD_BYTE)
        self.back.fill_(GUARD_BYTE)

    def intact(self) -> bool:
        return bool((self.front == GUARD_BYTE).all()) and bool((self.back == GUARD_BYTE).all())


def reference(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """fp32-accumulated product (fp16 values are exact in fp32; TF32 is off in the worker)."""
    return torch.matmul(a.float(), b.float())


class TimingSets:
    """Buffer sets for timing: one for hot mode, enough for > 3x L2 in rotating and server modes."""

    def __init__(self, harness: Harness, M: int, N: int, K: int, modes: list[str]):
        self.h = harness
        set_bytes = 2 * (M * K + K * N + M * N)
        rotating = any(m in ("rotating", "server") for m in modes)
        self.n = min(MAX_ROTATING_SETS, max(2, math.ceil(3 * harness.info.l2_bytes / set_bytes))) if rotating else 1
        gen, _ = fresh_generator()
        with torch.cuda.stream(harness.stream):
            self.A = torch.empty(self.n, M, K, dtype=torch.float16, device="cuda").normal_(generator=gen)
            self.B = torch.empty(self.n, K, N, dtype=torch.float16, device="cuda").normal_(generator=gen)
            self.C = torch.empty(self.n, M, N, dtype=torch.float16, device="cuda")
        harness.stream.synchronize()
        self._args: dict = {}

    def args(self, kernel: LoadedKernel, i: int):
        if i not in self._args:
            self._args[i] = kernel.args(self.A[i].data_ptr(), self.B[i].data_ptr(), self.C[i].data_ptr(),
                                        self.A.shape[1], self.B.shape[2], self.A.shape[2])
        return self._args[i]

    def estimate_ms(self, call: Callable[[int], None]) -> float:
        s = self.h.stream
        with torch.cuda.stream(s):
            call(0)
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record(s)
            for i in range(3):
                call(i % self.n)
            end.record(s)
            end.synchronize()
        return start.elapsed_time(end) / 3

    def time_all(self, call: Callable[[int], None], req: dict, *, verify: Callable[[], str | None] | None = None,
                 capturable: bool = True):
        """Time `call` in every requested mode; rotating mode ends with a poisoned, verified replay."""
        h, timings, post_error = self.h, [], None
        est = self.estimate_ms(call)
        timer = time_graph if capturable else time_events
        for mode in req["modes"]:
            if mode == "server":
                timings.append(time_server(call, sets=self.n, samples=req.get("server_samples", 40),
                                           gap_ms=tuple(req.get("server_gap_ms", (0.05, 2.0))), stream=h.stream,
                                           clock=h.clock, seed=int.from_bytes(os.urandom(4), "little")))
                continue
            sets = 1 if mode == "hot" else self.n
            launches = launches_for(est, req.get("target_replay_ms", 20.0), sets)
            launches = math.ceil(launches / sets) * sets  # every set equally often
            timings.append(timer(call, mode=mode, launches=launches, sets=sets, replays=req["replays"],
                                 stream=h.stream, clock=h.clock))
            if mode == "rotating" and verify is not None:
                with torch.cuda.stream(h.stream):
                    self.C.fill_(float("nan"))
                    for i in range(self.n):
                        call(i)
                h.stream.synchronize()
                post_error = verify()
        return timings, post_error

    def verify_sample(self, M: int, N: int, K: int) -> str | None:
        """Check up to 3 randomly chosen buffer sets after a pass over all of them."""
        for i in random.Random(os.urandom(8)).sample(range(self.n), min(3, self.n)):
            with torch.cuda.stream(self.h.stream):
                stats = error_stats(self.C[i].float(), reference(self.A[i], self.B[i]))
            reason = verdict(stats)
            if reason:
                return f"after {self.n} back-to-back launches over rotating buffers, set {i}: {reason}"
        return None

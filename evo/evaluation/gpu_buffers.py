"""Worker side: GPU buffers for one evaluation, shared by the harness and the library baselines.

`Guarded` puts a guard zone on each side of a matrix; `TimingSets` holds the buffer sets that
timing rotates over (one in hot mode, more than 3x L2 in rotating and server modes);
`reference` is the fp32-accumulated product every result is compared with; `projection_verdicts`
checks every timed output by a random projection read from the fp16 buffers (fp32 sums, no fp32 copies).
Imported only inside GPU worker processes.
"""
from __future__ import annotations

import math
import os
import random
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

import torch

from evo.core.records import DeviceInfo
from evo.evaluation import steps
from evo.evaluation.gpu_timing import launches_for, time_hot, time_sealed, time_server
from evo.evaluation.sealed import contiguous_runs
from evo.evaluation.tolerance import ELEM_ATOL_RMS, ELEM_RTOL, error_stats, verdict

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
TIMING_BYTES = 1 << 30  # timing buffers up to 1 GiB: more sets, fewer pauses between timed chunks
PROJECTION_BYTES = 1 << 28  # working memory of one group of the projection check
PROJECTION_CHUNK = 1 << 22  # elements of C per fp32 slice for the tolerance terms (16 MiB: stays in L2)
PROJECTION_SIGMAS = 6.0
PROJECTION_Y_EXP = 14  # y = B x is scaled per set to below 2**14 before its split into two fp16 parts


class Projection(NamedTuple):
    """A queued projection check: per chosen set, its rows beyond the tolerance and whether any of
    its outputs is NaN, in device memory until verdict_to_host copies them out."""
    chosen: list[int]
    rows: torch.Tensor  # int32, one per chosen set
    nans: torch.Tensor  # bool, one per chosen set


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


def _mm16(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Batched a @ b of fp16 operands with exact products and fp32 sums, as fp32. On CUDA with the
    operands as they are (bmm's out_dtype, torch >= 2.8); elsewhere (the CPU tests) through fp32 copies."""
    if a.is_cuda:
        return torch.bmm(a, b, out_dtype=torch.float32)
    return torch.bmm(a.float(), b.float())


def _split16(y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """fp32 y (sets x K) as fp16 parts (sets x K x 2) whose sum is y * 2**p, p per set (sets x 1).
    p puts each set's largest finite |y| in [2**13, 2**14), so neither part overflows; the parts
    hold y to 2**-22 |y_k| + 2**-38 max|y| (fp16 rounds to 2**-11 relative, 2**-25 absolute below
    its normal range; y * 2**p - hi is exact in fp32). Non-finite y stays non-finite."""
    biggest = torch.where(torch.isfinite(y), y.abs(), 0.0).amax(dim=1, keepdim=True)
    p = (PROJECTION_Y_EXP - torch.frexp(biggest).exponent).clamp_(-100, 100)
    scaled = torch.ldexp(y, p)
    hi = scaled.half()
    return torch.stack((hi, (scaled - hi.float()).half()), dim=2), p


def projection_terms(A: torch.Tensor, B: torch.Tensor, C: torch.Tensor,
                     x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per row of every set (sets x M, fp32): |C x - A (B x)|, sigma, and the row's sum of squares.
    A (sets x M x K), B (sets x K x N), C (sets x M x N) and x (N) are fp16, so every product is exact
    in fp32 and only the fp32 sums round, as in an fp32 computation; A (B x) takes B x split in two
    fp16 parts (_split16). sigma is what each element's allowed error (ELEM_RTOL |c| + ELEM_ATOL_RMS
    rms, tolerance.py) gives the row's projection with errors of random sign: sqrt(sum_j allowed^2
    x_j^2), expanded as R^2 (c^2 @ xx) + a (2 R (|c| @ xx) + a sum(xx)) with a = ELEM_ATOL_RMS rms,
    from fp32 slices of C of PROJECTION_CHUNK elements. The sum of squares is NaN where the row has a
    NaN and +Inf where it has an Inf (all its terms are non-negative)."""
    sets, M, N = C.shape
    K = A.shape[2]
    xcol = x.view(1, N, 1)
    got = _mm16(C.reshape(1, sets * M, N), xcol).view(sets, M)
    y = _mm16(B.reshape(1, sets * K, N), xcol).view(sets, K)
    parts, p = _split16(y)
    want = torch.ldexp(_mm16(A, parts).sum(dim=2), -p)
    xx = x.float().square()
    w = torch.stack((xx, torch.ones_like(xx)), dim=1)  # c^2 @ w: the row's c^2 @ xx and sum of squares
    flat = C.reshape(sets * M, N)
    s1 = torch.empty(sets * M, 1, device=C.device)
    s2 = torch.empty(sets * M, 2, device=C.device)
    step = max(1, PROJECTION_CHUNK // N)
    buf = torch.empty(min(step, sets * M), N, device=C.device)
    for r0 in range(0, sets * M, step):
        r1 = min(r0 + step, sets * M)
        c = buf[:r1 - r0]
        c.copy_(flat[r0:r1]).abs_()
        torch.mm(c, xx.view(N, 1), out=s1[r0:r1])
        torch.mm(c.square_(), w, out=s2[r0:r1])  # c^2 is exact in fp32
    sq = s2[:, 1].view(sets, M)
    a = ELEM_ATOL_RMS * (sq.sum(dim=1, keepdim=True) / (M * N)).sqrt()  # NaN or Inf where the set has one
    sigma = (ELEM_RTOL ** 2 * s2[:, 0].view(sets, M) + a * (2 * ELEM_RTOL * s1.view(sets, M) + a * xx.sum())).sqrt()
    return (got - want).abs(), sigma, sq


def projection_verdicts(A: torch.Tensor, B: torch.Tensor, C: torch.Tensor,
                        x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Freivalds per set: (int32 count of rows beyond PROJECTION_SIGMAS sigma or with a NaN/Inf output,
    whether any output is NaN), from projection_terms. Queues work on the current stream only."""
    dev, sigma, sq = projection_terms(A, B, C, x)
    bad = ~(dev <= PROJECTION_SIGMAS * sigma) | ~torch.isfinite(sq)  # NaN counts as bad
    return bad.sum(dim=1, dtype=torch.int32), torch.isnan(sq).any(dim=1)


def projection_sets(A: torch.Tensor, B: torch.Tensor, C: torch.Tensor, chosen: list[int],
                    x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """projection_verdicts of the `chosen` sets of batched A, B and C (int32 rows beyond the tolerance and
    whether any output is NaN, one per chosen set), over contiguous runs of sets of at most
    PROJECTION_BYTES working memory each. Queues work on the current stream only."""
    _, M, K = A.shape
    # per set: y = B x in fp32 and its two fp16 parts (about 6 K words), the per-row terms (about 10 M);
    # the fp32 slice of C for the tolerance has PROJECTION_CHUNK elements whatever the group's size
    per_set = 4 * (6 * K + 10 * M)
    group = max(1, (PROJECTION_BYTES - 4 * PROJECTION_CHUNK) // per_set)
    rows = torch.empty(len(chosen), dtype=torch.int32, device=C.device)  # rows beyond the tolerance, per set
    nans = torch.empty(len(chosen), dtype=torch.bool, device=C.device)  # any NaN output, per set
    for pos, lo, hi in contiguous_runs(chosen, group):
        rows[pos:pos + hi - lo], nans[pos:pos + hi - lo] = projection_verdicts(A[lo:hi], B[lo:hi], C[lo:hi], x)
    return rows, nans


class TimingSets:
    """Buffer sets for timing: one in hot mode; in rotating and server modes enough to exceed 3x L2
    (inputs come cold from memory) and, up to TIMING_BYTES, as many as a replay has launches, so
    that each set is used once per chunk (see gpu_timing.time_sealed)."""

    def __init__(self, harness: Harness, M: int, N: int, K: int, modes: list[str]):
        self.h = harness
        self.M, self.N, self.K = M, N, K
        set_bytes = 2 * (M * K + K * N + M * N)
        if any(m in ("rotating", "server") for m in modes):
            cold = max(2, math.ceil(3 * harness.info.l2_bytes / set_bytes))
            self.n = min(MAX_ROTATING_SETS, max(cold, TIMING_BYTES // set_bytes))
        else:
            self.n = 1
        self.gen, _ = fresh_generator()
        with torch.cuda.stream(harness.stream):
            self.A = torch.empty(self.n, M, K, dtype=torch.float16, device="cuda")
            self.B = torch.empty(self.n, K, N, dtype=torch.float16, device="cuda")
            self.C = torch.empty(self.n, M, N, dtype=torch.float16, device="cuda")
        self.refresh()
        harness.stream.synchronize()
        self._args: dict = {}
        self._pick = random.Random(os.urandom(8))
        self._flush: torch.Tensor | None = None
        self._graph_check: Any = None  # (graph, rows, nans) once captured; False where capture failed

    def refresh(self, i: int | None = None) -> None:
        """Fresh random inputs and a NaN-poisoned output, for every set or for set i."""
        pick = slice(None) if i is None else slice(i, i + 1)
        with torch.cuda.stream(self.h.stream):
            self.A[pick].normal_(generator=self.gen)
            self.B[pick].normal_(generator=self.gen)
            self.C[pick].fill_(float("nan"))

    def refresh_cold(self, i: int) -> None:
        """Refresh set i, then write twice the L2's size elsewhere, so its inputs come from memory."""
        self.refresh(i)
        if self._flush is None:
            self._flush = torch.empty(2 * self.h.info.l2_bytes, dtype=torch.uint8, device="cuda")
        with torch.cuda.stream(self.h.stream):
            self._flush.fill_(0)

    def args(self, kernel: LoadedKernel, i: int):
        if i not in self._args:  # addresses by arithmetic: indexing a tensor costs microseconds, times 8192 sets
            M, N, K = self.M, self.N, self.K
            self._args[i] = kernel.args(self.A.data_ptr() + 2 * i * M * K, self.B.data_ptr() + 2 * i * K * N,
                                        self.C.data_ptr() + 2 * i * M * N, M, N, K)
        return self._args[i]

    def prepare_args(self, kernel: LoadedKernel) -> None:
        """Every set's launch arguments (tensor maps included), built before the graph is captured."""
        for i in range(self.n):
            self.args(kernel, i)

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
        self.refresh()
        return start.elapsed_time(end) / 3

    def check_outputs(self, *, full: bool = False, indices: list[int] | None = None) -> str | None:
        """Every set's output against its inputs by a random projection (Freivalds: C x against
        A (B x) in fp32, per row within 6 sigma of fp16 output rounding), and with `full` one random
        set element by element against the fp32 reference. None when all hold, else the reason."""
        error = self.verdict_to_host(self.queue_projection(indices))()
        if error is None and full:
            error = self.check_elementwise(indices)
        return error

    def queue_projection(self, indices: list[int] | None = None) -> Projection:
        """Queue the projection check on the timing stream; its per-set verdicts stay in device
        memory (verdict_to_host copies them out). Sets are taken as contiguous slices of the batched
        buffers (no gathered copies, no fp32 copies of A and B: projection_sets)."""
        if indices is None and self.h.stream is not None and self._graph_check is not False:
            return self._queue_projection_graphed()
        chosen = list(range(self.n)) if indices is None else list(indices)
        with torch.cuda.stream(self.h.stream):
            x = torch.randn(self.N, device="cuda", generator=self.gen).half()
            rows, nans = projection_sets(self.A, self.B, self.C, chosen, x)
        return Projection(chosen, rows, nans)

    def _queue_projection_graphed(self) -> Projection:
        """The check of every set as one CUDA graph (captured on first use, outside the timed chunks):
        a fresh x, then one replay, where the check's forty-odd operations queued one by one cost the
        host 1-2 ms a chunk, more than the GPU's work on small shapes. The verdicts live in the graph's
        buffers until the next replay; verdict_to_host copies them out right after, in stream order."""
        s, chosen = self.h.stream, list(range(self.n))
        with torch.cuda.stream(s):
            if self._graph_check is None:
                self._x = torch.empty(self.N, dtype=torch.float16, device="cuda")
                try:
                    graph = torch.cuda.CUDAGraph()
                    with torch.cuda.graph(graph, stream=s):
                        rows, nans = projection_sets(self.A, self.B, self.C, chosen, self._x)
                    self._graph_check = (graph, rows, nans)
                except RuntimeError:  # not capturable here: the operations one by one, as before
                    self._graph_check = False
                    return self.queue_projection(chosen)
            graph, rows, nans = self._graph_check
            self._x.copy_(torch.randn(self.N, device="cuda", generator=self.gen))
            graph.replay()
        return Projection(chosen, rows, nans)

    def verdict_to_host(self, p: Projection) -> Callable[[], str | None]:
        """Queue copies of a projection check's verdicts into pinned host memory, on the timing
        stream right after the check, so that they are out of device memory before any launch queued
        later runs (the kernels timed are untrusted: one writing out of bounds could otherwise
        overwrite a verdict still waiting on the device). Returns a function that gives the verdict
        (None or the reason) from the host copies, waiting for the copies if need be."""
        s = self.h.stream
        rows = torch.empty(p.rows.shape, dtype=p.rows.dtype, pin_memory=True)
        nans = torch.empty(p.nans.shape, dtype=p.nans.dtype, pin_memory=True)
        with torch.cuda.stream(s):
            rows.copy_(p.rows, non_blocking=True)
            nans.copy_(p.nans, non_blocking=True)
            copied = torch.cuda.Event()
            copied.record(s)
        chosen = p.chosen

        def read() -> str | None:  # holds the pinned copies until it is called; never reads the device
            copied.synchronize()  # at once after the replay's wait
            counts = rows.tolist()
            k = next((i for i, r in enumerate(counts) if r), None)
            if k is None:
                return None
            nan = bool(nans[k])
            return (f"a timed launch gave a wrong output (buffer set {chosen[k]}: {counts[k]} of {self.M} rows differ "
                    f"from the fp32 reference beyond the tolerance, checked by random projection"
                    f"{'; NaN outputs: elements left unwritten' if nan else ''})")
        return read

    def check_elementwise(self, indices: list[int] | None = None) -> str | None:
        """One random set (of `indices`, default all) element by element against the fp32 reference."""
        chosen = list(range(self.n)) if indices is None else indices
        with torch.cuda.stream(self.h.stream):
            i = self._pick.choice(chosen)
            reason = verdict(error_stats(self.C[i].float(), reference(self.A[i], self.B[i])))
        return f"a timed launch (buffer set {i}) gave a wrong output: {reason}" if reason else None

    def time_all(self, call: Callable[[int], None], req: dict, *, verify: bool = True, capturable: bool = True,
                 race: dict | None = None):
        """Time `call` in every requested mode; returns (timings, error or None). With `verify`, the
        outputs of timed launches are checked and the first failure ends the timing. `race`
        ({"mode", "ms"}, a kernel's request only): in that sealed mode, no replay after one slower
        than "ms" per launch."""
        h, timings = self.h, []
        with steps.step("estimate"):
            est = self.estimate_ms(call)
        target = req.get("target_replay_ms", 20.0)
        for mode in req["modes"]:
            if mode == "server":
                t, error = time_server(call, sets=self.n, samples=req.get("server_samples", 40),
                                       gap_ms=tuple(req.get("server_gap_ms", (0.05, 2.0))), stream=h.stream,
                                       clock=h.clock, seed=int.from_bytes(os.urandom(4), "little"),
                                       before=self.refresh_cold,
                                       after=(lambda i: self.check_outputs(indices=[i])) if verify else None)
            elif mode == "hot" and capturable:
                t, error = time_hot(call, self, launches=launches_for(est, target, 1), replays=req["replays"],
                                    stream=h.stream, clock=h.clock, verify=verify)
            else:
                chunks = max(1, math.ceil(target / max(est * self.n, 1e-3)))
                if "chunks" not in steps.current.info:  # the kernel's (timed first), not a library's after it
                    steps.current.note(sets=self.n, set_bytes=2 * (self.M * self.K + self.K * self.N + self.M * self.N),
                                       chunks=chunks, estimate_ms=est)
                give_up = race["ms"] if race and race.get("mode") == mode else None
                t, error = time_sealed(call, self, mode=mode, chunks=chunks, replays=req["replays"], stream=h.stream,
                                       clock=h.clock, capturable=capturable, verify=verify, give_up_ms=give_up)
            timings.append(t)
            if error:
                return timings, f"{mode} timing: {error}"
        return timings, None

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
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

import torch

from evo.core.records import DeviceInfo
from evo.evaluation import steps
from evo.evaluation.gpu_timing import launches_for, time_hot, time_sealed, time_server
from evo.evaluation.sealed import contiguous_runs
from evo.evaluation.tolerance import ELEM_ATOL_FP16, ELEM_ATOL_RMS, ELEM_RTOL, error_stats, verdict

if TYPE_CHECKING:
    from evo.evaluation.gpu_launch import LaunchArgs, LoadedKernel


class Harness(Protocol):
    """What the buffers need of the worker's harness: the device, its stream and clock reader."""
    info: DeviceInfo
    stream: Any
    clock: Any

GUARD_BYTES = 1 << 20
# 0x7D7D reads as an fp16 NaN: a kernel that reads past its inputs into a guard zone gets NaN outputs, which
# fail the check (0xA5A5, before session 23, read as -0.026 and passed unnoticed). Writes change the bytes:
# no arithmetic gives this NaN (the GPU's own is 0x7FFF), nor do -1 or all-ones fills
GUARD_BYTE = 0x7D
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


def fresh_generator(device: str = "cuda") -> tuple[torch.Generator, int]:
    seed = int.from_bytes(os.urandom(6), "little")
    g = torch.Generator(device=device)
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


def projection_want(A: torch.Tensor, B: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """A (B x) per row of every set (sets x M, fp32), from fp16 A (sets x M x K), B (sets x K x N) and
    x (N): every product exact in fp32, only the fp32 sums round; B x is split in two fp16 parts
    (_split16). Taken right after the inputs are written, before any launch (TimingSets.refresh), so
    that a launch which rewrites its inputs is compared with the product of the inputs it was given.
    B x and its parts are zeroed after use (the split's other temporaries may stay in freed memory, and
    the result itself determines B x where M >= K: docs/correctness.md, "Known gaps")."""
    sets, K, N = B.shape
    y = _mm16(B.reshape(1, sets * K, N), x.view(1, N, 1)).view(sets, K)
    parts, p = _split16(y)
    want = torch.ldexp(_mm16(A, parts).sum(dim=2), -p)
    y.zero_()
    parts.zero_()
    return want


def projection_terms(C: torch.Tensor, x: torch.Tensor,
                     want: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per row of every set (sets x M, fp32): |C x - want|, sigma, and the row's sum of squares.
    C (sets x M x N) and x (N) are fp16, so every product is exact in fp32; `want` is A (B x) of the
    inputs as written (projection_want). sigma is what each element's allowed error (ELEM_RTOL |c| +
    ELEM_ATOL_RMS rms + ELEM_ATOL_FP16, tolerance.py) gives the row's projection with errors of random sign: sqrt(sum_j
    allowed^2 x_j^2), expanded as R^2 (c^2 @ xx) + a (2 R (|c| @ xx) + a sum(xx)) with a = ELEM_ATOL_RMS
    rms + ELEM_ATOL_FP16, from fp32 slices of C of PROJECTION_CHUNK elements. The sum of squares is NaN where the row has
    a NaN and +Inf where it has an Inf (all its terms are non-negative)."""
    sets, M, N = C.shape
    got = _mm16(C.reshape(1, sets * M, N), x.view(1, N, 1)).view(sets, M)
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
    a = ELEM_ATOL_RMS * (sq.sum(dim=1, keepdim=True) / (M * N)).sqrt() + ELEM_ATOL_FP16  # NaN/Inf where the set has one
    sigma = (ELEM_RTOL ** 2 * s2[:, 0].view(sets, M) + a * (2 * ELEM_RTOL * s1.view(sets, M) + a * xx.sum())).sqrt()
    return (got - want).abs(), sigma, sq


def projection_verdicts(C: torch.Tensor, x: torch.Tensor, want: torch.Tensor, *,
                        zeros_fail: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """Freivalds per set: (int32 count of rows beyond PROJECTION_SIGMAS sigma or with a NaN/Inf output,
    whether any output is NaN), from projection_terms. Queues work on the current stream only."""
    dev, sigma, sq = projection_terms(C, x, want)
    bad = ~(dev <= PROJECTION_SIGMAS * sigma) | ~torch.isfinite(sq)  # NaN counts as bad
    # a set whose outputs are all zero: it would pass against a `want` zeroed in memory by the kernel.
    # Honest outputs are all zero only by chance where a set has one output or K = 1 with a single row
    # or column (one input element of fp16 zero, 1 in 4e7, times 8192 sets): there zeros_fail is off
    if zeros_fail:
        bad |= (sq.sum(dim=1, keepdim=True) == 0)
    return bad.sum(dim=1, dtype=torch.int32), torch.isnan(sq).any(dim=1)


def _groups(shape: Sequence[int], chosen: list[int], *, gather: bool = False) -> list[tuple[int, int, int]]:
    """Contiguous runs of the chosen sets, each within PROJECTION_BYTES of working memory: per set,
    B x in fp32 and its two fp16 parts (about 6 K words) and the per-row terms (about 10 M), and with
    `gather` a copy of its A (M K halves); the fp32 slice of C for the tolerance has PROJECTION_CHUNK
    elements whatever the group's size."""
    _, M, K = shape
    per_set = 4 * (6 * K + 10 * M) + (2 * M * K if gather else 0)
    return contiguous_runs(chosen, max(1, (PROJECTION_BYTES - 4 * PROJECTION_CHUNK) // per_set))


def projection_wants(A: torch.Tensor, B: torch.Tensor, chosen: list[int], x: torch.Tensor,
                     a_of: torch.Tensor | None = None) -> torch.Tensor:
    """projection_want of the `chosen` sets of batched A and B (len(chosen) x M, fp32), by groups; with
    `a_of` (indices into A), set i's A is A[a_of[i]], gathered per group."""
    want = torch.empty(len(chosen), A.shape[1], device=A.device)
    for pos, lo, hi in _groups(A.shape, chosen, gather=a_of is not None):
        a = A[lo:hi] if a_of is None else A.index_select(0, a_of[lo:hi])
        want[pos:pos + hi - lo] = projection_want(a, B[lo:hi], x)
    return want


def projection_sets(C: torch.Tensor, chosen: list[int], x: torch.Tensor, want: torch.Tensor, *,
                    zeros_fail: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """projection_verdicts of the `chosen` sets of batched C against `want` (one row per chosen set):
    int32 rows beyond the tolerance and whether any output is NaN, one per chosen set, by groups.
    Queues work on the current stream only."""
    rows = torch.empty(len(chosen), dtype=torch.int32, device=C.device)  # rows beyond the tolerance, per set
    nans = torch.empty(len(chosen), dtype=torch.bool, device=C.device)  # any NaN output, per set
    for pos, lo, hi in _groups((C.shape[0], C.shape[1], 0), chosen):
        rows[pos:pos + hi - lo], nans[pos:pos + hi - lo] = projection_verdicts(
            C[lo:hi], x, want[pos:pos + hi - lo], zeros_fail=zeros_fail)
    return rows, nans


class Reference(NamedTuple):
    """What the next check compares with, taken right after a refresh and before any launch: A (B x)
    of the refreshed sets (fp32, one row per set) and the generator state x was drawn from. x itself
    is erased before the launches and drawn again, from that state, for the check."""
    chosen: list[int]
    want: torch.Tensor
    state: torch.Tensor


class TimingSets:
    """Buffer sets for timing: one in hot mode; in rotating and server modes enough to exceed 3x L2
    (inputs come cold from memory) and, up to TIMING_BYTES, as many as a replay has launches, so
    that each set is used once per chunk (see gpu_timing.time_sealed). On the harness's device
    (`harness.device`, default "cuda"; the CPU tests use "cpu" and no stream)."""

    def __init__(self, harness: Harness, M: int, N: int, K: int, modes: list[str]):
        self.h = harness
        self.device = getattr(harness, "device", "cuda")
        self.M, self.N, self.K = M, N, K
        # all-zero outputs fail, except where an honest set can be all zero by chance: one output, or
        # K = 1 with a single row or column (one input element that is fp16 zero zeroes it)
        self._zeros_fail = M * N >= 2 and (K >= 2 or min(M, N) >= 2)
        set_bytes = 2 * (M * K + K * N + M * N)
        if any(m in ("rotating", "server") for m in modes):
            cold = max(2, math.ceil(3 * harness.info.l2_bytes / set_bytes))
            self.n = min(MAX_ROTATING_SETS, max(cold, TIMING_BYTES // set_bytes))
        else:
            self.n = 1
        self.gen, _ = fresh_generator(self.device)
        self._graphs: dict[str, Any] = {}  # name: (graph, outputs) once captured; False where capture failed
        self._ref: Reference | None = None
        self._full: tuple[int, torch.Tensor, torch.Tensor] | None = None  # the elementwise check's set and inputs
        self._pick = random.Random(os.urandom(8))
        # Set i is A[a_of[i]], B[i] and C[i]: A in an order drawn afresh for every evaluation. With all
        # three in index order, a launch could compute the next sets' outputs from its own pointers (their
        # inputs are all written before the chunk) and the launches after it skip their work (a red-team
        # kernel did; docs/correctness.md, "Known gaps", for what remains: a kernel that learns the order)
        self.a_of = list(range(self.n))
        self._pick.shuffle(self.a_of)
        self._gather = self.a_of != list(range(self.n))  # the reference gathers A (not where in order: one set)
        with torch.cuda.stream(harness.stream):
            self._a_index = torch.tensor(self.a_of, dtype=torch.long, device=self.device)
            self.A = torch.empty(self.n, M, K, dtype=torch.float16, device=self.device)
            self.B = torch.empty(self.n, K, N, dtype=torch.float16, device=self.device)
            self.C = torch.empty(self.n, M, N, dtype=torch.float16, device=self.device)
            self._x = torch.zeros(N, dtype=torch.float16, device=self.device)  # x of the checks: zero between them
        self.refresh()
        if harness.stream is not None:
            harness.stream.synchronize()
        self._flush: torch.Tensor | None = None

    def refresh(self, i: int | None = None) -> None:
        """Fresh random inputs and a NaN-poisoned output, for every set or for set i; then what the next
        check compares with: A (B x) of these inputs, x drawn and erased again before any launch. The
        libraries' sets build it too, though their verdicts go unread: the same work between chunks
        keeps the GPU's clock alike for kernels and libraries (gpu_timing.time_sealed)."""
        pick = slice(None) if i is None else slice(i, i + 1)
        pick_a = pick if i is None else slice(self.a_of[i], self.a_of[i] + 1)  # set i's A
        chosen = list(range(self.n)) if i is None else [i]
        with torch.cuda.stream(self.h.stream):
            self.A[pick_a].normal_(generator=self.gen)
            self.B[pick].normal_(generator=self.gen)
            self._ref = self._reference(chosen)
            # the elementwise check's set, chosen now by the host and its inputs kept as written
            k = self._pick.choice(chosen)
            self._full = (k, self.a(k).clone(), self.B[k].clone())
            self.C[pick].fill_(float("nan"))  # last: the same L2 state before every chunk

    def _reference(self, chosen: list[int]) -> Reference:
        state = self.gen.get_state()
        self._x.normal_(generator=self.gen)
        want = None
        a_of = self._a_index if self._gather else None
        if len(chosen) == self.n:
            want = self._graphed("want", lambda: projection_wants(self.A, self.B, chosen, self._x, a_of))
        if want is None:
            want = projection_wants(self.A, self.B, chosen, self._x, a_of)
        self._x.zero_()
        return Reference(chosen, want, state)

    def _graphed(self, name: str, build: Callable[[], Any]) -> Any:
        """`build()` (GPU work only; returns its output tensors) captured as a CUDA graph on first use
        and replayed, here and after: the checks' forty-odd operations queued one by one cost the host
        1-2 ms a chunk, more than the GPU's work on small shapes. The outputs live in the graph's
        buffers until its next replay. None off CUDA or where capture failed (the caller then queues
        the operations one by one)."""
        if self.device != "cuda" or self.h.stream is None:
            return None
        known: Any = self._graphs.get(name)
        if known is None:
            try:
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph, stream=self.h.stream):
                    outputs = build()
                known = self._graphs[name] = (graph, outputs)
            except RuntimeError:  # not capturable here: one by one, as before graphs
                known = self._graphs[name] = False
        if known is False:
            return None
        known[0].replay()
        return known[1]

    def refresh_cold(self, i: int) -> None:
        """Refresh set i, then write twice the L2's size elsewhere, so its inputs come from memory."""
        self.refresh(i)
        if self._flush is None:
            self._flush = torch.empty(2 * self.h.info.l2_bytes, dtype=torch.uint8, device=self.device)
        with torch.cuda.stream(self.h.stream):
            self._flush.fill_(0)

    def a(self, i: int) -> torch.Tensor:
        """Set i's A (A[a_of[i]]; B[i] and C[i] are its others)."""
        return self.A[self.a_of[i]]

    def launch_args(self, kernel: LoadedKernel) -> LaunchArgs:
        """Every set's launch parameters (tensor maps included): launch i runs on set i."""
        M, N, K = self.M, self.N, self.K
        return kernel.args(self.A.data_ptr(), self.B.data_ptr(), self.C.data_ptr(), M, N, K,
                           steps=(2 * M * K, 2 * K * N, 2 * M * N), count=self.n, a_order=self.a_of)

    def estimate_ms(self, call: Callable[[int], object]) -> float:
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
        """Every set's output (of `indices`, default those of the last refresh) by a random projection
        (Freivalds: C x against A (B x) of the inputs as the refresh wrote them, in fp32, per row within
        6 sigma of fp16 output rounding), and with `full` one random set element by element against the
        fp32 reference. None when all hold, else the reason."""
        error = self.verdict_to_host(self.queue_projection(indices))()
        if error is None and full:
            error = self.check_elementwise(indices)
        return error

    def queue_projection(self, indices: list[int] | None = None) -> Projection:
        """Queue the projection check on the timing stream against the last refresh's reference; its
        per-set verdicts stay in device memory (verdict_to_host copies them out). x is drawn again
        from the state the reference drew it from. Sets are taken as contiguous slices of the batched
        buffers (no gathered copies, no fp32 copies: projection_sets)."""
        ref = self._ref
        if ref is None:
            raise RuntimeError("no reference to check against: refresh the sets before the launches")
        chosen = ref.chosen if indices is None else list(indices)
        with torch.cuda.stream(self.h.stream):
            now = self.gen.get_state()
            self.gen.set_state(ref.state)
            self._x.normal_(generator=self.gen)
            self.gen.set_state(now)
            verdicts = None
            if chosen == ref.chosen and len(chosen) == self.n and ref.want is self._graph_output("want"):
                verdicts = self._graphed("check", lambda: projection_sets(
                    self.C, chosen, self._x, ref.want, zeros_fail=self._zeros_fail))
            if verdicts is None:
                at = {i: p for p, i in enumerate(ref.chosen)}
                if any(i not in at for i in chosen):
                    raise RuntimeError(f"sets {[i for i in chosen if i not in at][:5]} were not refreshed with a reference")
                want = ref.want if chosen == ref.chosen else ref.want[[at[i] for i in chosen]]
                verdicts = projection_sets(self.C, chosen, self._x, want, zeros_fail=self._zeros_fail)
            self._x.zero_()  # after the check in stream order: no x in memory while later launches run
        rows, nans = verdicts
        return Projection(chosen, rows, nans)

    def _graph_output(self, name: str) -> Any:
        known = self._graphs.get(name)
        return known[1] if known else None

    def verdict_to_host(self, p: Projection) -> Callable[[], str | None]:
        """Queue copies of a projection check's verdicts into pinned host memory, on the timing
        stream right after the check, so that they are out of device memory before any launch queued
        later runs (the kernels timed are untrusted: one writing out of bounds could otherwise
        overwrite a verdict still waiting on the device). Returns a function that gives the verdict
        (None or the reason) from the host copies, waiting for the copies if need be."""
        s, cuda = self.h.stream, self.device == "cuda"
        rows = torch.empty(p.rows.shape, dtype=p.rows.dtype, pin_memory=cuda)
        nans = torch.empty(p.nans.shape, dtype=p.nans.dtype, pin_memory=cuda)
        with torch.cuda.stream(s):
            rows.copy_(p.rows, non_blocking=cuda)
            nans.copy_(p.nans, non_blocking=cuda)
            copied = torch.cuda.Event() if cuda else None
            if copied is not None:
                copied.record(s)
        chosen = p.chosen

        def read() -> str | None:  # holds the pinned copies until it is called; never reads the device
            if copied is not None:
                copied.synchronize()  # at once after the replay's wait
            counts = rows.tolist()
            k = next((i for i, r in enumerate(counts) if r), None)
            if k is None:
                return None
            nan = bool(nans[k])
            return (f"a timed launch gave a wrong output (buffer set {chosen[k]}: {counts[k]} of {self.M} rows differ "
                    f"from the fp32 product of the inputs as written beyond the tolerance, checked by random projection"
                    f"{'; NaN outputs: elements left unwritten' if nan else ''})")
        return read

    def check_elementwise(self, indices: list[int] | None = None) -> str | None:
        """The set the last refresh picked at random (it must be among `indices`, default all) element by
        element against the fp32 product of its inputs as the refresh wrote them (kept aside then)."""
        if self._full is None or (indices is not None and self._full[0] not in indices):
            raise RuntimeError("no set picked for the elementwise check: refresh the sets first")
        i, a, b = self._full
        with torch.cuda.stream(self.h.stream):
            reason = verdict(error_stats(self.C[i].float(), reference(a, b)))
        return f"a timed launch (buffer set {i}) gave a wrong output: {reason}" if reason else None

    def time_all(self, call: Callable[[int], object], req: dict, *, verify: bool = True, capturable: bool = True,
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

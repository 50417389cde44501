"""Re-check an export on the GPU that will run it, and record the verdict in its manifest.

For every range whose recorded speedup passed (evo.core.dispatch_table), through the same
torch.ops.evo.matmul path that calls take:
- correctness at every M of a short range, a dense sample with every launch segment's edges of a
  long one (check_points), on fresh random inputs inside guard zones, the output NaN-poisoned, the
  inputs compared with copies afterwards, against an fp32 reference with the evaluator's tolerance
  (evo.evaluation.tolerance);
- time at the range's lowest, middle and highest M (timing_points) beside torch.matmul, both as CUDA
  graphs over rotating buffers (larger than L2 together), replays interleaved;
then apply_check decides whether the range is used (correct, and faster beyond noise at every
point). Then, per (N, K), the torch path's weight layout: torch's mm on W.T stored [K, N] (what
evo.dispatch.Linear's torch path multiplies by) beside nn.Linear's W [N, K] transposed, graph-timed
the same way at the few Ms torch serves there (torch_points: the edges and middle of the gaps between
the ranges in use, and the M above the last); apply_layout_check records where [K, N] is slower
beyond noise, and Linear keeps W [N, K] for those tables (fallback_weight='auto').
Needs torch, a CUDA GPU and the extension.
"""
from __future__ import annotations

import datetime as dt
import json
import logging
import math
from pathlib import Path

import torch

from evo.core.dispatch_table import (
    apply_check,
    apply_layout_check,
    check_points,
    layout_verdict,
    timing_points,
    torch_points,
)
from evo.core.errors import EvoError
from evo.dispatch import extension
from evo.dispatch.dispatcher import Dispatcher
from evo.evaluation.gpu_buffers import Guarded, reference
from evo.evaluation.tolerance import error_stats, verdict

log = logging.getLogger(__name__)

L2_BYTES = 60 * 2**20  # a bit above an H100/H200's 50 MiB L2: rotating sets never hit in L2


def _correct(d: Dispatcher, n: int, k: int, ms: list[int]) -> tuple[bool, float, str | None]:
    """Each M on fresh inputs, as the evaluator's correctness draws check a kernel (docs/correctness.md):
    every operand inside guard zones, the output poisoned with NaN, the inputs compared with copies
    afterwards and the reference taken from the copies (a kernel that rewrote its inputs was compared
    with what it left there). Through the op with out= (the guarded buffer), then once more without
    (the output the op allocates), on the same inputs."""
    B = Guarded(k, n)
    B.t.normal_()
    b_copy = B.t.clone()
    worst = 0.0
    for m in ms:
        A, C = Guarded(m, k), Guarded(m, n)
        A.t.normal_()
        a_copy = A.t.clone()
        C.t.fill_(float("nan"))
        for g in (A, B, C):
            g.arm()
        d.matmul(A.t, B.t, out=C.t)
        plain = d.matmul(A.t, B.t)
        torch.cuda.synchronize()
        where = [name for name, g in zip("ABC", (A, B, C)) if not g.intact()]
        if where:
            return False, worst, f"M={m}: wrote outside its buffers (guard zone of {', '.join(where)} changed)"
        if not torch.equal(A.t, a_copy) or not torch.equal(B.t, b_copy):
            return False, worst, f"M={m}: modified its inputs A or B"
        want = reference(a_copy, b_copy)
        for how, out in (("out=", C.t), ("", plain)):
            stats = error_stats(out.float(), want)
            worst = max(worst, stats["rel_err"])
            bad = verdict(stats)
            if bad:
                return False, worst, f"M={m}{' (out=)' if how else ''}: {bad}"
    return True, worst, None


def _graph_ms(fn, sets: int, launches: int) -> tuple[torch.cuda.CUDAGraph, int]:
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for i in range(sets):  # warm up outside the capture (loads, allocator)
            fn(i)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for i in range(launches):
            fn(i % sets)
    return graph, launches


def _replay_ms(graph: torch.cuda.CUDAGraph, launches: int) -> float:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    graph.replay()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / launches


def _sets(m: int, n: int, k: int) -> int:
    """How many operand sets to rotate through so that together they are larger than L2."""
    return max(2, min(64, math.ceil(L2_BYTES / (2 * (m * k + k * n + m * n)))))


def time_pair(fn_a, fn_b, m: int, n: int, k: int, sets: int, *, replays: int) -> tuple[list[float], list[float]]:
    """Per-launch ms of two ways to compute one (m, n, k) product over `sets` rotating operand sets
    (fn(i) uses set i), each as a CUDA graph of about 5 ms of work, replays interleaved (a, b, a, ...)
    so that drift falls on both; one value per replay each."""
    launches = max(sets, min(2000, math.ceil(2e12 * 0.005 / (2 * m * n * k))))
    g_a, g_b = _graph_ms(fn_a, sets, launches), _graph_ms(fn_b, sets, launches)
    _replay_ms(*g_a), _replay_ms(*g_b)
    a_ms, b_ms = [], []
    for _ in range(replays):
        a_ms.append(_replay_ms(*g_a))
        b_ms.append(_replay_ms(*g_b))
    return a_ms, b_ms


def time_beside_torch(d: Dispatcher, m: int, n: int, k: int, *, replays: int = 7) -> dict:
    """Per-launch ms of the evo path and of torch.matmul at one shape, one value per replay."""
    sets = _sets(m, n, k)
    A = torch.randn(sets, m, k, dtype=torch.float16, device="cuda")
    B = torch.randn(sets, k, n, dtype=torch.float16, device="cuda")
    C = torch.empty(sets, m, n, dtype=torch.float16, device="cuda")
    evo_ms, torch_ms = time_pair(lambda i: d.matmul(A[i], B[i], out=C[i]),
                                 lambda i: torch.matmul(A[i], B[i], out=C[i]), m, n, k, sets, replays=replays)
    return {"M": m, "evo_ms": evo_ms, "torch_ms": torch_ms}


def time_torch_layouts(m: int, n: int, k: int, *, replays: int = 7) -> dict:
    """Per-launch ms of torch's mm on the weight as evo.dispatch.Linear stores it, W.T [K, N]
    (cuBLAS NN), and as nn.Linear does, W [N, K] transposed (TN), at one shape, one value per replay."""
    sets = _sets(m, n, k)
    A = torch.randn(sets, m, k, dtype=torch.float16, device="cuda")
    W = torch.randn(sets, n, k, dtype=torch.float16, device="cuda")
    W_t = W.transpose(1, 2).contiguous()
    C = torch.empty(sets, m, n, dtype=torch.float16, device="cuda")
    kn_ms, nk_ms = time_pair(lambda i: torch.mm(A[i], W_t[i], out=C[i]),
                             lambda i: torch.mm(A[i], W[i].t(), out=C[i]), m, n, k, sets, replays=replays)
    return {"M": m, "kn_ms": kn_ms, "nk_ms": nk_ms}


def _check_ranges(d: Dispatcher, table: dict, gpu: str, num_sms: int, replays: int) -> int:
    """Re-check every candidate range of one table (apply_check); returns how many are used."""
    n, k = table["N"], table["K"]
    used = 0
    for rng in table["ranges"]:
        if not rng["use"] or not rng["segments"]:
            continue
        ms = check_points(rng)
        correct, worst, error = _correct(d, n, k, ms)
        points = [time_beside_torch(d, m, n, k, replays=replays) for m in timing_points(rng)] if correct else []
        apply_check(rng, {"gpu": gpu, "num_sms": num_sms, "correct": correct, "checked_Ms": len(ms),
                          "max_rel_err": worst, "error": error, "points": points,
                          "at": dt.datetime.now(dt.UTC).isoformat()})
        used += rng["use"]
        log.info(f"N={n} K={k} M {rng['m_lo']}-{rng['m_hi']}: {'evo' if rng['use'] else 'torch'} ({rng['reason']})")
    return used


def _check_layouts(table: dict, gpu: str, replays: int) -> None:
    """Time torch's two weight layouts at the Ms torch serves for this table, after its ranges were
    re-checked (which ones are used decides those Ms); apply_layout_check records the verdict."""
    n, k = table["N"], table["K"]
    points = [time_torch_layouts(m, n, k, replays=replays) for m in torch_points(table)]
    apply_layout_check(table, {"gpu": gpu, "points": points, "at": dt.datetime.now(dt.UTC).isoformat()})
    log.info(f"N={n} K={k} torch path: {layout_verdict(table, gpu)[1]}")


def verify(folder: str | Path, *, replays: int = 7) -> dict:
    """Re-check every candidate range of an export on this GPU; rewrite its manifest.json."""
    if not torch.cuda.is_available():
        raise EvoError("evo export --verify needs a CUDA GPU (the one the kernels will run on)")
    torch.backends.cuda.matmul.allow_tf32 = False
    folder = Path(folder)
    d = Dispatcher(folder, checked=False)  # every range whose recorded speedup passed
    if d.build() is None:
        raise EvoError(f"cannot re-check: {extension.why_not()}")
    gpu = torch.cuda.get_device_name()
    num_sms = torch.cuda.get_device_properties(0).multi_processor_count
    if num_sms != d.manifest.get("num_sms"):
        raise EvoError(f"this GPU has {num_sms} SMs, the export's launches were computed for "
                       f"{d.manifest.get('num_sms')}: export on a machine with this GPU")
    used = 0
    for table in d.tables:
        used += _check_ranges(d, table, gpu, num_sms, replays)
        _check_layouts(table, gpu, replays)
    d.manifest["verified"] = {"gpu": gpu, "at": dt.datetime.now(dt.UTC).isoformat(), "ranges_used": used}
    (folder / "manifest.json").write_text(json.dumps(d.manifest, indent=1))
    log.info(f"re-checked {folder} on {gpu}: {used} ranges use evo kernels, torch runs everywhere else")
    return d.manifest

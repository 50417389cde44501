"""The dispatch table of an export: for each (N, K), which kernel serves which M, and why.

Plain data and rules, shared by `evo export` (which builds and re-checks the table) and
`evo.dispatch` (which routes calls by it). Standard library only.

- Ranges. The cells of one (N, K) sorted by M, m_1 < m_2 < ...: the kernel tuned at m_i serves
  M in (m_{i-1}, m_i] (the first one, m_1 alone). Ms above the largest cell go to torch.
- Launch segments. Within a range, the declaration is evaluated for every M and the launch is
  stored as runs of Ms with the same grid, block, smem, cluster and tensor-map boxes, so the
  launcher only looks the launch up (no expression is evaluated per call). An M where the kernel's
  `requires` fails, or its launch is refused, is left out (torch runs there).
- Never slower. A range is used only where the kernel is faster than torch beyond noise (NOISE):
  first by its recorded speedup, then by the re-check on the GPU that will run it
  (`faster_beyond_noise`), and only where that re-check found it correct over the range.
- The torch path's weight layout. evo.dispatch.Linear stores W.T [K, N] (the kernels' layout); where
  no kernel runs, torch multiplies by it (cuBLAS NN) instead of nn.Linear's W [N, K] (TN). The
  re-check times both at a few Ms torch serves for each (N, K) (`torch_points`) and records, in the
  table's `torch_layout`, where [K, N] is slower beyond noise (`apply_layout_check`); Linear keeps
  W [N, K] beside W.T for those tables (`layout_verdict`).
"""
from __future__ import annotations

import os
import random
import statistics
from collections import defaultdict

from evo.core.kernel import LaunchDecl, LaunchError
from evo.core.shapes import Shape

#: a kernel counts as faster than torch only from 1 + NOISE up (2%: twice the 1% drift between a
#: sweep's recorded times and their re-timing in a new process, docs/export.md), and, when
#: re-checked, only if its slowest quartile of replays is still faster than torch's fastest quartile.
NOISE = 0.02
#: ranges up to this many Ms are checked at every M; longer ones at about this many Ms
DENSE_CHECK = 64
#: at most this many Ms per (N, K) at which the re-check times the two torch layouts
LAYOUT_POINTS = 6
#: the largest range a table covers (a range above it is cut to its top MAX_RANGE Ms)
MAX_RANGE = 1 << 16


def faster_beyond_noise(evo_ms: list[float], torch_ms: list[float]) -> tuple[bool, float]:
    """(faster, speedup) from repeated timings of the kernel and of torch at one shape."""
    speedup = statistics.median(torch_ms) / statistics.median(evo_ms)
    if len(evo_ms) >= 4 and len(torch_ms) >= 4:
        slow_evo = statistics.quantiles(evo_ms, n=4)[2]
        fast_torch = statistics.quantiles(torch_ms, n=4)[0]
        return speedup >= 1 + NOISE and slow_evo < fast_torch, speedup
    return speedup >= 1 + NOISE, speedup


def recorded_speedup(cell: dict) -> float | None:
    """torch's recorded time ÷ the kernel's, from an exported kernel entry; None without torch."""
    torch_ms = (cell.get("library_ms") or {}).get("torch")
    return torch_ms / cell["time_ms"] if torch_ms and cell.get("time_ms") else None


def _launch_key(decl: LaunchDecl, m: int, n: int, k: int, num_sms: int) -> tuple | None:
    shape = Shape(m, n, k)
    if not decl.supports(shape, num_sms=num_sms):
        return None
    try:
        launch = decl.launch_for(shape, num_sms=num_sms)
    except LaunchError:
        return None
    maps = tuple((t.operand, t.box, t.swizzle) for t in launch.tensor_maps)
    return launch.grid, launch.block, launch.smem, launch.cluster, maps


def segments(decl: LaunchDecl, lo: int, hi: int, n: int, k: int, *, num_sms: int) -> list[dict]:
    """Runs of M in [lo, hi] with one concrete launch each; unsupported Ms are left out."""
    out: list[dict] = []
    last = None
    for m in range(lo, hi + 1):
        key = _launch_key(decl, m, n, k, num_sms)
        if key is not None and key == last:
            out[-1]["m_hi"] = m
        elif key is not None:
            grid, block, smem, cluster, maps = key
            out.append({"m_lo": m, "m_hi": m, "grid": list(grid), "block": list(block), "smem": smem,
                        "cluster": list(cluster) if cluster else None,
                        "tensor_maps": [{"operand": o, "box": list(b), "swizzle": s} for o, b, s in maps]})
        last = key
    return out


def build_tables(cells: list[dict], *, num_sms: int, simulated: bool = False) -> list[dict]:
    """The dispatch table of exported cells (`simulated`: their speedups were modelled by the CPU test
    double, and each range's reason says so).

    Each cell: M, N, K, `name` (the kernel's file stem), `decl` (its LaunchDecl) and
    `recorded_speedup` (vs torch, or None). Returns one table per (N, K), ranges sorted by M."""
    recorded = "recorded (SIMULATED: modelled, not measured)" if simulated else "recorded"
    groups: dict[tuple[int, int], list[dict]] = defaultdict(list)
    for c in cells:
        groups[(c["N"], c["K"])].append(c)
    tables = []
    for (n, k), group in sorted(groups.items()):
        group.sort(key=lambda c: c["M"])
        ranges, below = [], None
        for c in group:
            lo = c["M"] if below is None else max(below + 1, c["M"] - MAX_RANGE + 1)
            below = c["M"]
            segs = segments(c["decl"], lo, c["M"], n, k, num_sms=num_sms)
            gain = c["recorded_speedup"]
            if gain is None:
                use, reason = False, "no torch time was recorded for this shape"
            elif gain < 1 + NOISE:
                use, reason = False, f"{recorded} {gain:.3f}x torch at M={c['M']} (needs >= {1 + NOISE:.2f}x)"
            else:
                use, reason = True, f"{recorded} {gain:.3f}x torch at M={c['M']}; not re-checked on a GPU yet"
            ranges.append({"m_lo": lo, "m_hi": c["M"], "kernel": c["name"], "tuned_M": c["M"],
                           "recorded_speedup": gain, "use": use, "reason": reason, "segments": segs,
                           "check": None})
        tables.append({"N": n, "K": k, "ranges": ranges})
    return tables


def check_points(rng: dict, *, dense: int = DENSE_CHECK) -> list[int]:
    """The Ms a range is checked for correctness at: every supported M of a short range; otherwise
    both edges of every launch segment (where the grid changes) and a spread between. The spread's
    step is odd and its start drawn afresh each time: an even step from a fixed start checked only a
    few residues of M modulo 8 (a kernel wrong at the others, e.g. at partial tiles, passed), and a
    known sample can be aimed at. Where every M of the range is supported, an odd step's 16 or more
    points cover every residue of M mod 16."""
    segs = rng["segments"]
    supported = [m for s in segs for m in range(s["m_lo"], s["m_hi"] + 1)]
    if len(supported) <= dense:
        return supported
    edges = sorted({m for s in segs for m in (s["m_lo"], min(s["m_lo"] + 1, s["m_hi"]), s["m_hi"])})
    if len(edges) > 4 * dense:  # a launch that changes at almost every M: a spread of its edges
        edges = edges[::len(edges) // (4 * dense) + 1] + [edges[-1]]
    step = len(supported) // dense
    step -= step % 2 == 0  # odd, and no larger: at least `dense` points
    start = random.Random(os.urandom(8)).randrange(step)
    return sorted({*edges, *supported[start::step]})


def timing_points(rng: dict) -> list[int]:
    """The representative Ms a range is timed at beside torch: its lowest, middle and highest M."""
    ms = [m for s in rng["segments"] for m in (s["m_lo"], s["m_hi"])]
    if not ms:
        return []
    lo, hi = min(ms), max(ms)
    return sorted({lo, (lo + hi) // 2, hi})


def apply_check(rng: dict, check: dict) -> None:
    """Record a GPU re-check of a range and decide from it whether the range is used.

    `check`: gpu, num_sms, correct (bool), checked_Ms, max_rel_err, error (str or None) and
    points [{M, evo_ms: [...], torch_ms: [...]}]."""
    faster_everywhere, slowest = True, None
    for p in check["points"]:
        faster, speedup = faster_beyond_noise(p["evo_ms"], p["torch_ms"])
        p["speedup"] = speedup
        p["faster"] = faster
        faster_everywhere &= faster
        if slowest is None or speedup < slowest["speedup"]:
            slowest = p
    rng["check"] = check
    where = f"on {check['gpu']}"
    if not check["correct"]:
        rng["use"], rng["reason"] = False, f"wrong results {where}: {check.get('error') or 'see check'}"
    elif slowest is None:
        rng["use"], rng["reason"] = False, "no M of this range is supported by the kernel"
    elif not faster_everywhere:
        rng["use"], rng["reason"] = False, (f"re-checked {where}: {slowest['speedup']:.3f}x torch at "
                                            f"M={slowest['M']}, not faster beyond noise")
    else:
        rng["use"], rng["reason"] = True, (f"re-checked {where}: correct at {check['checked_Ms']} Ms, "
                                           f"{slowest['speedup']:.3f}x torch or better at M="
                                           f"{', '.join(str(p['M']) for p in check['points'])}")


def served_spans(table: dict) -> list[tuple[int, int]]:
    """The M spans of a table where a kernel runs (its ranges in use, their supported Ms), merged."""
    spans: list[tuple[int, int]] = []
    for lo, hi in sorted((s["m_lo"], s["m_hi"]) for r in table["ranges"] if r["use"] for s in r["segments"]):
        if spans and lo <= spans[-1][1] + 1:
            spans[-1] = (spans[-1][0], max(hi, spans[-1][1]))
        else:
            spans.append((lo, hi))
    return spans


def torch_points(table: dict, *, most: int = LAYOUT_POINTS) -> list[int]:
    """Representative Ms that torch serves for a table: the edges and middle of every gap between
    the Ms a kernel runs (from 1 up), and the M just above the largest range; an even spread of
    them (first and last kept) where there are more than `most`."""
    top = max((r["m_hi"] for r in table["ranges"]), default=0)
    points, below = {top + 1}, 0
    for lo, hi in [*served_spans(table), (top + 1, top + 1)]:
        if lo > below + 1:  # the gap below + 1 .. lo - 1
            points |= {below + 1, (below + lo) // 2, lo - 1}
        below = hi
    ms = sorted(points)
    if len(ms) <= most:
        return ms
    return sorted({ms[round(i * (len(ms) - 1) / (most - 1))] for i in range(most)})


def apply_layout_check(table: dict, check: dict) -> None:
    """Record a GPU re-check of the torch path's two weight layouts for a table.

    `check`: gpu, at and points [{M, kn_ms: [...], nk_ms: [...]}] (per-launch ms of mm(x, W.T stored
    [K, N]) and of nn.Linear's mm(x, W[N, K].t()), one per replay). Adds to each point `ratio`
    (median kn / median nk: above 1, [K, N] is slower) and `slower` (nk faster beyond noise, the rule
    a kernel must pass against torch), and `slower_at`, the Ms where [K, N] is slower."""
    for p in check["points"]:
        p["slower"], p["ratio"] = faster_beyond_noise(p["nk_ms"], p["kn_ms"])
    check["slower_at"] = [p["M"] for p in check["points"] if p["slower"]]
    table["torch_layout"] = check


def layout_verdict(table: dict, gpu: str | None) -> tuple[bool | None, str]:
    """(whether torch on W.T [K, N] was re-checked slower than on nn.Linear's W [N, K] at some M torch
    serves, why); None where that is not known here: no record (an export re-checked before the
    layout was, or never re-checked) or a record from another GPU (`gpu` as in why_unused)."""
    rec = table.get("torch_layout")
    if rec is None:
        return None, "no torch-layout record in the export (run `evo export --verify` on this GPU to measure it)"
    if gpu is not None and rec["gpu"] != gpu:
        return None, f"the torch layouts were re-checked on {rec['gpu']}, not on this {gpu}"
    ratios = ", ".join(f"M={p['M']} {p['ratio']:.3f}x" for p in rec["points"])
    if rec["slower_at"]:
        return True, f"torch on W.T [K, N] is slower beyond noise than on W [N, K] on {rec['gpu']} ({ratios})"
    return False, f"torch on W.T [K, N] is within noise of W [N, K] or faster on {rec['gpu']} ({ratios})"


def find(tables: list[dict], m: int, n: int, k: int, *, gpu: str | None = None,
         ) -> tuple[dict | None, dict | None, str]:
    """(range, segment, reason) for a call of shape (m, n, k); segment is None where torch runs
    (`gpu` as in why_unused)."""
    table = next((t for t in tables if t["N"] == n and t["K"] == k), None)
    if table is None:
        return None, None, f"no kernel was exported for N={n}, K={k}"
    rng = next((r for r in table["ranges"] if r["m_lo"] <= m <= r["m_hi"]), None)
    if rng is None:
        covered = ", ".join(f"{r['m_lo']}-{r['m_hi']}" for r in table["ranges"])
        return None, None, f"M={m} is outside the exported ranges of N={n}, K={k} ({covered})"
    seg = next((s for s in rng["segments"] if s["m_lo"] <= m <= s["m_hi"]), None)
    if seg is None:
        return rng, None, f"{rng['kernel']} does not support M={m} (its requires or launch limits)"
    unused = why_unused(rng, gpu)
    if unused:
        return rng, None, unused
    return rng, seg, f"{rng['kernel']} serves M {rng['m_lo']}-{rng['m_hi']}: {rng['reason']}"


def why_unused(rng: dict, gpu: str | None) -> str | None:
    """Why torch runs instead of this range's kernel, or None when the kernel is used.

    With `gpu` (the name of the GPU that runs the call), a range is used only if it was re-checked
    on a GPU of that name; without it, the recorded speedup decides alone."""
    span = f"{rng['kernel']} is not used for M {rng['m_lo']}-{rng['m_hi']}"
    if not rng["use"]:
        return f"{span}: {rng['reason']}"
    if gpu is not None and rng["check"] is None:
        return f"{span}: it was not re-checked on a GPU (run `evo export --verify` on the {gpu})"
    if gpu is not None and rng["check"]["gpu"] != gpu:
        return f"{span}: it was re-checked on {rng['check']['gpu']}, not on this {gpu}"
    return None

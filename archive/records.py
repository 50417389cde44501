"""Typed writers and readers for what the evaluation pipeline produces: kernels, compiles,
evaluations, library baselines and device peaks. The evaluator decides what to write and when;
this module only knows how it is stored.

A kernel source longer than `SOURCE_LIMIT_BYTES` is stored cut to that length, followed by a
marker line that gives its whole length. The static checks reject any source above 200,000 bytes
(`evo.evaluation.static_checks.MAX_SOURCE_BYTES`, kept below this limit), so only kernels that
could never be compiled are cut, and a cut source, still longer than that, is rejected again if it
is ever read back and offered to the evaluator. The kernel keeps the id of its whole source.
"""
from __future__ import annotations

import json

from evo.archive.store import Archive, now
from evo.core.kernel import Candidate
from evo.core.records import CompileResult, DeviceInfo, Evaluation, LibraryResult, Peaks
from evo.core.shapes import Shape

#: sources above this many bytes (UTF-8) are stored cut to it, with `TRUNCATION_MARKER` after
SOURCE_LIMIT_BYTES = 256 * 1024
TRUNCATION_MARKER = "// evo: source truncated in the archive:"


def stored_source(source: str) -> str:
    """The source as the archive keeps it: whole up to `SOURCE_LIMIT_BYTES`, else cut and marked."""
    data = source.encode()
    if len(data) <= SOURCE_LIMIT_BYTES:
        return source
    kept = data[:SOURCE_LIMIT_BYTES].decode("utf-8", "ignore")  # never half a character
    return f"{kept}\n{TRUNCATION_MARKER} {len(data)} bytes, the first {SOURCE_LIMIT_BYTES} kept\n"


def is_truncated(source: str) -> bool:
    """Whether a source read from the archive was cut (`stored_source`): only cut ones are longer
    than the limit, and they end with the marker."""
    return len(source.encode()) > SOURCE_LIMIT_BYTES and TRUNCATION_MARKER in source[-200:]


def add_kernel(a: Archive, c: Candidate, *, run_id: int | None, generation: int | None = None,
               island: int | None = None) -> None:
    """Record a candidate (once per id) and its lineage; an oversized source is stored cut (`stored_source`)."""
    try:
        decl = json.dumps(c.declaration.text)
    except Exception as e:  # a malformed declaration is recorded as such; the kernel is still kept
        decl = json.dumps({"error": str(e)})
    with a.transaction():
        a._insert("kernels", {
            "id": c.id, "source": stored_source(c.source), "family": c.family, "params_json": c.params_json,
            "operator": c.operator, "parents_json": json.dumps(list(c.parents)), "declaration_json": decl,
            "run_id": run_id, "generation": generation, "island": island, "created_at": now()}, ignore=True)
        for p in c.parents:
            a._insert("lineage", {"child": c.id, "parent": p, "run_id": run_id, "operator": c.operator},
                      ignore=True)


def add_compile(a: Archive, kernel_id: str, r: CompileResult) -> None:
    res = r.resources.to_json() if r.resources else {}
    a.insert("compiles", {
        "key": r.key, "kernel_id": kernel_id, "status": r.status, "log": r.log, "seconds": r.seconds,
        "registers": res.get("registers"), "smem_static": res.get("smem_static"), "stack": res.get("stack"),
        "spill_stores": res.get("spill_stores"), "spill_loads": res.get("spill_loads"), "created_at": now()},
        replace=True)


def add_evaluation(a: Archive, e: Evaluation, *, run_id: int | None, operator: str = "",
                   generation: int | None = None, island: int | None = None) -> int:
    t = e.timing
    return a.insert("evaluations", {
        "run_id": run_id, "kernel_id": e.kernel_id, "M": e.shape.M, "N": e.shape.N, "K": e.shape.K,
        "status": str(e.status), "error": e.error, "mode": t.mode if t else None,
        "time_ms": t.median_ms if t else None, "spread": t.spread if t else None,
        "samples_json": json.dumps([x.__dict__ | {"samples_ms": list(x.samples_ms)} for x in e.timings]),
        "clock_mhz": t.clock_mhz if t else None, "throttled": int(any(x.throttled for x in e.timings)),
        "max_rel_err": e.max_rel_err, "backend": e.backend, "gpu": e.gpu, "best_library": e.best_library,
        "best_library_ms": e.best_library_ms, "speedup": e.speedup, "roofline_fraction": e.roofline_fraction,
        "operator": operator, "generation": generation, "island": island,
        "launch_json": json.dumps(e.launch) if e.launch else None, "created_at": now()})


def put_baseline(a: Archive, gpu: str, backend: str, shape: Shape, lib: LibraryResult, *, alone: bool = False) -> None:
    """One library's timing (replacing the one stored for its GPU, backend, shape, mode and library);
    `alone`: timed in a library-only job, not beside a kernel (schema v4)."""
    t = lib.timing
    a.insert("baselines", {
        "gpu": gpu, "backend": backend, "M": shape.M, "N": shape.N, "K": shape.K, "mode": lib.mode,
        "library": lib.library, "status": lib.status, "error": lib.error, "time_ms": t.median_ms if t else None,
        "spread": t.spread if t else None, "clock_mhz": t.clock_mhz if t else None,
        "throttled": int(t.throttled) if t else None, "detail": lib.detail, "measured_at": now(),
        "alone": int(alone)}, replace=True)


def library_times(a: Archive, gpu: str, shape: Shape, mode: str, backend: str | None = None, *,
                  alone: bool = False) -> dict[str, float]:
    """Each library's time (ms) on one GPU, shape and timing mode (correct results only); with `alone`,
    only those timed in library-only jobs."""
    sql = ("select library, time_ms from baselines where gpu = ? and M = ? and N = ? and K = ? and mode = ? "
           "and status = 'ok'" + (" and alone = 1" if alone else ""))
    params: list = [gpu, shape.M, shape.N, shape.K, mode]
    if backend is not None:
        sql += " and backend = ?"
        params.append(backend)
    return {lib: ms for lib, ms in a.db.execute(sql, params).fetchall()}


def throttled_baselines(a: Archive, gpu: str, shapes: list[Shape], mode: str) -> dict[Shape, tuple[str, float]]:
    """The shapes among `shapes` whose baseline (their fastest library) was timed on a throttled GPU:
    (library, mean SM clock in MHz) per shape. Every ratio on such a shape is flattered."""
    wanted = set(shapes)
    fastest: dict[Shape, tuple[str, float, float, bool]] = {}  # library, ms, MHz, throttled
    for m, n, k, lib, ms, mhz, hot in a.db.execute(
            "select M, N, K, library, time_ms, clock_mhz, throttled from baselines where gpu = ? and mode = ? "
            "and status = 'ok' and time_ms > 0", [gpu, mode]).fetchall():
        shape = Shape(m, n, k)
        if shape in wanted and (shape not in fastest or ms < fastest[shape][1]):
            fastest[shape] = (lib, ms, mhz or 0.0, bool(hot))
    return {s: (lib, mhz) for s, (lib, _, mhz, hot) in sorted(fastest.items(), key=lambda kv: kv[0].flops) if hot}


def fastest_kernels(a: Archive, run_id: int, mode: str, *, before_generation: int | None = None
                    ) -> dict[tuple[str, Shape], float]:
    """The fastest correct kernel time (ms) per (GPU, shape) of one run, in one timing mode, timed on an
    unthrottled GPU; with `before_generation`, only from the generations before it."""
    sql = ("select gpu, M, N, K, min(time_ms) from evaluations where run_id = ? and mode = ? and status = 'ok' "
           "and time_ms > 0 and not coalesce(throttled, 0)")
    params: list = [run_id, mode]
    if before_generation is not None:
        sql += " and generation < ?"
        params.append(before_generation)
    rows = a.db.execute(sql + " group by gpu, M, N, K", params).fetchall()
    return {(gpu, Shape(m, n, k)): ms for gpu, m, n, k, ms in rows}


def put_peaks(a: Archive, gpu: str, backend: str, peaks: Peaks, info: DeviceInfo) -> None:
    a.insert("device_peaks", {"gpu": gpu, "backend": backend, "peak_tflops": peaks.tflops,
                              "bandwidth_gbs": peaks.bandwidth_gbs, "num_sms": info.num_sms,
                              "l2_bytes": info.l2_bytes, "measured_at": now()}, replace=True)


def peaks(a: Archive, gpu: str, backend: str) -> Peaks | None:
    row = a.db.execute("select peak_tflops, bandwidth_gbs from device_peaks where gpu = ? and backend = ?",
                       [gpu, backend]).fetchone()
    return Peaks(row[0], row[1], backend) if row else None

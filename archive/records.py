"""Typed writers and readers for what the evaluation pipeline produces: kernels, compiles,
evaluations, library baselines and device peaks. The evaluator decides what to write and when;
this module only knows how it is stored."""
from __future__ import annotations

import json

from evo.archive.store import Archive, now
from evo.core.kernel import Candidate
from evo.core.records import CompileResult, DeviceInfo, Evaluation, LibraryResult, Peaks
from evo.core.shapes import Shape


def add_kernel(a: Archive, c: Candidate, *, run_id: int | None, generation: int | None = None,
               island: int | None = None) -> None:
    try:
        decl = json.dumps(c.declaration.text)
    except Exception as e:  # a malformed declaration is recorded as such; the kernel is still kept
        decl = json.dumps({"error": str(e)})
    with a.transaction():
        a._insert("kernels", {
            "id": c.id, "source": c.source, "family": c.family, "params_json": c.params_json,
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


def put_baseline(a: Archive, gpu: str, backend: str, shape: Shape, lib: LibraryResult) -> None:
    t = lib.timing
    a.insert("baselines", {
        "gpu": gpu, "backend": backend, "M": shape.M, "N": shape.N, "K": shape.K, "mode": lib.mode,
        "library": lib.library, "status": lib.status, "error": lib.error, "time_ms": t.median_ms if t else None,
        "spread": t.spread if t else None, "detail": lib.detail, "measured_at": now()}, replace=True)


def library_times(a: Archive, gpu: str, shape: Shape, mode: str, backend: str | None = None) -> dict[str, float]:
    """Each library's time (ms) on one GPU, shape and timing mode (correct results only)."""
    sql = ("select library, time_ms from baselines where gpu = ? and M = ? and N = ? and K = ? and mode = ? "
           "and status = 'ok'")
    params: list = [gpu, shape.M, shape.N, shape.K, mode]
    if backend is not None:
        sql += " and backend = ?"
        params.append(backend)
    return {lib: ms for lib, ms in a.db.execute(sql, params).fetchall()}


def put_peaks(a: Archive, gpu: str, backend: str, peaks: Peaks, info: DeviceInfo) -> None:
    a.insert("device_peaks", {"gpu": gpu, "backend": backend, "peak_tflops": peaks.tflops,
                              "bandwidth_gbs": peaks.bandwidth_gbs, "num_sms": info.num_sms,
                              "l2_bytes": info.l2_bytes, "measured_at": now()}, replace=True)


def peaks(a: Archive, gpu: str, backend: str) -> Peaks | None:
    row = a.db.execute("select peak_tflops, bandwidth_gbs from device_peaks where gpu = ? and backend = ?",
                       [gpu, backend]).fetchone()
    return Peaks(row[0], row[1], backend) if row else None

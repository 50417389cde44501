"""`evo bench`: the libraries (and any given kernels) timed side by side on a shape set.

Every number in the table comes from one worker session on one GPU per shape: torch.matmul,
cuBLASLt heuristic and autotuned, and the given kernels, on the same buffers, in the same mode;
the roofline floor is computed from the peak rate and bandwidth measured at start.
"""
from __future__ import annotations

import math
from pathlib import Path

from archive import Archive
from evo.config import EvoConfig, as_dict
from evo.errors import ConfigError
from evo.evaluation.evaluator import Evaluator
from evo.kernel import Candidate
from evo.progress import Progress
from evo.shapes import build_shape_set

LIB_SHORT = {"torch": "torch", "cublaslt_heuristic": "lt_heur", "cublaslt_autotuned": "lt_auto"}


def load_kernels(paths: list[str]) -> list[Candidate]:
    out = []
    for p in paths:
        path = Path(p)
        if not path.is_file():
            raise ConfigError(f"kernels: {p} is not a file (give .cu files with the evo kernel ABI)")
        out.append(Candidate.make(path.read_text(), operator="given", params={"file": path.name}))
    return out


def run_bench(c: EvoConfig, raw=None, *, log=print) -> list[dict]:
    shapes = build_shape_set(listed=c.shapes.list, grid=c.shapes.grid)
    kernels = load_kernels(c.kernels)
    from evo.preflight import preflight
    preflight(c)
    archive = Archive.open(c.archive.path)
    run_id = archive.start_run(kind="bench", config=as_dict(raw), seed=c.search.seed, backend=c.evaluator.backend)
    ev = Evaluator(c.evaluator, archive=archive, run_id=run_id, log=log)
    rows = []
    try:
        ev.start()
        gpu = ev.devices[0]
        if c.evaluator.backend == "simulated":
            log("NOTE: evaluator=simulated: every time below is MODELLED by the CPU test double, not measured")
        peaks = ev.peaks(gpu.key)
        log(f"device: {gpu.name}  peak {peaks.tflops:.0f} TFLOP/s, copy {peaks.bandwidth_gbs:.0f} GB/s (measured)")
        progress = Progress(len(shapes), "bench", enabled=c.search.progress)
        libs = {}
        for shape, results in ev.measure_libraries(shapes):
            libs[shape] = {(r.library, r.mode): r for r in results}
            progress.update(note=str(shape))
        progress.close()
        kernel_times = {}
        if kernels:
            progress = Progress(len(kernels) * len(shapes), "kernels", enabled=c.search.progress)
            for e in ev.evaluate([(k, s) for k in kernels for s in shapes], measure_libraries=False):
                kernel_times[(e.kernel_id, e.shape)] = e
                progress.update(note=f"{e.shape} {e.status}")
            progress.close()
        for shape in shapes:
            for mode in c.evaluator.modes:
                floor = peaks.floor_ms(shape.flops, shape.min_bytes)
                row = {"M": shape.M, "N": shape.N, "K": shape.K, "mode": mode, "gflop": shape.flops / 1e9,
                       "bucket": shape.bucket, "floor_ms": floor}
                for lib in c.evaluator.libraries:
                    r = libs.get(shape, {}).get((lib, mode))
                    row[f"{lib}_ms"] = r.timing.median_ms if r and r.timing else None
                    if r and r.status != "ok":
                        row[f"{lib}_error"] = r.error
                for k in kernels:
                    e = kernel_times.get((k.id, shape))
                    t = next((x for x in e.timings if x.mode == mode), None) if e else None
                    row[f"kernel_{k.params['file']}_ms"] = t.median_ms if t and e.ok else None
                    row[f"kernel_{k.params['file']}_status"] = str(e.status) if e else "missing"
                rows.append(row)
        print_table(rows, c.evaluator.libraries, [k.params["file"] for k in kernels], log=log)
        archive.put_state(run_id, "bench_rows", rows)
        archive.set_run_status(run_id, "finished")
    except BaseException:
        archive.set_run_status(run_id, "failed")
        raise
    finally:
        ev.close()
    return rows


def print_table(rows: list[dict], libraries: list[str], kernels: list[str], *, log=print) -> None:
    head = f"{'M':>6} {'N':>6} {'K':>6} {'mode':>8} {'GFLOP':>9} {'floor_us':>9}"
    for lib in libraries:
        head += f" {LIB_SHORT[lib] + '_us':>10} {'TF/s':>6} {'roof':>5}"
    for k in kernels:
        head += f" {k[:14] + '_us':>16} {'vs_best':>7}"
    log(head)
    for r in rows:
        line = f"{r['M']:>6} {r['N']:>6} {r['K']:>6} {r['mode']:>8} {r['gflop']:>9.2f} {r['floor_ms'] * 1e3:>9.2f}"
        for lib in libraries:
            ms = r.get(f"{lib}_ms")
            line += (f" {ms * 1e3:>10.2f} {r['gflop'] / ms:>6.0f} {r['floor_ms'] / ms:>5.2f}" if ms
                     else f" {'error':>10} {'':>6} {'':>5}")
        best = min((r[f"{lib}_ms"] for lib in libraries if r.get(f"{lib}_ms")), default=None)
        for k in kernels:
            ms = r.get(f"kernel_{k}_ms")
            line += (f" {ms * 1e3:>16.2f} {best / ms:>7.3f}" if ms and best
                     else f" {r.get(f'kernel_{k}_status', ''):>16} {'':>7}")
        log(line)
    for lib in libraries[1:]:
        ratios = [r["torch_ms"] / r[f"{lib}_ms"] for r in rows if r.get("torch_ms") and r.get(f"{lib}_ms")]
        if ratios and "torch" in libraries:
            log(f"geomean torch_time / {lib}_time = {math.exp(sum(map(math.log, ratios)) / len(ratios)):.3f} "
                f"over {len(ratios)} rows")

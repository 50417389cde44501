"""`evo bench`: the libraries (and any given kernels) timed side by side on a shape set.

Every number in the table comes from one worker session on one GPU per shape: torch.matmul,
cuBLASLt heuristic and autotuned, and the given kernels, on the same buffers, in the same mode;
the roofline floor is computed from the peak rate and bandwidth measured at start. With
`kernels_of=ARCHIVE` the kernels are an archive's per-shape bests, each timed on its own shape (the
shape set is then the archive's, or with `shapes=inline` the listed shapes of it): with long replays
(`evaluator.target_replay_ms=100`) that gives a search's or a sweep's winners at sustained clocks,
with the SM clock read during their timings.
"""
from __future__ import annotations

import logging
from pathlib import Path

from tabulate import tabulate

from evo.config import EvoConfig, as_dict
from evo.core.errors import ConfigError
from evo.core.kernel import Candidate
from evo.core.logs import RESULT, simulated_note
from evo.core.shapes import build_shape_set
from evo.core.summary import geomean
from evo.search.progress import Progress
from evo.search.session import recorded_session

log = logging.getLogger(__name__)

LIB_SHORT = {"torch": "torch", "cublaslt_heuristic": "lt_heur", "cublaslt_autotuned": "lt_auto"}


ELITE = "elite"  # the column of an archive's per-shape best kernels (kernels_of)


def load_kernels(paths: list[str]) -> list[Candidate]:
    """The given .cu files as candidates, each named by its file name, or by its full path where two
    files share a name or the name is the archive bests' column (the name keys its results: two alike
    would overwrite each other). A file given twice, in any spelling, is refused."""
    resolved = [Path(p).resolve() for p in paths]
    names = [r.name for r in resolved]
    out = []
    for p, path, name in zip(paths, resolved, names):
        if not path.is_file():
            raise ConfigError(f"kernels: {p} is not a file (give .cu files with the evo kernel ABI)")
        if resolved.count(path) > 1:
            raise ConfigError(f"kernels: {path} is given {resolved.count(path)} times (give each file once)")
        label = name if names.count(name) == 1 and name != ELITE else str(path)
        out.append(Candidate.make(path.read_text(), operator="given", params={"file": label}))
    return out


def _column_labels(names: list[str]) -> tuple[list[str], bool]:
    """Short table headers for the kernels' columns: their names without `.cu`, their last 20 characters;
    or, where that would make two alike or one like a library's or the floor's column, k1, k2, ...
    (True: to be named below the table)."""
    short = [(n[:-3] if n.endswith(".cu") else n)[-20:] for n in names]
    taken = {*LIB_SHORT.values(), "floor"}
    if len(set(short)) == len(short) and not taken & set(short):
        return short, False
    return [f"k{i + 1}" for i in range(len(names))], True


def run_bench(c: EvoConfig, raw=None) -> list[dict]:
    listed = build_shape_set(listed=c.shapes.list, grid=c.shapes.grid)
    elite = archive_bests(c.kernels_of) if c.kernels_of else {}
    if elite and c.shapes.name == "inline":
        elite = _listed_of(elite, listed, c.kernels_of)
    shapes = sorted(elite) if elite else listed
    kernels = load_kernels(c.kernels)
    kernel_names = [k.params["file"] for k in kernels] + ([ELITE] if elite else [])
    with recorded_session(c, kind="bench", raw_config=as_dict(raw, fallback=c)) as s:
        ev = s.evaluator
        gpu = ev.devices[0]
        peaks = ev.peaks(gpu.key)
        how = "modelled by the test double" if c.evaluator.backend == "simulated" else "measured"
        log.info(f"device: {gpu.name}  peak {peaks.tflops:.0f} TFLOP/s, copy {peaks.bandwidth_gbs:.0f} GB/s ({how})")
        libs: dict = {}
        kernel_times: dict = {}
        pairs = [(k, shape) for k in kernels for shape in shapes] + [(k, shape) for shape, k in elite.items()]
        try:
            progress = Progress(len(shapes), "bench", enabled=c.search.progress)
            for shape, results in ev.measure_libraries(shapes):
                libs[shape] = {(r.library, r.mode): r for r in results}
                progress.update(note=str(shape))
            progress.close()
            if pairs:
                progress = Progress(len(pairs), "kernels", enabled=c.search.progress)
                for e in ev.evaluate(pairs, measure_libraries=False, race=False):
                    kernel_times[(e.kernel_id, e.shape)] = e
                    progress.update(note=f"{e.shape} {e.status}")
                progress.close()
            interrupted = False
        except KeyboardInterrupt:  # what was timed before the interruption is still shown, then the run stops
            interrupted = True
            progress.close()  # the table starts on a line of its own
        timed = [shape for shape in shapes if shape in libs] if interrupted else shapes
        rows = bench_rows(c, timed, peaks, libs, kernels, elite, kernel_times)
        title = (f"interrupted: the {len(timed)} of {len(shapes)} shapes whose libraries were timed, with "
                 f"{len(kernel_times)} of {len(pairs)} kernel timings" if interrupted else
                 f"libraries{' and kernels' if pairs else ''} on {len(shapes)} shape{'s' * (len(shapes) != 1)}")
        log.info(simulated_note(c.evaluator.backend) + title + "\n" + format_bench(rows, c.evaluator.libraries, kernel_names),
                 extra=RESULT)
        s.archive.put_state(s.run_id, "bench_rows", rows)
        if interrupted:
            raise KeyboardInterrupt
    return rows


def bench_rows(c: EvoConfig, shapes: list, peaks, libs: dict, kernels: list[Candidate],
               elite: dict, kernel_times: dict) -> list[dict]:
    """One row per shape and mode: the roofline floor, each library's time (or error), each given
    kernel's time and status, and the mean SM clock of the row's timings."""
    rows = []
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
            clocks = [r.timing.clock_mhz for r in libs.get(shape, {}).values()
                      if r.mode == mode and r.timing and r.timing.clock_mhz]
            named = [(k.params["file"], k) for k in kernels] + ([(ELITE, elite[shape])] if shape in elite else [])
            for name, k in named:
                ke = kernel_times.get((k.id, shape))
                t = next((x for x in ke.timings if x.mode == mode), None) if ke else None
                row[f"kernel_{name}_ms"] = t.median_ms if t and ke and ke.ok else None
                row[f"kernel_{name}_status"] = str(ke.status) if ke else "missing"
                clocks += [t.clock_mhz] if t and t.clock_mhz else []
            if shape in elite:
                row["elite_kernel"] = elite[shape].id
            row["clock_mhz"] = sum(clocks) / len(clocks) if clocks else None  # mean SM clock of the row's timings
            rows.append(row)
    return rows


def format_bench(rows: list[dict], libraries: list[str], kernels: list[str]) -> str:
    """The bench table: per shape and mode, the roofline floor, each library's time, rate and
    roofline fraction, and each given kernel's time and speedup over the best library."""
    headers = ["M", "N", "K", "mode", "GFLOP", "floor_us", "MHz"]
    for lib in libraries:
        headers += [f"{LIB_SHORT[lib]}_us", "TF/s", "roof"]
    labels, numbered = _column_labels(kernels)
    for label in labels:
        headers += [f"{label}_us", "TF/s", "roof", "vs_best"]
    table = []
    for r in rows:
        clock = r.get("clock_mhz")
        line = [r["M"], r["N"], r["K"], r["mode"], f"{r['gflop']:.2f}", f"{r['floor_ms'] * 1e3:.2f}",
                f"{clock:.0f}" if clock else "-"]
        for lib in libraries:
            ms = r.get(f"{lib}_ms")
            line += [f"{ms * 1e3:.2f}", f"{r['gflop'] / ms:.0f}", f"{r['floor_ms'] / ms:.2f}"] if ms else ["error", "", ""]
        best = _best_library_ms(r, libraries)
        for k in kernels:
            ms = r.get(f"kernel_{k}_ms")
            line += ([f"{ms * 1e3:.2f}", f"{r['gflop'] / ms:.0f}", f"{r['floor_ms'] / ms:.2f}",
                      f"{best / ms:.3f}" if best else ""] if ms else [r.get(f"kernel_{k}_status", ""), "", "", ""])
        table.append(line)
    text = tabulate(table, headers=headers, disable_numparse=True, stralign="right")
    if numbered:
        text += "".join(f"\n{label}: {k}" for label, k in zip(labels, kernels))
    for lib in libraries[1:]:
        ratios = [r["torch_ms"] / r[f"{lib}_ms"] for r in rows if r.get("torch_ms") and r.get(f"{lib}_ms")]
        if ratios and "torch" in libraries:
            text += (f"\ngeomean torch_time / {lib}_time = {geomean(ratios):.3f} "
                     f"over {len(ratios)} rows")
    for k in kernels:
        ratios = [lib_ms / r[f"kernel_{k}_ms"] for r in rows
                  if r.get(f"kernel_{k}_ms") and (lib_ms := _best_library_ms(r, libraries))]
        if ratios:
            text += (f"\ngeomean best library time / {k} time = "
                     f"{geomean(ratios):.3f} over {len(ratios)} rows")
    return text


def _best_library_ms(row: dict, libraries: list[str]) -> float | None:
    """The fastest library time of a bench row (None where no library gave one)."""
    return min((row[f"{lib}_ms"] for lib in libraries if row.get(f"{lib}_ms")), default=None)


def _listed_of(elite: dict, listed: list, path: str | None) -> dict:
    """The archive's bests on the shapes given inline; a listed shape it has no kernel for is refused."""
    missing = [s for s in listed if s not in elite]
    if missing:
        have = ", ".join(map(str, sorted(elite)[:8])) + (", ..." if len(elite) > 8 else "")
        raise ConfigError(f"kernels_of: {path} has no kernel for {', '.join(map(str, missing))} (it has {len(elite)} "
                          f"shapes: {have}); list only its shapes, or leave shapes= out to time all of them")
    return {s: elite[s] for s in listed}


def archive_bests(path: str) -> dict:
    """An archive's per-shape best kernels (its last run's), for `kernels_of` (.sqlite or .sqlite.gz)."""
    from evo.search.retime import bests
    if not Path(path).is_file():
        raise ConfigError(f"kernels_of: {path} is not a file (give an evo archive, .sqlite or .sqlite.gz)")
    return bests(Path(path))

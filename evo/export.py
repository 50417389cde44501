"""`evo export`: the best kernel per shape as standalone .cu files, a manifest.json that outside
tools can use without parsing the sources, and (where nvcc is present) the compiled cubins that
`evo.dispatch` loads. The manifest's `tables` route every M of an exported (N, K) to a kernel or to
torch (evo.core.dispatch_table); `evo.dispatch.verify` re-checks them on the GPU.
"""
from __future__ import annotations

import concurrent.futures as cf
import datetime as dt
import json
import logging
import os
import re
from pathlib import Path

from evo.archive import Archive
from evo.archive import queries as q
from evo.archive.empty import no_kernels
from evo.core.dispatch_table import build_tables, recorded_speedup
from evo.core.errors import CompileToolError, EvoError
from evo.core.kernel import parse_declaration
from evo.core.records import CompileResult
from evo.core.version import VERSION
from evo.evaluation.compiler import DEFAULT_FLAGS, Compiler, without_ptxas_report
from evo.evaluation.cubin_calls import outside_calls

log = logging.getLogger(__name__)

FORMAT = "evo-export/2"
DEFAULT_NUM_SMS = 132  # H100/H200 SXM, when the archive recorded no SM count

_DEVICE_VARIABLE = re.compile(r"^\s*(?:static\s+)?__(?:device|managed)__\b(?:\s+__align__\(\d+\))?[^(;{]*;", re.M)


def keeps_module_state(source: str) -> bool:
    """Whether a kernel keeps state in module globals (`__device__` or `__managed__` variables, such as
    split-K's workspace), so that two of its launches at once share it: a declaration ending in `;` with
    no parenthesis before it (functions have one). Over-counting errs safe: evo.dispatch serialises such
    kernels across streams (docs/export.md)."""
    return bool(_DEVICE_VARIABLE.search(source))

def compile_all(compiler: Compiler, sources: dict[str, str]) -> dict[str, tuple[CompileResult, bool]]:
    """kernel id -> (its compile, whether evo.dispatch may launch it as a programmatic dependent: its PTX
    waits for the previous grid before touching memory, evo.core.kernel.waits_first_in_ptx). Both come
    from the compile cache where the search compiled the kernel with these flags; else nvcc runs once per
    distinct kernel, in parallel."""
    def one(item: tuple[str, str]) -> tuple[CompileResult, bool]:
        kernel_id, source = item
        res = compiler.compile(source)
        try:
            waits = compiler.pdl_dispatch(source, res)
        except CompileToolError as e:
            log.warning(f"kernel {kernel_id[:12]}: no PTX to check ({e}); it will be launched without PDL")
            return res, False
        if not waits:
            log.info(f"kernel {kernel_id[:12]}: its PTX may touch global memory before griddepcontrol.wait "
                     f"(or has no wait): launched without PDL")
        return res, waits
    with cf.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        return dict(zip(sources, pool.map(one, sources.items())))


def export(archive_path: str, out: str = "exported", *, run_id: int | None = None, with_cubins: bool = True,
) -> dict:
    a = Archive.open(archive_path, readonly=True)
    run = q.resolve_run(a, run_id)
    rows = q.elites(a, run["id"])
    if not rows:  # a bench (or a run that found nothing) can be the last run of a search's archive
        raise EvoError(f"nothing to export: {no_kernels(a, run, 'export')}")
    out_dir = Path(out)
    out_dir.mkdir(parents=True, exist_ok=True)
    compiler = None
    if not with_cubins:
        log.info("--no-cubins: no cubins, and no PTX check, so evo.dispatch launches every kernel without PDL")
    else:
        try:
            compiler = Compiler()
        except CompileToolError as e:
            log.warning(f"no cubins exported ({e}); evo.dispatch will compile the .cu files on first use and "
                        f"launch them without PDL (the PTX check needs nvcc)")
    flags = without_ptxas_report(DEFAULT_FLAGS)
    entries, cells = [], []
    sources = {r["kernel_id"]: q.kernel_source(a, r["kernel_id"]) for r in rows}
    compiled = compile_all(compiler, sources) if compiler else {}
    for r in rows:
        source = sources[r["kernel_id"]]
        name = f"hgemm_{r['M']}x{r['N']}x{r['K']}"
        res = compiled[r["kernel_id"]][0] if compiler else None
        refused = outside_calls(res.cubin) if res is not None and res.ok and res.cubin is not None else None
        if refused:  # archived before the evaluator checked cubins (evo.evaluation.cubin_calls)
            log.warning(f"{name}: not exported: {refused}; torch runs this shape")
            continue
        (out_dir / f"{name}.cu").write_text(source)
        cubin = None
        if res is not None:
            if res.ok and res.cubin is not None:
                (out_dir / f"{name}.cubin").write_bytes(res.cubin)
                cubin = f"{name}.cubin"
            else:
                log.warning(f"{name}: nvcc failed here ({res.status}); evo.dispatch will compile the .cu on first use")
        if not r["launch_json"]:
            raise EvoError(f"the elite of {r['cell']} (kernel {r['kernel_id'][:12]}) has no recorded launch: "
                           f"the archive is damaged; re-run the shape")
        launch = json.loads(r["launch_json"])
        params = ["const half* A", "const half* B", "half* C", "int M", "int N", "int K"]
        params += [f"const __grid_constant__ CUtensorMap tm{t['operand']}" for t in launch.get("tensor_maps", [])]
        entries.append({
            "M": r["M"], "N": r["N"], "K": r["K"], "file": f"{name}.cu", "cubin": cubin, "entry": "hgemm",
            "nvcc_flags": flags, "grid": launch["grid"], "block": launch["block"], "smem": launch["smem"],
            "cluster": launch["cluster"], "tensor_maps": launch.get("tensor_maps", []),
            "abi": f"hgemm({', '.join(params)})",
            "reentrant": not keeps_module_state(source),  # e.g. split-K's workspace: evo.dispatch serialises it
            "pdl": r["kernel_id"] in compiled and compiled[r["kernel_id"]][1],
            "backend": r["backend"],  # on each entry too: a modelled time copied out still says so
            "time_ms": r["time_ms"], "timing_mode": r["mode"], "library_ms": r["libraries"],
            "speedup": r["speedup"], "best_library": r["best_library"], "roofline_fraction": r["roofline_fraction"],
            "kernel_id": r["kernel_id"], "family": r["family"], "measured_at": r["created_at"],
        })
        cells.append({"M": r["M"], "N": r["N"], "K": r["K"], "name": name, "decl": parse_declaration(source),
                      "recorded_speedup": recorded_speedup(entries[-1])})
    gpus = sorted({r["gpu"] for r in rows})
    simulated = rows[0]["backend"] == "simulated"
    num_sms = q.device_num_sms(a, gpus[0], rows[0]["backend"]) or DEFAULT_NUM_SMS
    manifest = {"format": FORMAT, "evo_version": VERSION, "exported_at": dt.datetime.now(dt.UTC).isoformat(),
                "archive": str(archive_path), "run_id": run["id"], "gpu": gpus[0] if len(gpus) == 1 else gpus,
                "backend": rows[0]["backend"], "nvcc": compiler.version if compiler else None,
                "layout": "row-major A[M,K], B[K,N], C[M,N]; fp16 in and out, fp32 accumulation",
                "num_sms": num_sms, "kernels": entries, "tables": build_tables(cells, num_sms=num_sms, simulated=simulated)}
    if simulated:
        manifest["warning"] = "times are MODELLED by the CPU test double (evaluator=simulated), not measured"
        log.warning("this run used evaluator=simulated: the manifest's times are modelled, not measured")
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=1))
    log.info(f"exported {len(entries)} kernels to {out_dir}/ (manifest.json)")
    return manifest


def next_step(out: str, *, verified: bool, again: str = "") -> str:
    """What to do with an export folder: use it, or (not verified yet) re-check it with `again`, the
    `evo export ... --verify` to run on the GPU machine, since evo.dispatch skips unverified kernels."""
    use = f"evo.dispatch.configure('{out}') then evo.dispatch.matmul(a, b)"
    if verified:
        return f"use them with {use}"
    return (f"not verified: evo.dispatch skips unverified kernels (torch runs every call); on the GPU machine "
            f"that will run them: {again or 'evo export ARCHIVE'} --verify")

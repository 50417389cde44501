"""The argparse commands: `evo resume`, `evo export`, `evo report` (thin layers over the library)."""
from __future__ import annotations

import argparse
import logging
import threading

from evo.cli.terminal import interrupted, stopped
from evo.core.errors import EvoError
from evo.core.extras import install_hint
from evo.core.logs import RESULT, simulated_note
from evo.core.version import VERSION

log = logging.getLogger(__name__)


def _parser(prog: str, description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description=description)
    p.add_argument("--version", action="version", version=f"evo {VERSION}")
    return p


def resume_cli(argv: list[str]) -> None:
    from evo.search import resume
    p = _parser("evo resume", "Continue a stopped (or killed) search where it stopped, making the same decisions "
                "an uninterrupted run would have made. Overrides (key=value) change the stored configuration, "
                "e.g. raise the budget of a finished run.")
    p.add_argument("archive", help="the search's SQLite archive")
    p.add_argument("--run", type=int, default=None, help="run id (default: the last search run)")
    p.add_argument("--take-over", action="store_true",
                   help="continue a run still marked as held by a process on another machine (or container) that "
                        "is known to be gone, e.g. after a kill -9 there; a gone process on this machine is taken "
                        "over without it")
    p.add_argument("overrides", nargs="*", help="e.g. search.max_evaluations=5000 islands.n=6 llm=none; settings "
                   "that change what the archive means (shapes, search.seed, evaluator.backend, ...) are refused")
    a = p.parse_intermixed_args(argv)  # `ARCHIVE --run 1 key=value` as well as `--run 1 ARCHIVE key=value`
    try:
        resume(a.archive, a.run, overrides=a.overrides, take_over=a.take_over)
    except KeyboardInterrupt as stop:
        again = getattr(stop, "resume_hint", None) or " ".join(["evo resume", a.archive,
                                                               *(["--run", str(a.run)] if a.run else [])])
        stopped(interrupted(a.archive, again), stop)


def export_cli(argv: list[str]) -> None:
    from evo.export import export, next_step
    p = _parser("evo export", "Write the best kernel per shape of a run as .cu files with a manifest.json (and "
                "cubins, where nvcc is present), ready for evo.dispatch or outside tools.")
    p.add_argument("archive", help="the SQLite archive of a search or sweep")
    p.add_argument("--run", type=int, default=None, help="run id (default: the last run)")
    p.add_argument("--out", default="exported", help="output folder (default: exported/)")
    p.add_argument("--no-cubins", action="store_true",
                   help="do not compile cubins (nor check the kernels for PDL: they are launched plainly)")
    p.add_argument("--verify", action="store_true", help="re-check every range on this GPU (correct over the "
                   "range, faster than torch beyond noise); evo.dispatch uses only ranges re-checked on its GPU")
    a = p.parse_args(argv)
    manifest = export(a.archive, a.out, run_id=a.run, with_cubins=not a.no_cubins)
    out = a.out.rstrip("/") or a.out
    if not a.verify:
        again = " ".join(["evo export", a.archive, *(["--run", str(a.run)] if a.run else []), "--out", out])
        log.info(simulated_note(manifest["backend"]) + next_step(out, verified=False, again=again), extra=RESULT)
        return
    try:
        from evo.dispatch.verify import verify
    except ImportError as e:
        raise EvoError(f"--verify needs torch with CUDA ({e}): {install_hint('gpu')}, on the GPU machine; the export "
                       f"itself is written to {out}/") from None
    verify(a.out)
    log.info(next_step(out, verified=True), extra=RESULT)


def report_cli(argv: list[str]) -> None:
    from evo.report import report
    p = _parser("evo report", "One self-contained HTML file (plots embedded) plus the PNGs, to understand a run: "
                "speedups by bucket and shape, best so far per island, operator probabilities, coverage, failures. "
                "Needs the report extra (matplotlib, Jinja2).")
    p.add_argument("archive", help="the SQLite archive")
    p.add_argument("--run", type=int, default=None, help="run id (default: the last run)")
    p.add_argument("--out", default=None, help="output folder (default: next to the archive)")
    a = p.parse_args(argv)
    report(a.archive, run_id=a.run, out=a.out)


def cluster_cli(argv: list[str]) -> None:
    from evo.evaluation.jobqueue import check_submit, make_cluster, read_spec
    p = _parser("evo cluster", "Start a Dask cluster on a batch system (SLURM, PBS) from a description such as "
                "conf/cluster/slurm.yaml, print its scheduler address, and keep it up until Ctrl-C. Searches use it "
                "with `evo run evaluator.cluster=ADDRESS`.")
    p.add_argument("config", help="the cluster description (YAML: kind, jobs, options)")
    p.add_argument("--jobs", type=int, default=None, help="batch jobs to submit (default: `jobs` of the file)")
    p.add_argument("--job-script", action="store_true", help="print the job script and exit, submitting nothing")
    a = p.parse_args(argv)
    spec = read_spec(a.config)
    if not a.job_script:
        check_submit(spec)
    cluster = make_cluster(spec)
    try:
        if a.job_script:
            print(cluster.job_script())
            return
        jobs = spec["jobs"] if a.jobs is None else a.jobs
        cluster.scale(jobs=jobs)
        print(f"scheduler {cluster.scheduler_address} ({jobs} job(s) asked of the batch system; "
              f"dashboard {cluster.dashboard_link})\n"
              f"use it with: evo run evaluator.cluster={cluster.scheduler_address} ...   (Ctrl-C here ends the jobs)",
              flush=True)
        threading.Event().wait()  # until Ctrl-C (or SIGTERM): the jobs end with the cluster
    finally:
        cluster.close()

"""One way to start a recorded session, shared by `run`, `resume`, `sweep`, `bench` and `selftest`.

    with recorded_session(c, kind="sweep") as s:   # preflight, archive, run record, log file, evaluator
        ... s.archive, s.run_id, s.evaluator ...
    # -> the run's status is "finished", "stopped" (Ctrl-C) or "failed" (any other exception)

Preflight checks (nvcc, a GPU, an API key, a replay archive) run before the run is recorded, so a
machine that cannot do the work leaves no run behind. A session owns its run while it lasts
(`evo.archive.ownership`): a second process that tries to continue it is refused with one line.
Every session writes a log file beside the archive (`runs/evo.sqlite` -> `runs/evo.run3.log`),
worker processes' messages included.
"""
from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from evo.archive import Archive
from evo.archive.ownership import Owner, RunTakenOver, claim, live_owner, release
from evo.archive.queries import running_runs
from evo.config import EvoConfig, as_dict
from evo.core.errors import ArchiveError, ConfigError, GpuUnavailable
from evo.core.shapes import build_shape_set
from evo.evaluation.compiler import nvcc_version
from evo.evaluation.evaluator import Evaluator
from evo.evaluation.limits import check_fits
from evo.evaluation.pool import visible_gpus
from evo.mutators.llm.client import stop_new_calls
from evo.mutators.llm.prices import require_price
from evo.mutators.llm.recorder import bill_calls_left_in_flight
from evo.search.overlap import wait_for_answers

log = logging.getLogger(__name__)
LOG_FORMAT = "%(asctime)s %(levelname)-7s %(name)s: %(message)s"


def preflight(c: EvoConfig, *, needs_llm: bool = False) -> None:
    """Raise a one-line error for a missing GPU, nvcc, API key or replay archive."""
    nvcc_version()  # CompileToolError with what to do when nvcc is missing
    if c.evaluator.cluster:
        from evo.evaluation.dask_pool import require_distributed
        require_distributed()  # ConfigError saying what to install
    remote = bool(c.evaluator.cluster) and c.evaluator.cluster != "local"  # the GPUs are on the cluster's hosts
    if c.evaluator.backend == "gpu" and not remote and not visible_gpus():
        raise GpuUnavailable("no NVIDIA GPU is visible here: run on a GPU machine, or use evaluator=simulated "
                             "for a dry run with modelled (not measured) times")
    if needs_llm:
        if c.llm.backend == "anthropic" and not os.environ.get("ANTHROPIC_API_KEY"):
            raise ConfigError("llm=anthropic needs ANTHROPIC_API_KEY in the environment (or use llm=none)")
        if c.llm.backend == "replay" and not Path(c.llm.replay_from or "").is_file():
            raise ConfigError(f"llm.replay_from={c.llm.replay_from}: no such archive")
        if c.llm.backend == "anthropic" or (c.llm.backend == "auto" and os.environ.get("ANTHROPIC_API_KEY")):
            require_price(c.llm)  # a budget cannot be kept on a model whose price is unknown


def run_log_path(archive_path: str | Path, run_id: int) -> Path:
    """The log file of one run, beside its archive."""
    p = Path(archive_path)
    return p.with_name(f"{p.stem}.run{run_id}.log")


@contextlib.contextmanager
def run_log(archive_path: str | Path, run_id: int) -> Iterator[Path]:
    """Copy every `evo` log record (INFO and above) into the run's log file while the block runs."""
    path = run_log_path(archive_path, run_id)
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setLevel(logging.INFO)
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    root = logging.getLogger("evo")
    root.addHandler(handler)
    if root.getEffectiveLevel() > logging.INFO:  # quiet on the terminal, complete in the file
        root.setLevel(logging.INFO)
    try:
        yield path
    finally:
        root.removeHandler(handler)
        handler.close()


@dataclass
class Session:
    config: EvoConfig
    archive: Archive
    run_id: int
    evaluator: Evaluator
    log_path: Path
    owner: Owner | None = None  # this session's claim on the run (see evo.archive.ownership)


def _take_up(c: EvoConfig, kind: str, raw_config: dict | None, resume_run: int | None,
             take_over: bool) -> tuple[Archive, int, Owner, str]:
    """Open the archive and claim the run (a new one, or `resume_run`) before anything else is written."""
    archive = Archive.open(c.archive.path, create=resume_run is None)
    try:
        busy = _live_runs(archive, but=resume_run)
        if busy:  # allowed (one process per run), but the user should know two runs share the file
            log.warning(f"{archive.path} also holds {busy} still running: this {kind} run goes beside it")
        if resume_run is None:
            with archive.transaction():  # the run and its owner together
                run_id = archive.start_run(kind=kind, config=raw_config or as_dict(c), seed=c.search.seed,
                                           backend=c.evaluator.backend)
                owner, note = claim(archive, run_id)
        else:
            run_id = resume_run
            owner, note = claim(archive, run_id, take_over=take_over)
    except BaseException:
        archive.close()
        raise
    return archive, run_id, owner, note


def _live_runs(archive: Archive, *, but: int | None) -> str:
    """The archive's runs (other than `but`) whose owning process is alive on this machine, e.g.
    "run 1 (pid 4242 on host ...)"."""
    found = []
    for run_id in running_runs(archive):
        if run_id == but:
            continue
        owner = live_owner(archive, run_id)
        if owner is not None:
            found.append(f"run {run_id} ({owner.describe()})")
    return ", ".join(found)


def _let_go(archive: Archive, run_id: int, owner: Owner, status: str | None) -> None:
    """Record the final status and release the run, unless another process took it over."""
    try:
        if not release(archive, run_id, owner, status):
            log.warning(f"run {run_id} was taken over by another process: its status is left to that process")
    except ArchiveError as e:  # a damaged or vanished file: say so, without hiding what ended the session
        log.error(f"could not record the end of run {run_id} ({status}): {e}")


@contextlib.contextmanager
def recorded_session(c: EvoConfig, *, kind: str, raw_config: dict | None = None, needs_llm: bool = False,
                     resume_run: int | None = None, take_over: bool = False) -> Iterator[Session]:
    """Preflight, open the archive, record the run (or take up `resume_run`) and claim it, start
    the evaluator; on leaving, stop the workers, record the run's final status and release it.

    Another live process holding `resume_run` refuses the session (RunHeld) before anything is
    written; `take_over` takes a claim that cannot be checked from here (another host)."""
    preflight(c, needs_llm=needs_llm)
    archive, run_id, owner, note = _take_up(c, kind, raw_config, resume_run, take_over)
    with contextlib.closing(archive), run_log(archive.path, run_id) as log_path:
        if note:
            log.warning(note)
        log.info(f"{kind} run {run_id} in {archive.path} (log: {log_path})")
        evaluator = None
        status: str | None = "failed"
        try:
            if c.evaluator.backend == "simulated":
                log.warning("evaluator=simulated: every time is MODELLED by the CPU test double, not measured")
            evaluator = Evaluator(c.evaluator, archive=archive, run_id=run_id)
            evaluator.start()
            if kind != "selftest":  # a shape whose buffers cannot fit the GPU: refused before any work
                check_fits(build_shape_set(listed=c.shapes.list, grid=c.shapes.grid), evaluator.devices)
            archive.set_run_status(run_id, "running")
            yield Session(c, archive, run_id, evaluator, log_path, owner)
            status = "finished"
        except KeyboardInterrupt as stop:
            status = "stopped"
            again = f"evo resume {archive.path} --run {run_id}" if kind == "search" else None
            stop.resume_hint = again  # type: ignore[attr-defined]  # the command's last line says the same (evo.cli)
            log.warning(f"{kind} run {run_id} stopped ({str(stop) or 'Ctrl-C'})"  # into the run's log too
                        + (f": continue it with `{again}`" if again else ""))
            stop_new_calls()  # nothing more is sent; what was sent is waited for (billed), for `evo resume`
            if wait_for_answers(c.llm.stop_grace_s):
                bill_calls_left_in_flight()  # charged at an upper estimate: sent is paid for, answered or not
            raise
        except RunTakenOver:
            status = None
            raise
        finally:
            try:
                if evaluator is not None:
                    evaluator.close()
            finally:
                _let_go(archive, run_id, owner, status)

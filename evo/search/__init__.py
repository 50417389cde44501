"""The search layer: the recorded session every command runs in, the island search with
MAP-Elites cells by shape (`evo run`, `evo resume`), sweeps of the families' genomes
(`evo sweep`) and the library bench (`evo bench`).

    result = run_search(config)            # -> SearchResult(archive, run_id, reason)
    result = resume("runs/evo.sqlite")     # continue the last unfinished search run
"""
from __future__ import annotations

import json
import logging
from dataclasses import dataclass

from omegaconf import DictConfig, OmegaConf

from evo.archive import Archive
from evo.config import EvoConfig, as_dict, validate
from evo.core.errors import ConfigError, EvoError
from evo.core.logs import RESULT
from evo.search.loop import Search
from evo.search.session import recorded_session

log = logging.getLogger(__name__)

__all__ = ["SearchResult", "run_search", "resume", "config_from_dict", "run_selftest_session", "Search"]


@dataclass(frozen=True)
class SearchResult:
    archive: str  # path of the archive
    run_id: int
    reason: str  # why the search stopped


def _search(c: EvoConfig, *, raw_config: dict | None = None, resume_run: int | None = None,
            store_config: bool = False) -> SearchResult:
    from evo.mutators.llm import build_llm_operators
    with recorded_session(c, kind="search", raw_config=raw_config, needs_llm=True, resume_run=resume_run) as s:
        if store_config:  # a resume with overrides: the run continues under the new configuration
            s.archive.set_run_config(s.run_id, as_dict(c))
        if resume_run is None:
            log.info(f"resume with `evo resume {s.archive.path}` after a stop")
        llm_ops, note = build_llm_operators(c.llm, archive=s.archive, run_id=s.run_id)
        log.info(note)
        search = Search(c, s.archive, s.run_id, s.evaluator, llm_operators=llm_ops)
        if search.load():
            log.info(f"resuming run {s.run_id} at generation {search.state.generation} "
                     f"({search.state.spent} evaluations done)")
        reason = search.run()
        log.info(f"stopped: {reason}. Browse with `evo archive elites {s.archive.path}`; "
                 f"export with `evo export {s.archive.path}`", extra=RESULT)
        return SearchResult(str(s.archive.path), s.run_id, reason)


def run_search(c: EvoConfig, raw=None) -> SearchResult:
    """A new search run recorded in `c.archive.path` (created if missing)."""
    return _search(c, raw_config=as_dict(raw, fallback=c))


def resume(path: str, run_id: int | None = None, *, overrides: list[str] | None = None) -> SearchResult:
    """Continue a stopped or killed search run (the last one by default); overrides change its config."""
    archive = Archive.open(path, create=False)
    try:
        run = archive.run(run_id) if run_id else archive.last_run("search")
        if run is None:
            raise EvoError(f"{path} holds no search run to resume: start one with `evo run archive.path={path}`")
        if run["kind"] != "search":
            raise EvoError(f"run {run['id']} of {path} is a {run['kind']}, not a search: only searches resume")
        if run["status"] == "finished" and not overrides:
            raise EvoError(f"run {run['id']} of {path} finished; raise its budget to continue, e.g. "
                           f"`evo resume {path} search.max_evaluations=5000`")
        c = config_from_dict(json.loads(run["config_json"]), overrides or [])
        c.archive.path = str(path)  # the archive given, wherever the run first wrote it
    finally:
        archive.close()
    return _search(c, resume_run=run["id"], store_config=bool(overrides))


def config_from_dict(config: dict, overrides: list[str]) -> EvoConfig:
    """A stored configuration with `key=value` overrides, validated."""
    try:
        cfg = OmegaConf.merge(OmegaConf.structured(EvoConfig), config, OmegaConf.from_dotlist(overrides))
    except Exception as e:
        raise ConfigError(f"cannot use the stored or given configuration: {str(e).splitlines()[0]}") from None
    if not isinstance(cfg, DictConfig):
        raise ConfigError("the stored configuration is not a mapping")
    return validate(cfg)


def run_selftest_session(c: EvoConfig, raw=None) -> list[dict]:
    """`evo selftest`: the deliberately bad kernels on this machine's evaluator, recorded as a run."""
    from evo.evaluation.selftest import run_selftest
    with recorded_session(c, kind="selftest", raw_config=as_dict(raw, fallback=c)) as s:
        log.info(f"self-test on {s.evaluator.devices[0].key} ({c.evaluator.backend})")
        rows = run_selftest(s.evaluator)
        failed = [r for r in rows if not r["pass"]]
        log.info(f"{len(rows) - len(failed)}/{len(rows)} as expected", extra=RESULT)
        s.archive.put_state(s.run_id, "selftest", rows)
        return rows

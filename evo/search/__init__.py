"""The search layer: the recorded session every command runs in, the island search with
MAP-Elites cells by shape (`evo run`, `evo resume`), sweeps of the families' genomes
(`evo sweep`) and the library bench (`evo bench`).

    result = run_search(config)            # -> SearchResult(archive, run_id, reason)
    result = resume("runs/evo.sqlite")     # continue the last unfinished search run
    result = resume("runs/evo.sqlite", overrides=["search.max_evaluations=5000"])   # see resume()
"""
from __future__ import annotations

import copy
import json
import logging
from dataclasses import dataclass
from importlib import resources

from omegaconf import DictConfig, OmegaConf

from evo.archive import Archive, queries
from evo.archive.ownership import live_owner, refuse_if_held
from evo.config import GROUPS, EvoConfig, as_dict, validate
from evo.core.errors import ConfigError, EvoError
from evo.core.logs import RESULT, simulated_note
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
            store_config: bool = False, take_over: bool = False) -> SearchResult:
    from evo.mutators.llm import build_llm_operators
    with recorded_session(c, kind="search", raw_config=raw_config, needs_llm=True, resume_run=resume_run,
                          take_over=take_over) as s:
        if resume_run is None:
            log.info(f"resume with `evo resume {s.archive.path}` after a stop")
        llm_ops, note = build_llm_operators(c.llm, archive=s.archive, run_id=s.run_id)
        log.info(note)
        search = Search(c, s.archive, s.run_id, s.evaluator, llm_operators=llm_ops, owner=s.owner)
        if search.load():
            log.info(f"resuming run {s.run_id} at generation {search.state.generation} "
                     f"({search.state.spent} evaluations done)")
        if store_config:  # the resumed session has started: the run continues under the new settings
            s.archive.set_run_config(s.run_id, as_dict(c))
        reason = search.run()
        last = s.archive.last_run()
        which = "" if last is None or last["id"] == s.run_id else f" --run {s.run_id}"  # a later run (a self-test) is the default
        log.info(f"{simulated_note(c.evaluator.backend)}finished: {reason}. Browse with `evo archive elites "
                 f"{s.archive.path}{which}`; export with `evo export {s.archive.path}{which}`", extra=RESULT)
        return SearchResult(str(s.archive.path), s.run_id, reason)


def run_search(c: EvoConfig, raw=None) -> SearchResult:
    """A new search run recorded in `c.archive.path` (created if missing)."""
    return _search(c, raw_config=as_dict(raw, fallback=c))


#: Settings a resumed run keeps, and why: changing them would change what the archive's rows mean.
FIXED = {
    "shapes": "the shapes are the run's MAP-Elites cells",
    "search.seed": "the seed made every decision so far; another seed is another run",
    "evaluator.backend": "measured (gpu) and modelled (simulated) times must not mix in one run",
    "evaluator.mode": "the cells compare kernels by their time in this timing mode",
    "evaluator.pdl": "the cells compare kernels launched one way (PDL launches read faster back to back)",
    "evaluator.libraries": "speedups are measured against these libraries",
    "islands.specialize": "the islands' shapes and families follow from it",
    "archive": "the archive is the file given to `evo resume`",
    "sweep": "a setting of `evo sweep`, not of a search",
    "compare": "a setting of `evo compare`, not of a search",
    "family": "a setting of `evo sweep`, not of a search",
    "kernels": "a setting of `evo bench`, not of a search",
}


def resume(path: str, run_id: int | None = None, *, overrides: list[str] | None = None,
           take_over: bool = False) -> SearchResult:
    """Continue a stopped or killed search run (the last one by default); overrides change its config.

    Settings that only steer the rest of the search can change: budgets (`search.max_evaluations`,
    `search.max_wall_hours`), `search.children_per_island` and the other `search.*` pacing keys,
    `llm.*` (also `llm=none` and the other options of the group), `mutator.*`, the evaluator's
    timeouts, replays, draws, GPUs and compile settings, and `islands.*` but `specialize`. A changed
    `islands.n` keeps islands 0..n-1 as saved; removed islands' members join the remaining islands
    that work on their shapes; added islands start with the best kernels this run measured on their
    shapes (as if migrants had arrived). Settings in `FIXED` (the shapes, the seed, the evaluator's
    backend, timing mode and libraries, ...) are refused with a ConfigError naming the key, before
    anything is written. The new configuration is stored only once the resumed session has started.

    Another process still running the run refuses the resume (RunHeld); `take_over` takes over the
    claim of a process on another machine that is known to be gone.
    """
    overrides = list(overrides or [])
    archive = Archive.open(path, create=False)
    try:
        run = archive.run(run_id) if run_id else archive.last_run("search")
        if run is None:
            raise EvoError(f"{path} holds no search run to resume: start one with `evo run archive.path={path}`")
        if run["kind"] != "search":
            raise EvoError(f"run {run['id']} of {path} is a {run['kind']}, not a search: only searches resume")
        if run["status"] == "finished" and not overrides:
            unfinished = [] if run_id else [i for i in queries.unfinished_runs(archive, "search")
                                             if i != run["id"] and not live_owner(archive, i)]
            also = (f"; run {unfinished[-1]} did not finish: continue it with `evo resume {path} --run "
                    f"{unfinished[-1]}`" if unfinished else "")
            raise EvoError(f"run {run['id']} of {path} finished; raise its budget to continue, e.g. "
                           f"`evo resume {path} search.max_evaluations=5000`{also}")
        c = resumed_config(json.loads(run["config_json"] or "{}"), overrides, run_id=run["id"])
        c.archive.path = str(path)  # the archive given, wherever the run first wrote it
        refuse_if_held(archive, run["id"], take_over=take_over)  # early; the session claims the run for good
    finally:
        archive.close()
    return _search(c, resume_run=run["id"], store_config=bool(overrides), take_over=take_over)


# Settings added after runs were stored, each with the value that does what evo did before it
# existed: a run stored without one resumes as it started, not with the new default.
ADDED_SINCE = {("search", "cost_prior"): "off", ("mutator", "reward_against"): "parent",
               ("mutator", "evaluation_cost"): 0.0, ("evaluator", "pdl"): False}


def resumed_config(stored: dict, overrides: list[str], *, run_id: int = 0) -> EvoConfig:
    """A run's stored configuration with a resume's overrides (`key=value`, or `group=option` for
    the groups under evo.conf); ConfigError naming the override for a bad one or a FIXED key."""
    stored = copy.deepcopy(stored)
    for (group, key), before in ADDED_SINCE.items():
        if isinstance(stored.get(group), dict) and key not in stored[group]:
            stored[group][key] = before
    base = copy.deepcopy(stored)
    dotlist, groups = [], {}
    for o in overrides:
        key, eq, value = o.partition("=")
        if not eq or not key or key.startswith(("+", "~")):
            raise ConfigError(f"{o}: a resume takes key=value overrides of the run's settings (presets such as "
                              f"+experiment=... and deletions apply to new runs only)")
        if key in GROUPS:
            base[key] = _group_option(key, value)
            groups[key] = o
        else:
            dotlist.append(o)
    try:
        before = as_dict(config_from_dict(stored, []))
    except ConfigError as e:
        raise ConfigError(f"the stored configuration of run {run_id} cannot be used with this evo ({e})") from None
    for o in dotlist:  # one at a time, so that a bad one is named
        try:
            OmegaConf.merge(OmegaConf.structured(EvoConfig), OmegaConf.from_dotlist([o]))
        except Exception as e:
            raise ConfigError(f"{o}: {str(e).splitlines()[0]}") from None
    c = config_from_dict(base, dotlist)
    after = as_dict(c)
    for key in _changed(before, after):
        fixed = next((f for f in FIXED if key == f or key.startswith(f + ".")), None)
        if fixed:
            given = groups.get(key.split(".")[0]) or next((o for o in dotlist if o.split("=")[0] == key), f"{key}=...")
            advice = {"archive": "give the archive to resume as `evo resume PATH`", "sweep": "leave it out",
                      "compare": "leave it out",
                      "family": "leave it out", "kernels": "leave it out"}.get(
                fixed.split(".")[0], f"start a new run instead, e.g. `evo run {given} archive.path=NEW.sqlite`")
            raise ConfigError(f"cannot resume with {given}: it changes {key} ({FIXED[fixed]}); {advice}")
    return c


def _group_option(group: str, option: str) -> dict:
    """The settings of `group=option` as Hydra composes them: the group's defaults, then the option's file."""
    folder = resources.files("evo.conf") / group
    file = folder / f"{option}.yaml"
    if not file.is_file():
        options = sorted(f.name[:-5] for f in folder.iterdir() if f.name.endswith(".yaml")
                         and not f.name.startswith(("base_", "_")))
        raise ConfigError(f"{group}={option}: no such option (available: {', '.join(options)})")
    values = OmegaConf.to_container(OmegaConf.create(file.read_text()))
    assert isinstance(values, dict)
    # parts of the option in its own group (`- _prices`) come before the option's own values
    parts = [OmegaConf.create((folder / f"{d}.yaml").read_text()) for d in values.pop("defaults", None) or []
             if isinstance(d, str) and d.startswith("_")]
    try:
        data = OmegaConf.to_container(OmegaConf.merge(OmegaConf.structured(GROUPS[group]), *parts, values))
    except Exception as e:
        raise ConfigError(f"{group}={option}: {str(e).splitlines()[0]}") from None
    assert isinstance(data, dict)
    return data


def _changed(before: dict, after: dict, prefix: str = "") -> list[str]:
    """Dotted keys whose values differ (lists compare whole)."""
    out = []
    for key in sorted(set(before) | set(after)):
        a, b = before.get(key), after.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            out += _changed(a, b, f"{prefix}{key}.")
        elif a != b:
            out.append(f"{prefix}{key}")
    return out


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
        log.info(f"self-test on {', '.join(d.key for d in s.evaluator.devices)} ({c.evaluator.backend})")
        rows = run_selftest(s.evaluator)
        failed = [r for r in rows if not r["pass"]]
        log.info(f"{simulated_note(c.evaluator.backend)}{len(rows) - len(failed)}/{len(rows)} as expected",
                 extra=RESULT)
        s.archive.put_state(s.run_id, "selftest", rows)
        return rows

"""The Hydra commands (`run`, `bench`, `sweep`, `compare`, `selftest`): composing `evo.conf`, one-line
errors for bad overrides, our own `--help`, and multirun with one archive per job."""
from __future__ import annotations

import logging
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from evo.cli.terminal import fail, interrupted, stopped
from evo.config import EvoConfig, register_configs, validate
from evo.core.errors import ConfigError, EvoError
from evo.core.logs import simulated_note

log = logging.getLogger(__name__)
CONF_DIR = str(resources.files("evo.conf"))
MULTIRUN = ("-m", "--multirun")


@dataclass(frozen=True)
class CommandHelp:
    summary: str
    options: tuple[tuple[str, str], ...]
    examples: tuple[str, ...]


HELP = {
    "run": CommandHelp(
        "Run the evolutionary search: islands of kernels mutated by structural and LLM operators, every child "
        "compiled, checked and timed beside the libraries; the best kernel per shape and the whole state go "
        "into one SQLite archive (resume with `evo resume ARCHIVE`).",
        (("shapes=NAME", "shape set: smoke, grid125, cuda_l2, llm_layers, inline (with shapes.list=[MxNxK,...])"),
         ("search.max_evaluations=N", "budget of (kernel, shape) evaluations"),
         ("islands.n=N islands.population=N", "number and size of the islands"),
         ("llm=default|none|anthropic|replay", "LLM operators (default: on when ANTHROPIC_API_KEY is set)"),
         ("evaluator=gpu|simulated", "the GPU, or the CPU test double (modelled times, never measurements)"),
         ("search.cost_prior=auto|on|off", "start the cost model from its H200 prior (auto: on a GPU only)"),
         ("search.screen_factor=K", "make K times the children, evaluate the 1/K the cost model ranks best "
                                    "(default 3; 1: every child)"),
         ("archive.path=FILE", "the SQLite archive (default runs/evo.sqlite)"),
         ("+experiment=quick|long|...", "a preset")),
        ("evo run +experiment=quick", "evo run shapes=llm_layers archive.path=runs/llama.sqlite",
         "evo run -m islands.tournament=2,3   # one archive per job")),
    "bench": CommandHelp(
        "Time torch.matmul, cuBLASLt (heuristic and autotuned) and any given kernels side by side on a shape "
        "set, with the roofline floor from the peaks measured at start.",
        (("shapes=NAME", "shape set"), ("kernels=[a.cu,b.cu]", "kernel files to time beside the libraries"),
         ("kernels_of=ARCHIVE", "an archive's per-shape best kernels, each on its own shape (the shape set: "
                                "the archive's shapes)"),
         ("evaluator.modes=[rotating,hot,server]", "timing modes")),
        ("evo bench shapes=grid125 archive.path=runs/bench.sqlite",
         "evo bench kernels_of=runs/llama.sqlite evaluator.replays=10 evaluator.target_replay_ms=100 "
         "archive.path=runs/bench.sqlite  # sustained clocks")),
    "sweep": CommandHelp(
        "Evaluate the seed families' configurations on a shape set: each family's shortlist, a seeded random "
        "sample, or the whole genome; the baseline a search must beat at equal budget.",
        (("family=simt|ampere|hopper|skinny", "one family (default: all)"),
         ("sweep.sample=shortlist|random|exhaustive", "how configurations are chosen"),
         ("sweep.order=heuristic|prior", "a shortlist's picks in the families' order, or the cost model prior's "
                                         "predicted fastest of 24 first"),
         ("sweep.budget=N", "configurations per shape"), ("shapes=NAME", "shape set")),
        ("evo sweep shapes=smoke sweep.sample=shortlist sweep.budget=24",)),
    "compare": CommandHelp(
        "Compare, at the same evaluations per shape on the same shapes, the search, the shortlist sweep, a random "
        "sweep of the tensor-core families and the search with a uniform operator policy, over several seeds: "
        "per-shape and geomean ratios to the shortlist and to the best library, with their spread, and the "
        "evaluations each arm needed to reach 95% of its best. Each arm gets its own archive under compare.out; "
        "finished arms found there are kept, not re-run.",
        (("compare.budget=N", "evaluations per shape for every arm (default 24)"),
         ("compare.seeds=N", "seeds of the seeded arms (default 3)"),
         ("compare.out=DIR", "folder of the arms' archives and compare.json"),
         ("compare.arms=[search,shortlist,random_tc,uniform]", "the arms to run (+ unscreened: the search without "
                                                               "the cost model screening children; + no_prior: "
                                                               "without the model's prior; + screened: at least "
                                                               "search.screen_factor=3; + replay: with the "
                                                               "replay_change operator)"),
         ("compare.report_only=true", "only tabulate the finished arms in compare.out, as they ran"),
         ("shapes=NAME", "shape set")),
        ("evo compare shapes=llm_layers compare.budget=24 llm=none compare.out=runs/compare24",)),
    "selftest": CommandHelp(
        "Run deliberately bad kernels (hangs, faults, out-of-bounds writes, wrong results, fp16 accumulation) "
        "through the evaluator on this GPU: each must be caught, and a good kernel after each must still pass.",
        (("evaluator=gpu|simulated", "where to run"), ("archive.path=FILE", "where the evaluations are recorded")),
        ("evo selftest",)),
}


def _first_line(e: BaseException) -> str:
    """One line out of Hydra's and OmegaConf's multi-line errors (and their causes)."""
    texts: list[str] = []
    cause: BaseException | None = e
    while cause is not None and len(texts) < 4:
        texts.append(str(cause))
        cause = cause.__cause__ or cause.__context__
    lines = [ln.strip() for t in texts for ln in t.splitlines() if ln.strip()]
    if not lines:
        return type(e).__name__
    msg = lines[0]
    if "Could not find" in msg:  # unknown option of a group: list what exists
        raw = texts[0].splitlines()
        start = next((i for i, ln in enumerate(raw) if ln.startswith("Available options")), None)
        opts = []
        for ln in raw[start + 1:] if start is not None else []:
            if not ln.startswith((" ", "\t")) or not ln.strip():
                break
            if not ln.strip().startswith(("base_", "_")):  # schemas and parts of options
                opts.append(ln.strip())
        msg = msg.replace("In 'config': ", "")
        return f"{msg} (available: {', '.join(opts)})" if opts else msg
    for detail in lines[1:]:
        if detail.startswith(("Key '", "Value '", "Cannot", "Invalid", "Error")) and detail not in msg:
            msg = f"{msg} {detail}"
            break
    return msg + _did_you_mean(msg) + _whole_number(msg)


def _whole_number(msg: str) -> str:
    """`search.max_evaluations=1e3` reads as a float, which an integer setting refuses: say what to write."""
    m = re.search(r"Value '([^']+)' of type '(float|str)' could not be converted to Integer", msg)
    if not m:
        return ""
    try:
        value = float(m.group(1))
    except ValueError:
        return " (give a whole number)"
    return f" (give a whole number, e.g. {int(value)})" if value.is_integer() else " (give a whole number)"


def _did_you_mean(msg: str) -> str:
    """For an unknown key ("Key 'x' not in 'SearchConfig'"): the closest key of that section, if any."""
    import dataclasses
    import difflib

    import evo.config
    m = re.search(r"Key '([^']+)' not in '(\w+)'", msg)
    section = getattr(evo.config, m.group(2), None) if m else None
    if m is None or not dataclasses.is_dataclass(section):
        return ""
    close = difflib.get_close_matches(m.group(1), [f.name for f in dataclasses.fields(section)], n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


def compose(overrides: list[str]) -> tuple[EvoConfig, DictConfig]:
    """Compose evo.conf with overrides, as `evo run` would; raises ConfigError with one clear line."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    register_configs()
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=CONF_DIR, version_base=None):
            cfg = hydra_compose(config_name="config", overrides=list(overrides))
    except Exception as e:  # hydra and omegaconf raise many types; all mean a bad override
        raise ConfigError(_needs_plus(_first_line(e), overrides)) from None
    return validate(cfg), cfg


def _needs_plus(msg: str, overrides: list[str]) -> str:
    """`experiment=quick` for a group the defaults list leaves out: say to add it with `+`."""
    m = re.match(r"Could not override '([\w.]+)'\. No match in the defaults list", msg)
    given = next((o for o in overrides if m and o.partition("=")[0] == m.group(1)), None)
    options = group_options().get(m.group(1)) if m else None
    if m is None or given is None or options is None:
        return msg
    group, value = m.group(1), given.partition("=")[2]
    plus = f"+{given}" if value in options else f"+{group}=NAME (NAME one of {', '.join(options)})"
    return f"{given}: the default configuration has no {group}, so add one with a plus: {plus}"


def _sweep_values(value: str) -> list[str] | None:
    """The values a multirun override sweeps over: `a,b,c`, `range(a,b[,step])`, `choice(a,b)`; one
    value for a plain override; None for a sweep evo does not expand (`interval(...)`, `glob(...)`)."""
    if value.startswith(("[", "{", "'", '"')):
        return [value]
    call = re.fullmatch(r"(\w+)\((.*)\)", value.strip())
    if call:
        name, args = call.group(1), [a.strip() for a in call.group(2).split(",") if a.strip()]
        if name == "range" and args and all(re.fullmatch(r"-?\d+", a) for a in args):
            return [str(v) for v in range(*map(int, args[:3]))] or [args[0]]
        return args if name == "choice" and args else None
    return value.split(",") if "," in value else [value]


def _first_choices(overrides: list[str]) -> list[str]:
    """Overrides with each sweep replaced by its first value (sweeps evo cannot expand left out)."""
    out = []
    for o in overrides:
        key, eq, value = o.partition("=")
        values = _sweep_values(value) if eq else [value]
        if values:
            out.append(f"{key}{eq}{values[0]}" if eq else o)
    return out


#: Hydra's flags that take a value (the value is not an override)
VALUED_FLAGS = ("--cfg", "-c", "--package", "-p", "--config-path", "-cp", "--config-name", "-cn",
                "--config-dir", "-cd", "--experimental-rerun", "--info", "-i")


def overrides_of(argv: list[str]) -> list[str]:
    """The key=value overrides among a command's arguments (Hydra's flags and their values left out)."""
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a in VALUED_FLAGS:
            skip = True
        elif not a.startswith("-"):
            out.append(a)
    return out


def sweep_jobs(overrides: list[str]) -> list[list[str]]:
    """Override lists that together use every value of every swept key (each key's values varied
    in turn, the other keys at their first value), so that every job's values are checked before
    any job runs, without composing the whole product."""
    base = _first_choices(overrides)
    jobs = [base]
    for o in overrides:
        key, eq, value = o.partition("=")
        values = _sweep_values(value) if eq else None
        for v in (values or [])[1:]:
            jobs.append([x if x.partition("=")[0] != key else f"{key}={v}" for x in base])
    return jobs


#: folders of conf/ that are not config groups of the Hydra commands (cluster/: inputs of `evo cluster`)
NOT_GROUPS = ("cluster",)


def group_options() -> dict[str, list[str]]:
    """The options of each config group (the internal `base_*` schemas and `_*` parts left out)."""
    root = Path(CONF_DIR)
    return {d.name: sorted(p.stem for p in d.glob("*.yaml") if not p.stem.startswith(("base_", "_")))
            for d in sorted(root.iterdir()) if d.is_dir() and not d.name.startswith("_") and d.name not in NOT_GROUPS}


def help_text(name: str, overrides: list[str]) -> str:
    h = HELP[name]
    lines = [f"usage: evo {name} [-q|-v] [-m] [key=value ...]", "", h.summary, "", "main options:"]
    width = max(len(k) for k, _ in h.options)
    lines += [f"  {k:<{width}}  {v}" for k, v in h.options]
    lines += ["", "config groups (group=option):"]
    lines += [f"  {g:<11} {', '.join(opts)}" for g, opts in group_options().items()]
    lines += ["", "examples:"] + [f"  {e}" for e in h.examples]
    lines += ["", "Hydra: --cfg job shows the composed configuration, -m runs a sweep, --hydra-help for more.",
              "", "configuration with these overrides:"]
    try:
        _, cfg = compose(_first_choices(overrides))
        lines.append(OmegaConf.to_yaml(cfg).rstrip())
    except EvoError as e:
        lines.append(f"  (cannot compose: {e})")
    return "\n".join(lines)


@dataclass
class JobOutcome:
    number: int
    overrides: str
    archive: str
    result: str
    ok: bool
    simulated: bool = False


def _tasks() -> dict[str, Callable[[EvoConfig, DictConfig], Any]]:
    def run(c, raw):
        from evo.search import run_search
        r = run_search(c, raw)
        return f"run {r.run_id}: {r.reason}"

    def bench(c, raw):
        from evo.search.bench import run_bench
        return f"{len(run_bench(c, raw))} rows"

    def sweep(c, raw):
        from evo.search.sweep import run_sweep
        s = run_sweep(c, raw)
        overall: dict = next((r for r in s["summary"] if r["bucket"] == "all"), {})
        g = overall.get("geomean_speedup")
        return f"run {s['run_id']}: geomean speedup {g:.3f}" if g else f"run {s['run_id']}"

    def selftest(c, raw):
        from evo.search import run_selftest_session
        rows = run_selftest_session(c, raw)
        failed = [r for r in rows if not r["pass"]]
        if failed:
            raise EvoError(f"self-test: {len(failed)} of {len(rows)} cases not caught as expected")
        return f"{len(rows)}/{len(rows)} as expected"

    def compare(c, raw):
        from evo.search.compare import run_compare
        r = run_compare(c, raw)
        return f"compare: {len(r['arms'])} arms in {c.compare.out}"

    return {"run": run, "bench": bench, "sweep": sweep, "selftest": selftest, "compare": compare}


def hydra_command(name: str, argv: list[str]) -> None:
    import hydra
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode
    if any(a in ("-h", "--help") for a in argv):
        print(help_text(name, overrides_of(argv)))
        return
    multirun = any(a in MULTIRUN for a in argv)
    plain = overrides_of(argv)
    for overrides in (sweep_jobs(plain) if multirun else [plain]):  # reject mistakes in one line, up front
        compose(overrides)
    register_configs()
    task = _tasks()[name]
    outcomes: list[JobOutcome] = []
    saved_argv = sys.argv
    sys.argv = [f"evo {name}"] + argv

    @hydra.main(version_base=None, config_path=CONF_DIR, config_name="config")
    def app(cfg: DictConfig) -> None:
        c = validate(cfg)
        hc = HydraConfig.get()
        if hc.mode != RunMode.MULTIRUN:
            try:
                result = task(c, cfg)
            except EvoError as e:
                fail(str(e))
            except KeyboardInterrupt as stop:  # Ctrl-C, kill PID, or the reader of the output gone (evo.cli.main)
                again = getattr(stop, "resume_hint", None) or (f"evo resume {c.archive.path}" if name == "run" else None)
                stopped(interrupted(c.archive.path, again), stop)
            log.debug(f"{name}: {result}")
            return
        # one archive per job, in the job's own output directory
        job_dir = Path(hc.runtime.output_dir)
        job_dir.mkdir(parents=True, exist_ok=True)
        c.archive.path = str(job_dir / Path(c.archive.path).name)
        cfg.archive.path = c.archive.path
        label = " ".join(hc.overrides.task) or "(defaults)"
        log.info(f"--- job {hc.job.num}: {label} -> {c.archive.path}")
        try:
            outcomes.append(JobOutcome(hc.job.num, label, c.archive.path, str(task(c, cfg)), True,
                                       c.evaluator.backend == "simulated"))
        except EvoError as e:
            log.error(f"job {hc.job.num} failed: {e}")
            outcomes.append(JobOutcome(hc.job.num, label, c.archive.path, f"failed: {e}", False))

    try:
        app()
    finally:
        sys.argv = saved_argv
    if multirun:
        _multirun_summary(outcomes)


def _multirun_summary(outcomes: list[JobOutcome]) -> None:
    from tabulate import tabulate
    if not outcomes:
        return
    common = set.intersection(*(set(o.overrides.split()) for o in outcomes)) if len(outcomes) > 1 else set()
    swept = [" ".join(x for x in o.overrides.split() if x not in common) or "(defaults)" for o in outcomes]
    table = tabulate([(o.number, s, o.archive, o.result) for o, s in zip(outcomes, swept)],
                     headers=["job", "swept", "archive", "result"])
    note = simulated_note("simulated") if any(o.simulated for o in outcomes) else ""
    print(f"\n{note}{len(outcomes)} jobs:\n{table}")
    if not all(o.ok for o in outcomes):
        raise EvoError(f"{sum(not o.ok for o in outcomes)} of {len(outcomes)} jobs failed")

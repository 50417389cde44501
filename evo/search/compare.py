"""`evo compare`: the search against the baselines it must beat, at the same budget per shape.

Arms, each on the same shape set with `compare.budget` evaluations per shape, each recorded in its
own archive under `compare.out` (so GPU outputs can be kept, and a stopped comparison continues):

    search     the evolutionary search (REINFORCE operator policy)       search.seed{n}.sqlite
    uniform    the same search with a uniform operator policy            uniform.seed{n}.sqlite
    shortlist  `evo sweep sweep.sample=shortlist` (deterministic: once)  shortlist.sqlite
    random_tc  a seeded random sweep of the tensor-core families         random_tc.seed{n}.sqlite
    screened   the search with the cost model screening children         screened.seed{n}.sqlite
               (search.screen_factor at least 3, the default; not in the
               default arms: the same as `search` unless screening was set)
    unscreened the search with every child evaluated                     unscreened.seed{n}.sqlite
               (search.screen_factor=1; not in the default arms)
    no_prior   the search without the cost model's prior                 no_prior.seed{n}.sqlite
               (search.cost_prior=off: seeds in the shortlist's heuristic
               order, picks too until the run's own model has 12
               measurements; not in the default arms)
    replay     the search with the replay_change operator added           replay.seed{n}.sqlite
               (finds on one shape tried on the others; not in the
               default arms)
    floor      the search with every shape getting at least a third of   floor.seed{n}.sqlite
               the budget per shape before the bandit may pass it over
               (search.min_evaluations_per_shape; not in the default arms)

The table gives, per shape and arm, the per-shape best time's ratio to the shortlist sweep's
(shortlist time / arm time: > 1 is faster than the shortlist) and the speedup over the best library,
as geomean over seeds with the min-max spread; the geomean row over shapes; the "by speedup" row,
the geomean of arm speedup / shortlist speedup (each over the libraries timed in its own run: a
cross-check that differs from the time ratio where a library's time differed between runs, e.g.
when cuBLASLt's autotuning picked another algorithm); the "re-timed" row, the same time ratio on
every arm's bests timed again side by side after the arms (retime.py: no arm's figure is then the
luckiest of its many draws; the row to read); and, per arm, how many evaluations on a shape it took
to reach 95% of that shape's final best (mean over shapes).
"""
from __future__ import annotations

import copy
import json
import logging
import statistics
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from tabulate import tabulate

from evo.archive import Archive
from evo.archive.elites import elites
from evo.archive.queries import evaluation_trace, kernel_row, operator_use
from evo.config import COMPARE_ARMS, EvoConfig, as_dict
from evo.core.compile_options import options_or_none
from evo.core.errors import EvoError
from evo.core.logs import RESULT, simulated_note
from evo.core.shapes import Shape, build_shape_set
from evo.core.summary import geomean
from evo.mutators.policy import OperatorPolicy
from evo.mutators.structural import FIND_GAIN
from evo.search.retime import bests, retime, stored

log = logging.getLogger(__name__)

SEEDED = ("search", "uniform", "random_tc", "screened", "unscreened", "no_prior", "replay", "floor")
SEARCHES = ("search", "uniform", "screened", "unscreened", "no_prior", "replay", "floor")
ORDER = ("search", "screened", "unscreened", "no_prior", "replay", "floor", "uniform", "random_tc", "shortlist")
REFERENCE = "shortlist"
TENSOR_CORE = ["ampere", "hopper"]


@dataclass
class ArmRun:
    """What one arm found with one seed."""
    arm: str
    seed: int
    best_ms: dict[Shape, float] = field(default_factory=dict)
    speedup: dict[Shape, float] = field(default_factory=dict)
    to_95: dict[Shape, int] = field(default_factory=dict)  # evaluations on the shape to 95% of its final best
    best_kernel: dict[Shape, str] = field(default_factory=dict)
    backend: str = "gpu"  # where the arm ran (its run record): a table of simulated arms says so
    retimed_ms: dict[Shape, float] = field(default_factory=dict)  # the best kernel timed again (retime.py)
    evaluations: int = 0
    on_shape: dict[Shape, int] = field(default_factory=dict)  # evaluations on each shape (where the budget went)
    operators: dict[str, dict] = field(default_factory=dict)  # per operator: uses, new shape bests, ...
    policy: dict[str, list[float]] = field(default_factory=dict)  # per operator: its final probability per context
    policy_weights: list[int] = field(default_factory=list)  # the contexts' uses, in the same order
    genome: dict[Shape, dict] = field(default_factory=dict)  # the best kernel's family, genes, options, operator


def archive_path(out: str | Path, arm: str, seed: int) -> Path:
    name = f"{arm}.sqlite" if arm not in SEEDED else f"{arm}.seed{seed}.sqlite"
    return Path(out) / name


def arm_config(c: EvoConfig, arm: str, seed: int) -> EvoConfig:
    """The configuration of one arm: the same shapes, evaluator and budget per shape for all."""
    a = copy.deepcopy(c)
    shapes = build_shape_set(listed=c.shapes.list, grid=c.shapes.grid)
    a.archive.path = str(archive_path(c.compare.out, arm, seed))
    a.search.seed = seed
    a.search.max_evaluations = c.compare.budget * len(shapes)
    a.mutator.policy = "uniform" if arm == "uniform" else c.mutator.policy
    if arm == "screened":
        a.search.screen_factor = max(3, c.search.screen_factor)
    if arm == "unscreened":
        a.search.screen_factor = 1
    if arm == "no_prior":
        a.search.cost_prior = "off"
    if arm == "replay" and "replay_change" not in a.mutator.structural:
        a.mutator.structural = [*a.mutator.structural, "replay_change"]
    if arm == "floor":
        a.search.min_evaluations_per_shape = max(c.search.min_evaluations_per_shape, c.compare.budget // 3)
    a.sweep.budget = c.compare.budget
    a.sweep.sample = "shortlist" if arm == "shortlist" else "random"
    a.sweep.order = "heuristic"  # the shortlist arm is the families' own ranking, whatever sweep.order says
    a.family = None
    return a


def run_arm(c: EvoConfig, arm: str, seed: int) -> None:
    """One arm, recorded in its own archive."""
    from evo.search import resume, run_search
    from evo.search.sweep import run_sweep
    a = arm_config(c, arm, seed)
    log.info(f"compare: {arm} (seed {seed}) -> {a.archive.path}", extra=RESULT)  # names the arm its tables belong to
    if arm in SEARCHES and Path(a.archive.path).is_file():
        resume(a.archive.path)  # a search arm stopped part way continues where it stopped
    elif arm in SEARCHES:
        run_search(a)
    else:
        run_sweep(a, families=TENSOR_CORE if arm == "random_tc" else None)


def finished(path: Path) -> bool:
    """Whether the archive holds a finished run (an arm done before, kept and not re-run)."""
    if not path.is_file():
        return False
    a = Archive.open(path, create=False)
    try:
        run = a.last_run()
        return bool(run and run["status"] == "finished")
    finally:
        a.close()


def read_arm(path: Path, arm: str, seed: int) -> ArmRun:
    """The per-shape bests and the evaluations to 95% of them, from an arm's archive."""
    a = Archive.open(path, create=False)
    try:
        run = a.last_run()
        assert run is not None
        r = ArmRun(arm, seed, backend=run.get("backend") or "gpu")
        for row in elites(a, run["id"]):
            shape = Shape(row["M"], row["N"], row["K"])
            r.best_ms[shape], r.speedup[shape] = row["time_ms"], row["speedup"]
            r.best_kernel[shape] = row["kernel_id"]
            r.genome[shape] = _genome(a, row["kernel_id"])
        trace = evaluation_trace(a, run["id"])
        r.operators = operator_use(a, run["id"])
        r.policy, r.policy_weights = learned_policy(a.get_state(run["id"], "policy"))
    finally:
        a.close()
    r.evaluations = len(trace)
    r.to_95 = evaluations_to_95(trace, r.speedup)
    r.on_shape = Counter(Shape(row["M"], row["N"], row["K"]) for row in trace)
    return r


def learned_policy(state: dict | None) -> tuple[dict[str, list[float]], list[int]]:
    """A search's operator probabilities at its end, per operator one per context it used, and each
    context's uses (what REINFORCE learned; a uniform policy's are all 1 / operators)."""
    if not state or not state.get("operators"):
        return {}, []
    policy = OperatorPolicy(list(state["operators"]), kind=state.get("kind", "reinforce"))
    policy.load(state)
    snapshot = policy.snapshot()
    contexts = sorted(snapshot)
    return ({op: [snapshot[c][op] for c in contexts] for op in policy.operators},
            [sum(policy.uses[c].values()) for c in contexts])


def _genome(a: Archive, kernel_id: str) -> dict:
    row = kernel_row(a, kernel_id)
    if row is None:
        return {}
    return {"family": row["family"], "params": json.loads(row["params_json"]) if row["params_json"] else {},
            "options": options_or_none(row["source"] or "") or {}, "operator": row["operator"], "kernel": kernel_id}


def genome_changes(ref: dict, found: dict) -> str:
    """How a found kernel differs from the shortlist's best on its shape, in words: its family, else
    the genes and compile options that differ (a kernel an LLM edited may differ in source only)."""
    if not ref or not found:
        return "?"
    if ref.get("kernel") == found.get("kernel"):
        return "the same kernel (timed again)"
    if ref.get("family") != found.get("family"):
        return f"family {ref.get('family')} -> {found.get('family')}"
    changes = []
    for what, prefix in (("params", ""), ("options", "option ")):
        a, b = ref.get(what) or {}, found.get(what) or {}
        changes += [f"{prefix}{k} {a.get(k, '-')} -> {b.get(k, '-')}" for k in sorted(set(a) | set(b))
                    if a.get(k) != b.get(k)]
    return ", ".join(changes) or "the source (same genes and options)"


def finds(runs: list[ArmRun], shapes: list[Shape]) -> list[dict]:
    """Every (arm, seed, shape) whose best beat the shortlist's by FIND_GAIN or more (re-timed where both
    were), with how its kernel differs from the shortlist's: what the searches found that the
    shortlist lacks, best first."""
    ref = next((r for r in runs if r.arm == REFERENCE), None)
    out = []
    for r in runs:
        if ref is None or r.arm == REFERENCE:
            continue
        for s in shapes:
            both_retimed = s in ref.retimed_ms and s in r.retimed_ms
            mine, theirs = (r.retimed_ms, ref.retimed_ms) if both_retimed else (r.best_ms, ref.best_ms)
            if s in mine and s in theirs and theirs[s] / mine[s] >= FIND_GAIN:
                found = r.genome.get(s, {})
                out.append({"shape": str(s), "arm": r.arm, "seed": r.seed, "vs_shortlist": theirs[s] / mine[s],
                            "retimed": both_retimed, "operator": found.get("operator"), "kernel": found.get("kernel"),
                            "changes": genome_changes(ref.genome.get(s, {}), found)})
    return sorted(out, key=lambda f: -f["vs_shortlist"])


def evaluations_to_95(trace: list[dict], final: dict[Shape, float]) -> dict[Shape, int]:
    """Per shape: how many of the evaluations on it came before its running best reached 95% of its
    final best (counted per shape, so that sweeps going shape by shape compare fairly)."""
    seen: dict[Shape, int] = {}
    out: dict[Shape, int] = {}
    for row in trace:
        shape = Shape(row["M"], row["N"], row["K"])
        seen[shape] = seen.get(shape, 0) + 1
        if shape not in out and shape in final and (row["speedup"] or 0) >= 0.95 * final[shape]:
            out[shape] = seen[shape]
    return out


def spread(values: list[float]) -> str:
    """Geomean over seeds, with min-max when there are several."""
    g = geomean(values)
    if g is None:
        return "-"
    return f"{g:.3f}" if len(values) < 2 else f"{g:.3f} [{min(values):.3f}-{max(values):.3f}]"


def comparison(runs: list[ArmRun], shapes: list[Shape]) -> dict:
    """Per shape and arm: ratios to the shortlist and speedups over the best library, per seed;
    geomeans over shapes per seed; mean evaluations to 95% per seed."""
    ref = next((r for r in runs if r.arm == REFERENCE), None)
    arms = sorted({r.arm for r in runs}, key=ORDER.index)
    result: dict = {"shapes": [str(s) for s in shapes], "arms": {}}
    for arm in arms:
        mine = [r for r in runs if r.arm == arm]
        per_shape, geo_ratio, geo_by_speedup, geo_speedup, to95, geo_retimed = {}, [], [], [], [], []
        for s in shapes:
            ratios = [ref.best_ms[s] / r.best_ms[s] for r in mine if ref and s in ref.best_ms and s in r.best_ms]
            per_shape[str(s)] = {"vs_shortlist": ratios, "vs_library": [r.speedup[s] for r in mine if s in r.speedup]}
        for r in mine:
            if ref:
                geo_ratio.append(geomean([ref.best_ms[s] / r.best_ms[s] for s in shapes
                                          if s in ref.best_ms and s in r.best_ms]))
                geo_by_speedup.append(geomean([r.speedup[s] / ref.speedup[s] for s in shapes
                                               if ref.speedup.get(s) and r.speedup.get(s)]))
                geo_retimed.append(geomean([ref.retimed_ms[s] / r.retimed_ms[s] for s in shapes
                                            if s in ref.retimed_ms and s in r.retimed_ms]))
            geo_speedup.append(geomean([r.speedup.get(s) for s in shapes]))
            if r.to_95:
                to95.append(statistics.mean(r.to_95.values()))
        result["arms"][arm] = {"seeds": [r.seed for r in mine], "per_shape": per_shape,
                               "geomean_vs_shortlist": [g for g in geo_ratio if g],
                               "geomean_speedup_vs_shortlist": [g for g in geo_by_speedup if g],
                               "geomean_vs_shortlist_retimed": [g for g in geo_retimed if g],
                               "geomean_vs_library": [g for g in geo_speedup if g],
                               "mean_evaluations_to_95": to95, "evaluations": [r.evaluations for r in mine],
                               "evaluations_on_a_shape": [[r.on_shape.get(s, 0) for s in shapes] for r in mine],
                               "operators": _operators_over_seeds(mine),
                               "policy": _policy_over_seeds(mine)}
    return result


def _operators_over_seeds(runs: list[ArmRun]) -> dict[str, dict]:
    """Per operator, summed over an arm's seeds: uses, new shape bests, and the mean speedup of its
    correct children (weighted by their count)."""
    out: dict[str, dict] = {}
    for r in runs:
        for op, use in r.operators.items():
            tot = out.setdefault(op, {"uses": 0, "ok": 0, "new_bests": 0, "speedup_sum": 0.0})
            tot["uses"] += use["uses"]
            tot["ok"] += use["ok"]
            tot["new_bests"] += use["new_bests"]
            tot["speedup_sum"] += (use["mean_speedup"] or 0.0) * use["ok"]
    for tot in out.values():
        tot["mean_speedup"] = tot.pop("speedup_sum") / tot["ok"] if tot["ok"] else None
    return out


def _policy_over_seeds(runs: list[ArmRun]) -> dict[str, dict]:
    """Per operator, over an arm's seeds and contexts: the final probability's mean weighted by the
    contexts' uses, and its least and largest value in any context."""
    out: dict[str, dict] = {}
    for op in sorted({op for r in runs for op in r.policy}):
        pairs = [(p, w) for r in runs for p, w in zip(r.policy.get(op, []), r.policy_weights)]
        if pairs and sum(w for _, w in pairs):
            out[op] = {"mean": sum(p * w for p, w in pairs) / sum(w for _, w in pairs),
                       "min": min(p for p, _ in pairs), "max": max(p for p, _ in pairs)}
    return out


def _format_policy(result: dict, searches: list[str]) -> str:
    """What the operator policy learned: each operator's final probability per arm (weighted mean
    over contexts [least-largest]), beside uniform's 1 / operators."""
    learned = {a: result["arms"][a].get("policy") or {} for a in searches}
    ops = sorted({op for table in learned.values() for op in table})
    if not ops:
        return ""
    rows = [[op] + [f"{t['mean']:.2f} [{t['min']:.2f}-{t['max']:.2f}]" if (t := learned[a].get(op)) else "-"
                    for a in searches] for op in ops]
    # how far each arm's policy ended from its own uniform (1 / its operators): near 0, it searched as
    # uniform does, whether it never updated or its updates cancelled out
    def from_uniform(table: dict) -> float:
        even = 1 / len(table)
        return max(max(abs(t["min"] - even), abs(t["max"] - even)) for t in table.values())

    spread = [f"{a}: at most {from_uniform(learned[a]):.3f} from its uniform 1/{len(learned[a])} in any context"
              for a in searches if learned[a]]
    note = "\n" + "; ".join(spread) if spread else ""
    return (f"\n\nthe operator policy at the end of each search (probability, mean over contexts weighted by "
            f"uses [least-largest]; uniform: 1 / its operators, {1 / len(ops):.2f} for {len(ops)})\n"
            + tabulate(rows, headers=["operator"] + searches, disable_numparse=True) + note)


def _fewest_most(per_seed: list[list[int]]) -> str:
    """The fewest and most evaluations any shape got, per seed: where a search's budget went (a shape it
    passed over is one where it can lose to the shortlist's later picks)."""
    return ", ".join(f"{min(counts)}-{max(counts)}" for counts in per_seed if counts) or "-"


def format_comparison(result: dict) -> str:
    arms = list(result["arms"])
    others = [a for a in arms if a != REFERENCE]  # the shortlist's ratio to itself is 1
    headers = ["shape"] + [f"{a} vs shortlist" for a in others] + [f"{a} vs lib" for a in arms]
    rows = []
    for s in result["shapes"]:
        rows.append([s] + [spread(result["arms"][a]["per_shape"][s]["vs_shortlist"]) for a in others]
                    + [spread(result["arms"][a]["per_shape"][s]["vs_library"]) for a in arms])
    rows.append(["geomean"] + [spread(result["arms"][a]["geomean_vs_shortlist"]) for a in others]
                + [spread(result["arms"][a]["geomean_vs_library"]) for a in arms])
    rows.append(["by speedup"] + [spread(result["arms"][a].get("geomean_speedup_vs_shortlist", [])) for a in others]
                + ["" for _ in arms])
    if any(result["arms"][a].get("geomean_vs_shortlist_retimed") for a in others):
        rows.append(["re-timed"] + [spread(result["arms"][a]["geomean_vs_shortlist_retimed"]) for a in others]
                    + ["" for _ in arms])
    # the shortlist evaluates all its picks, which on some shapes are fewer than the budget
    most = max((n for a in others for n in result["arms"][a]["evaluations"]), default=0)
    fewer = REFERENCE in arms and max(result["arms"][REFERENCE]["evaluations"], default=most) < most
    note = " (all its picks: fewer than the budget on some shapes)" if fewer else ""
    to95 = [[a, f"{statistics.mean(v):.1f}" if (v := result["arms"][a]["mean_evaluations_to_95"]) else "-",
             ", ".join(map(str, result["arms"][a]["evaluations"])) + (note if a == REFERENCE else ""),
             _fewest_most(result["arms"][a].get("evaluations_on_a_shape", []))] for a in arms]
    searches = [a for a in arms if a in SEARCHES]
    ops = sorted({op for a in searches for op in result["arms"][a].get("operators", {})})
    use_rows = [[op] + [_operator_cell(result["arms"][a].get("operators", {}).get(op)) for a in searches] for op in ops]
    operators = ("\n\nwhat the searches spent their evaluations on (over seeds): uses, new shape bests, mean speedup "
                 "of the correct children\n" + tabulate(use_rows, headers=["operator"] + searches, disable_numparse=True)
                 if use_rows else "")
    return (tabulate(rows, headers=headers, disable_numparse=True, stralign="right")
            + "\n\n" + tabulate(to95, headers=["arm", "evals on a shape to 95% of its best (mean)",
                                               "evaluations per seed", "evaluations on a shape: fewest-most"],
                                  disable_numparse=True) + operators
            + _format_policy(result, searches) + _format_finds(result.get("finds")))


def _format_finds(found: list[dict] | None) -> str:
    if found is None:
        return ""
    if not found:
        return (f"\n\nno arm beat the shortlist's best on any shape by {FIND_GAIN - 1:.0%} or more (a seed's own ratio, "
                f"at least {FIND_GAIN:.2f} before rounding; the table above shows the geomean over seeds)")
    rows = [[f["shape"], f"{f['arm']} {f['seed']}", f"{f['vs_shortlist']:.3f}" + ("" if f["retimed"] else " *"),
             f["operator"] or "-", f["changes"]] for f in found]
    return (f"\n\nwhere an arm beat the shortlist's best by {FIND_GAIN - 1:.0%} or more (re-timed; * as found), and "
            "how its kernel differs from the shortlist's best there\n"
            + tabulate(rows, headers=["shape", "arm seed", "x shortlist", "operator", "differs from the shortlist's best"],
                       disable_numparse=True))


def _operator_cell(use: dict | None) -> str:
    if not use:
        return "-"
    mean = f"{use['mean_speedup']:.2f}x" if use["mean_speedup"] is not None else "-"
    return f"{use['uses']} / {use['new_bests']} / {mean}"


def _add_retimed(c: EvoConfig, runs: list[ArmRun]) -> None:
    """Fill each run's re-timed bests: timed now (unless report_only or compare.retime_rounds=0), or
    read from the last re-timing in compare.out when it covered every best of these runs."""
    out = Path(c.compare.out)
    if not runs or not any(r.arm == REFERENCE for r in runs):
        return
    wanted = {(r.best_kernel[s], s) for r in runs for s in r.best_kernel}
    medians = stored(out, wanted)
    if medians is None and not c.compare.report_only and c.compare.retime_rounds > 0:
        candidates = {}
        for r in runs:
            for shape, cand in bests(archive_path(out, r.arm, r.seed)).items():
                candidates[(cand.id, shape)] = cand
        medians = retime(c, candidates)
    if medians is None:
        log.info("compare: the bests were not re-timed (compare.retime_rounds=0, or report_only with no "
                 "re-timing of these arms in compare.out): the table's ratios are the arms' own best draws")
        return
    for r in runs:
        r.retimed_ms = {s: medians[(k, s)] for s, k in r.best_kernel.items() if (k, s) in medians}


def stored_arms(out: Path) -> list[tuple[str, int]]:
    """The (arm, seed) of every finished arm archive in `out`, by its file name (`archive_path`)."""
    found = []
    for path in sorted(out.glob("*.sqlite")):
        arm, _, seed = path.stem.partition(".seed")
        if arm in COMPARE_ARMS and (seed.isdigit() if arm in SEEDED else not seed) and finished(path):
            found.append((arm, int(seed or 0)))
    return found


Setting = tuple[int | None, tuple, tuple]  # budget per shape, listed shapes, grid


def stored_setting(path: Path) -> Setting:
    """The budget per shape and the shapes an arm's archive was run with (its run's stored config:
    compare.budget, else sweep.budget for an archive without a compare section)."""
    a = Archive.open(path, create=False, readonly=True)
    try:
        run = a.last_run()
        stored = json.loads(run["config_json"]) if run and run.get("config_json") else {}
    finally:
        a.close()
    shapes = stored.get("shapes", {})
    budget = stored.get("compare", {}).get("budget") or stored.get("sweep", {}).get("budget")
    return budget, tuple(shapes.get("list") or ()), tuple(shapes.get("grid") or ())


def _setting(c: EvoConfig) -> Setting:
    return c.compare.budget, tuple(c.shapes.list), tuple(c.shapes.grid)


def _describe(setting: Setting) -> str:
    budget, listed, grid = setting
    return f"{budget} evaluations per shape on {len(build_shape_set(listed=list(listed), grid=list(grid)))} shapes"


def as_run(c: EvoConfig, out: Path) -> EvoConfig:
    """For `compare.report_only`: `c` with the arms, seeds, budget per shape and shapes that the
    finished arms in `out` were run with (read from their archives), saying where they differ from
    the command's; refused where there is nothing to tabulate or the arms disagree."""
    arms = stored_arms(out) if out.is_dir() else []
    if not arms:
        raise EvoError(f"compare.report_only: no finished arm in {out}; run `evo compare compare.out={out}` first")
    settings = {(arm, seed): stored_setting(archive_path(out, arm, seed)) for arm, seed in arms}
    if len(set(settings.values())) > 1 or any(s[0] is None for s in settings.values()):
        raise EvoError(f"compare.report_only: the arms in {out} did not run with one budget and shape set ("
                       + "; ".join(f"{arm} seed {seed}: {_describe(s) if s[0] else 'no budget recorded'}"
                                   for (arm, seed), s in settings.items())
                       + "): move the odd ones to another folder")
    setting = next(iter(settings.values()))
    budget, listed, grid = setting
    assert budget is not None  # refused above
    r = copy.deepcopy(c)
    r.compare.budget, r.shapes.list, r.shapes.grid = budget, list(listed), list(grid)
    r.compare.arms = list(dict.fromkeys(arm for arm, _ in arms))
    r.compare.seeds = 1 + max(seed for _, seed in arms)
    if setting != _setting(c):
        log.info(f"compare.report_only: tabulating the arms in {out} as they ran: {_describe(setting)}")
    return r


def _check_kept(c: EvoConfig, path: Path, arm: str, seed: int) -> None:
    """A finished arm kept from an earlier compare must have run at this compare's budget and shapes."""
    setting = stored_setting(path)
    if setting != _setting(c):
        raise EvoError(f"compare: {path} holds {arm} (seed {seed}) run at "
                       f"{_describe(setting) if setting[0] else 'a budget not recorded'}, but this compare asks for "
                       f"{_describe(_setting(c))}: choose another compare.out, or tabulate that folder with "
                       "compare.report_only=true")


def run_compare(c: EvoConfig, raw=None) -> dict:
    """Run the arms not finished yet in `compare.out` (seed by seed), then tabulate every finished one.
    Returns the comparison (also written to `compare.out`/compare.json)."""
    out = Path(c.compare.out)
    if c.compare.report_only:
        c = as_run(c, out)
    made_out = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    if c.sweep.order != "heuristic" and not c.compare.report_only:
        log.warning(f"sweep.order={c.sweep.order} is not used by evo compare: its shortlist arm takes the families' "
                    f"own order (the baseline the search is compared with)")
    shapes = build_shape_set(listed=c.shapes.list, grid=c.shapes.grid)
    plan = [(arm, 0) for arm in c.compare.arms if arm not in SEEDED]
    plan += [(arm, seed) for seed in range(c.compare.seeds) for arm in c.compare.arms if arm in SEEDED]
    if not c.compare.report_only:
        log.info(f"compare: {len(plan)} arm runs ({', '.join(f'{a}/{s}' for a, s in plan)}) of {c.compare.budget} "
                 f"evaluations on each of {len(shapes)} shapes, in {out}")
        try:
            for arm, seed in plan:
                if finished(archive_path(out, arm, seed)):
                    _check_kept(c, archive_path(out, arm, seed), arm, seed)
                    log.info(f"compare: {arm} (seed {seed}) already finished in {out}: kept")
                    continue
                run_arm(c, arm, seed)
        except BaseException:
            if made_out and not any(out.iterdir()):  # refused before any arm began (no GPU, ...): leave no folder
                out.rmdir()
            raise
    runs = [read_arm(archive_path(out, arm, seed), arm, seed) for arm, seed in plan
            if finished(archive_path(out, arm, seed))]
    _add_retimed(c, runs)
    result = comparison(runs, shapes)
    result["finds"] = finds(runs, shapes)
    result["retimed"] = any(r.retimed_ms for r in runs)
    result["budget_per_shape"] = c.compare.budget
    # simulated if any arm was (read from the archives: report_only over simulated arms is labelled too)
    backend = "simulated" if any(r.backend == "simulated" for r in runs) else c.evaluator.backend
    result["backend"] = backend
    earlier = out / "compare.json"  # report_only keeps the configuration of the compare that ran the arms
    kept = json.loads(earlier.read_text()).get("config") if c.compare.report_only and earlier.is_file() else None
    result["config"] = kept or as_dict(raw if not c.compare.report_only else None, fallback=c)
    (out / "compare.json").write_text(json.dumps(result, indent=1, default=str))
    log.info(f"{simulated_note(backend)}per-shape best of each arm at {c.compare.budget} evaluations "
             f"per shape, over seeds (geomean [min-max]); vs shortlist = shortlist time / arm time; re-timed = the same "
             f"on every arm's bests timed again side by side ({c.compare.retime_rounds} rounds, median)"
             + ("; the test double's times are deterministic and its libraries fixed, so the by-speedup and re-timed "
                "rows repeat the geomean here" if backend == "simulated" else "") + "\n"
             + format_comparison(result),
             extra=RESULT)
    return result

"""`evo run` / `evo resume`: the island search with MAP-Elites cells by shape.

Seeding: every shape gets the top `search.seeds_per_shape` picks of the families' shortlists.
One generation: first a share of children repair failed children from the repair queue; then,
on every island, the shape allocator (`allocation.py`, a bandit by expected gain) picks the shape
each child is for, the parent is chosen by tournament among the island's members on that shape
and the shape's elite, and the operator policy picks an operator. Children are compiled ahead on
every core and evaluated on the GPU(s) (a child from an LLM answer joins as soon as its answer
is in: see evo.search.overlap); results go to the islands, the MAP-Elites cells (one per
shape), the allocator and the policy, and failed children join the repair queue. Every few
generations elites are tried on neighbouring shapes (same N and K, the next smaller and larger M)
and the best individuals migrate between islands. The whole state (islands, policy, RNG, counters) is saved in the archive at the
end of each generation, so `kill -9` loses at most the evaluations in flight, and a resumed run
makes the same decisions as an uninterrupted one.
"""
from __future__ import annotations

import concurrent.futures as cf
import logging
import math
import random
import threading
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from evo.archive import Archive
from evo.archive.elites import cell_of, elites, offer
from evo.archive.ownership import Owner, check_owner
from evo.archive.search_state import load_run, save_generation
from evo.config import EvoConfig
from evo.core.errors import ArchiveError, ConfigError, EvoError
from evo.core.kernel import Candidate
from evo.core.records import Outcome, Status
from evo.core.rng import rng_from_json, rng_to_json
from evo.core.shapes import Shape, build_shape_set
from evo.core.summary import geomean
from evo.evaluation.evaluator import Evaluator
from evo.families import FAMILIES
from evo.islands import Individual, Island, make_islands, migrate
from evo.islands.population import regroup
from evo.mutators.llm import LLMRefused
from evo.mutators.policy import OperatorPolicy
from evo.mutators.rewards import reward, reward_without_child
from evo.mutators.structural import FIND_GAIN, OPERATORS, config_key, gene_change, remember
from evo.search.allocation import ShapeAllocator
from evo.search.cost_model import MIN_ROWS, CostModel, Prior, features, screen
from evo.search.libraries_first import time_libraries_first
from evo.search.overlap import in_background
from evo.search.state import Plan, SearchState
from evo.search.sweep import plan as shortlist
from evo.search.sweep import sampled_families

log = logging.getLogger(__name__)

TENSOR_CORE_FAMILIES = ["hopper", "ampere"]
#: families that get no island of their own but seed every island on the shapes their shortlist
#: covers (skinny: M <= 64 only, where it is often the best tensor-core kernel)
SEED_WHERE_SHORTLISTED = ["skinny"]
#: failures a repair can address (a compile error, a rejection, a wrong result or a crash)
REPAIRABLE = {Status.COMPILE_ERROR, Status.REJECTED, Status.INCORRECT, Status.INCORRECT_AFTER_TIMING,
              Status.MEMORY_VIOLATION, Status.FAULT, Status.LAUNCH_ERROR}
MAX_REPAIR_DEPTH = 2  # a repair of a repair of a failed child, then the chain is dropped
REPAIR_QUEUE = 64  # waiting failed children kept (the oldest dropped first)


def repairs(op) -> bool:
    """Whether an operator repairs failed children (structural revert_gene, LLM templates for failures)."""
    return bool(getattr(op, "repairs", False)) or getattr(getattr(op, "template", None), "applies_to", "") == "failed"


class Search:
    def __init__(self, c: EvoConfig, archive: Archive, run_id: int, evaluator: Evaluator, *,
                 llm_operators: dict | None = None, owner: Owner | None = None):
        self.c, self.archive, self.run_id, self.ev = c, archive, run_id, evaluator
        self.owner = owner  # the session's claim, checked before every save
        self.shapes = build_shape_set(listed=c.shapes.list, grid=c.shapes.grid)
        self.operators = {name: OPERATORS[name] for name in c.mutator.structural}
        self.operators.update(llm_operators or {})
        self.policy = OperatorPolicy(list(self.operators), kind=c.mutator.policy, learning_rate=c.mutator.learning_rate,
                                     baseline_decay=c.mutator.baseline_decay, min_probability=c.mutator.min_probability)
        families: list[str | None] = list(TENSOR_CORE_FAMILIES) if c.islands.specialize == "family" else [None]
        self.islands = make_islands(c.islands.n, self.shapes, specialize=c.islands.specialize,
                                    families=families, capacity=c.islands.population,
                                    tournament=c.islands.tournament)
        self.rng = random.Random(c.search.seed)
        peaks = evaluator.peaks(evaluator.devices[0].key)
        self.allocator = ShapeAllocator({s: peaks.floor_ms(s.flops, s.min_bytes) for s in self.shapes},
                                        latency_floor_ms=c.search.latency_floor_us / 1e3,
                                        min_evaluations=c.search.min_evaluations_per_shape)
        # refit from every correct measurement; with its prior it ranks from the start (seeds, next_pick,
        # change_family, and screening when search.screen_factor > 1)
        self.cost = CostModel(prior=self._prior(evaluator))
        self.best_on: dict[Shape, tuple[float, str, float]] = {}  # shape -> (time, kernel, speedup) of its best
        self.state = SearchState()
        self.known: dict[tuple[str, Shape], Outcome] = {}  # evaluated before this generation
        self.replay: dict[tuple[str, Shape], Outcome] = {}  # evaluated in an interrupted generation
        self.candidates: dict[str, Candidate] = {}
        self.saved_islands = 0  # islands in the saved state (a resume may change islands.n)

    # ---- state ---------------------------------------------------------------------------
    STATE_KEYS = ("search", "rng", "policy", "allocation")

    def save(self) -> None:
        """The generation's state in one transaction, if this session still owns the run."""
        with self.archive.transaction():
            if self.owner is not None:
                check_owner(self.archive, self.run_id, self.owner)
            if self.saved_islands > len(self.islands):  # a resume removed islands: forget them
                self.archive.drop_islands(self.run_id, len(self.islands))
            save_generation(self.archive, self.run_id, self.state.generation,
                            state={"search": self.state.to_json(), "rng": rng_to_json(self.rng),
                                   "policy": self.policy.state(), "allocation": self.allocator.to_json()},
                            islands={isl.index: isl.to_json() for isl in self.islands},
                            probabilities=self.policy.snapshot())
        self.saved_islands = len(self.islands)

    def load(self) -> bool:
        """Restore the state saved at the end of the last finished generation; False if none."""
        saved = load_run(self.archive, self.run_id, self.STATE_KEYS)
        if saved is None or saved.state["search"] is None:
            return False
        self.state = SearchState.from_json(saved.state["search"])
        rng_from_json(self.rng, saved.state["rng"])
        self.policy.load(saved.state["policy"])
        self.allocator.load(saved.state["allocation"] or {})
        self.candidates.update(saved.candidates)
        for kernel_id, shape, outcome, generation in saved.evaluations:
            (self.known if generation < self.state.generation else self.replay)[(kernel_id, shape)] = outcome
        for (kernel_id, shape), outcome in self.known.items():
            self._note_best(kernel_id, shape, outcome)
            if kernel_id in self.candidates:
                self._learn(self.candidates[kernel_id], shape, outcome)
        measured = [Individual(kid, shape, o.speedup or 0.0) for (kid, shape), o in self.known.items()
                    if kid in self.candidates]
        note = regroup(self.islands, saved.islands, measured)
        if note:
            log.warning(f"islands.n is now {len(self.islands)} (was {len(saved.islands)}): {note}")
        self.saved_islands = len(saved.islands)
        return True

    # ---- evaluation ----------------------------------------------------------------------
    def _evaluate(self, pairs: list[tuple[Candidate, Shape]], *, island_of: dict[str, int],
                  later: list[cf.Future] | None = None) -> dict:
        """Outcomes for pairs, reusing what this run already measured; counts new evaluations.
        `later`: futures of plans whose children are still being made (LLM calls): each child joins
        the evaluations as soon as its plan resolves."""
        results: dict[tuple[str, Shape], Outcome | None] = {}

        def admit(new: list[tuple[Candidate, Shape]]) -> list[tuple[Candidate, Shape]]:
            todo = []
            for cand, shape in new:
                key = (cand.id, shape)
                if key in results:
                    continue
                if key in self.known:
                    results[key] = self.known[key]
                elif key in self.replay:  # measured before an interruption: same answer, no GPU time
                    results[key] = self.replay.pop(key)
                    self.state.spent += 1
                else:
                    todo.append((cand, shape))
                    results[key] = None  # placeholder keeps the order
            return todo

        def admit_plan(p: Plan) -> list[tuple[Candidate, Shape]]:
            self._check_children([p])
            if not p.candidate:
                return []
            self.candidates.setdefault(p.candidate.id, p.candidate)
            island_of[p.candidate.id] = p.island
            return admit([(p.candidate, p.shape)])

        meta = lambda cand: {"generation": self.state.generation, "island": island_of.get(cand.id)}  # noqa: E731
        for e in self.ev.evaluate(admit(pairs), meta=meta, later=later or [], admit=admit_plan):
            results[(e.kernel_id, e.shape)] = Outcome.of(e)
            self.state.spent += 1
            self.state.raced += e.raced(self.c.evaluator.replays)
            offer(self.archive, self.run_id, cell_of(e.shape), e)
        for (kid, shape), outcome in results.items():
            if outcome is not None and (kid, shape) not in self.known:
                self.known[(kid, shape)] = outcome
                self._note_best(kid, shape, outcome)
        return results

    def _observe(self, cand: Candidate, shape: Shape, o: Outcome) -> None:
        """A new measurement, in plan order: to the shape allocator and the cost model."""
        self.allocator.observe(shape, o.time_ms if o.status == Status.OK else None, o.speedup)
        self._learn(cand, shape, o)

    def _learn(self, cand: Candidate, shape: Shape, o: Outcome) -> None:
        if o.status == Status.OK and o.time_ms:
            self.cost.add(f"{cand.id}|{shape}", features(cand, shape, num_sms=self.ev.num_sms),
                          math.log(o.time_ms / self.allocator.floor_ms[shape]))

    def _note_best(self, kernel_id: str, shape: Shape, o: Outcome) -> None:
        """Keep the fastest correct kernel per shape (ties: the smaller id, so any order gives the same)."""
        if o.status == Status.OK and o.time_ms:
            entry = (o.time_ms, kernel_id, o.speedup or 0.0)
            if shape not in self.best_on or entry < self.best_on[shape]:
                self.best_on[shape] = entry

    # ---- seeds ---------------------------------------------------------------------------
    def _prior(self, evaluator: Evaluator) -> Prior | None:
        wanted = self.c.search.cost_prior
        if wanted == "off" or (wanted == "auto" and evaluator.backend != "gpu"):
            log.info(f"cost model: no prior (search.cost_prior={wanted}"
                     f"{', the simulated backend' if evaluator.backend != 'gpu' else ''}): it ranks after "
                     f"{MIN_ROWS} measurements of this run")
            return None
        from evo.search import cost_prior  # here: `python -m evo.search.cost_prior` imports this module first
        prior = cost_prior.load()
        if prior is None and wanted == "on":  # asked for: running without it would not be what was asked
            raise ConfigError(f"search.cost_prior=on, but {cost_prior.PRIOR_PATH} is missing or fit to other "
                              f"features than this evo's cost model (see the warning above): rebuild it with "
                              f"`python -m evo.search.cost_prior ARCHIVE...`, or run with search.cost_prior=auto or off")
        if prior is None:
            log.info(f"cost model: no prior found ({cost_prior.PRIOR_PATH}): it ranks after {MIN_ROWS} measurements")
        else:
            log.info(f"cost model: starts from its prior ({prior.rows} measurements on {prior.gpu})")
            if evaluator.backend != "gpu":
                log.warning(f"search.cost_prior=on with evaluator={evaluator.backend}: a prior fit to {prior.gpu} "
                            f"measurements ranks modelled times")
        return prior

    def predict(self, pairs: list[tuple[Candidate, Shape]]) -> list[float] | None:
        """The cost model's predicted log(time / floor) of each (candidate, shape), or None when it
        cannot rank yet (no prior, too few measurements)."""
        if not self.cost.ready or not pairs:
            return None
        return self.cost.predict([features(c, s, num_sms=self.ev.num_sms) for c, s in pairs])

    def _seeds(self) -> list[tuple[Island, Candidate, Shape]]:
        """Every island's shapes, each with the top picks of the shortlists of the island's family
        (or of the tensor-core families) and of SEED_WHERE_SHORTLISTED where they cover it: one pick
        per shape and family when two would take more than half the budget. Where the cost model can
        rank (its prior), the picks are its predicted best of each shortlist's first
        `search.seed_pool`, else the shortlist's first."""
        num_sms = self.ev.num_sms

        def best_of(found: list[Candidate], shape: Shape, k: int) -> list[Candidate]:
            predicted = self.predict([(c, shape) for c in found])
            if predicted is None:
                return found[:k]
            return [found[i] for i in sorted(range(len(found)), key=lambda i: (predicted[i], i))[:k]]

        def picks(isl: Island, k: int) -> list[tuple[Island, Candidate, Shape]]:
            out = []
            pool = max(k, self.c.search.seed_pool) if self.cost.ready else k
            for shape in isl.shapes:
                # as a shortlist takes them: no ampere seeds above M = 64 where K is long (sweep.ONLY_WHERE)
                own = sampled_families([isl.family] if isl.family else TENSOR_CORE_FAMILIES, shape)
                for fam in own + SEED_WHERE_SHORTLISTED:
                    found = shortlist([fam], shape, budget=pool, sample="shortlist", rng=self.rng, num_sms=num_sms)
                    out += [(isl, cand, shape) for cand in best_of(found, shape, k)]
                if not any(s == shape for _, _, s in out):  # no tensor-core family supports it
                    out.append((isl, FAMILIES["simt"].candidate(FAMILIES["simt"].default), shape))
            return out

        for k in range(self.c.search.seeds_per_shape, 0, -1):
            seeds = [x for isl in self.islands for x in picks(isl, k)]
            if k == 1 or len({(c.id, s) for _, c, s in seeds}) <= self.c.search.max_evaluations // 2:
                return seeds
        return []

    def initialize(self) -> None:
        seeds = self._seeds()
        needed = len({(c.id, s) for _, c, s in seeds})
        if needed > self.c.search.max_evaluations:
            log.warning(f"seeding {len(self.shapes)} shapes takes {needed} evaluations, more than "
                        f"search.max_evaluations={self.c.search.max_evaluations}: the run ends after seeding; give "
                        f"a budget well above {needed} for the search to have room")
        for _, cand, _ in seeds:
            self.candidates[cand.id] = cand
            self.ev.prepare(cand)
        time_libraries_first(self.ev, self.shapes, progress=self.c.search.progress)  # while the seeds compile
        island_of = {cand.id: isl.index for isl, cand, _ in seeds}
        results = self._evaluate([(c, s) for _, c, s in seeds], island_of=island_of)
        observed = set()
        for isl, cand, shape in seeds:
            o = results[(cand.id, shape)]
            if o.status == Status.OK:
                isl.add([Individual(cand.id, shape, o.speedup or 0.0)])
            if (cand.id, shape) not in observed:
                observed.add((cand.id, shape))
                self._observe(cand, shape, o)
                if o.status != Status.OK:
                    self.state.failures[str(o.status)] += 1
        self.state.generation = 1
        self.save()

    # ---- one generation ------------------------------------------------------------------
    def _context(self, shape: Shape, cand: Candidate) -> str:
        return f"{shape.bucket}|{cand.family or 'other'}"

    def _plan(self, isl: Island, *, structural_only: bool = False) -> Plan:
        """Choose the shape (allocator), the parent and the operator (all random choices happen here,
        in a fixed order)."""
        shape = self.allocator.pick(isl.shapes)
        pool = [m for m in isl.members if m.shape == shape]
        elite = self.best_on.get(shape)
        if elite and all(m.kernel_id != elite[1] for m in pool) and self._fits(isl, elite[1]):
            pool.append(Individual(elite[1], shape, elite[2]))
        parent = isl.select(1, self.rng, pool or isl.members)[0]
        cand = self.candidates[parent.kernel_id]
        known = self.known.get((parent.kernel_id, shape))
        parent_fit = parent.fitness if shape == parent.shape else (known.speedup if known else None)
        context = self._context(shape, cand)
        info = self._info([cand], shape)
        allowed = [n for n, op in self.operators.items() if not repairs(op) and op.applies([cand], info)
                   and not (structural_only and n.startswith("llm:"))]
        if not allowed:
            return Plan(isl.index, "", None, shape, parent_fit, context, "no operator applies to this parent")
        name = self.policy.choose(context, self.rng, allowed)
        parents = [cand]
        if getattr(self.operators[name], "arity", 1) == 2:
            parents.append(self.candidates[isl.select(1, self.rng, pool or isl.members)[0].kernel_id])
        plan = Plan(isl.index, name, None, shape, parent_fit, context, shape_best=elite[2] if elite else None)
        plan.parents = parents
        return plan

    def _fits(self, isl: Island, kernel_id: str) -> bool:
        """Whether a kernel may be a parent on an island (an island of one family breeds that family,
        and the families that seed every island: SEED_WHERE_SHORTLISTED)."""
        family = self.candidates[kernel_id].family
        return isl.family is None or family in (isl.family, None) or family in SEED_WHERE_SHORTLISTED

    def _repair_plan(self, entry: dict) -> Plan | None:
        """A plan that repairs a queued failed child with a repair operator, if one applies."""
        failed, parent = self.candidates.get(entry["kernel"]), self.candidates.get(entry["parent"])
        if failed is None:
            return None
        shape = Shape.parse(entry["shape"])
        info = self._info([failed], shape)
        both = [failed] + ([parent] if parent else [])
        allowed = [n for n, op in self.operators.items()
                   if repairs(op) and op.applies(both[:getattr(op, "arity", 1)] if len(both) > 1 else both, info)]
        if not allowed:
            return None
        context = self._context(shape, failed)
        name = self.policy.choose(context, self.rng, allowed)
        known = self.known.get((parent.id, shape)) if parent else None
        plan = Plan(entry["island"], name, None, shape, known.speedup if known else None, context,
                    repair_depth=entry.get("depth", 0) + 1, origin=entry["parent"])
        plan.parents = both[:getattr(self.operators[name], "arity", 1)]
        return plan

    def _plans(self) -> list[Plan]:
        """This generation's children: repairs first (up to `search.repair_share`), then new children
        from every island in turn."""
        self.allocator.settle()
        remaining = self.c.search.max_evaluations - self.state.spent
        active = [isl for isl in self.islands if isl.members]
        per_island = max(1, min(self.c.search.children_per_island, remaining // max(1, len(self.islands))))
        total = min(per_island * len(active), remaining)  # the last generation stops at the budget, not past it
        plans: list[Plan] = []
        while self.state.repairs and len(plans) < math.ceil(total * self.c.search.repair_share):
            plan = self._repair_plan(self.state.repairs.pop(0))
            if plan is not None:
                plans.append(plan)
        base = total
        if self._screening():  # make more children than will be evaluated: the cost model keeps the best
            total = len(plans) + (total - len(plans)) * self.c.search.screen_factor
        turn = 0
        while active and len(plans) < total:  # the extra children for screening: structural only (cheap)
            plans.append(self._plan(active[turn % len(active)], structural_only=len(plans) >= base))
            turn += 1
        # what screening may keep: the new structural children of the first `base` plans (repairs and
        # LLM children are evaluated besides, and count against the same share of the budget)
        self._screen_quota = sum(1 for p in plans[:base] if not p.repair_depth and not p.operator.startswith("llm:"))
        return plans

    def _make_children(self, plans: list[Plan]) -> list[cf.Future]:
        """Apply the operators: LLM requests rendered in plan order (from what earlier generations
        left in the archive) and each sent on a thread of its own; structural operators in plan
        order (they draw from the RNG). Returns the LLM plans' futures, each resolving to its plan."""
        # every prompt is rendered before any call starts: an answer arriving meanwhile must not
        # change a later prompt (replay and resume need the same prompts for the same state)
        calls = [self._llm_call(p) for p in plans if p.operator.startswith("llm:")]
        futures = [in_background(call) for call in calls]
        tried: dict[Shape, set] = {}  # configurations measured on each shape, or made for it in this generation
        for kernel_id, shape in self.known:
            cand = self.candidates.get(kernel_id)
            if cand is not None:
                tried.setdefault(shape, set()).add(config_key(cand.family, cand.params))
        made = set(self.known)  # (kernel, shape) measured, or made in this generation: duplicates
        num_sms = self.ev.num_sms
        for p in plans:
            if p.operator and not p.operator.startswith("llm:"):
                mine = tried.setdefault(p.shape, set())
                self._make_structural(p, mine, made, num_sms)
                if p.candidate is not None:
                    mine.add(config_key(p.candidate.family, p.candidate.params))
                    made.add((p.candidate.id, p.shape))
        return futures

    def _make_structural(self, p: Plan, tried: set, made: set, num_sms: int) -> None:
        """p's child from its structural operator. Where the operator has nothing to propose for this
        parent and shape (next_pick on a shape that has had every open pick), or proposes a duplicate
        (a kernel measured on the shape, or made for it earlier in this generation: `made`), another
        structural operator that applies, chosen by the policy, makes the child instead, so the plan is
        not lost. Operators that declined are neither rewarded nor charged (they spent nothing: counted
        as no_child); one whose child was a duplicate is charged a duplicate's penalty, as before. Charged
        -1 each, as compile errors, ten such uses had pinned next_pick at the policy's floor in an H200
        search where it set new bests in 4 of its 21 evaluations; and a third of an H200 search's plan
        slots went to duplicates (crossover: 126 of 142 uses), each a child the generation never had."""
        info = self._info(p.parents, p.shape)
        last_duplicate = None
        while True:
            self._settle(p, lambda: self.operators[p.operator].apply(
                p.parents, self.rng, shape=p.shape, info=info, tried=tried, num_sms=num_sms, predict=self.predict,
                finds=self.state.finds))
            if p.candidate is not None and (p.candidate.id, p.shape) in made:
                last_duplicate = (p.operator, p.candidate)
                p.repeated.append(p.operator)
            elif p.candidate is not None or p.failure_kind != "no_child":
                return
            else:
                p.declined.append(p.operator)
            if p.repair_depth:  # a repair has no stand-in
                break
            others = [n for n, op in self.operators.items()
                      if n not in p.declined and n not in p.repeated and not n.startswith("llm:")
                      and not repairs(op) and op.applies(p.parents[:1], info)]
            if not others:
                break
            p.operator = self.policy.choose(p.context, self.rng, others)
        if last_duplicate is not None:  # every stand-in declined or repeated: the last duplicate stays the plan's
            p.operator, p.candidate = last_duplicate
            p.repeated.remove(p.operator)  # charged in _fold as the plan's own duplicate
            p.failure = p.failure_kind = ""

    def _llm_call(self, p: Plan) -> Callable[[], Plan]:
        """Render p's request now; the returned callable asks the model and settles p."""
        op: Any = self.operators[p.operator]
        try:
            req = op.request(p.parents, p.shape, self._info(p.parents, p.shape), generation=self.state.generation)
            make = lambda: op.answer(req, p.parents)  # noqa: E731
        except Exception as e:  # settled on the call's thread as a failed use, like any other
            make = partial(_raise, e)

        def call() -> Plan:
            self._settle(p, make)
            return p
        return call

    def _settle(self, p: Plan, make) -> None:
        """p's child, or why there is none: any exception is a failed use of the operator, never the run's."""
        try:
            p.candidate = make()
            if not p.candidate:
                p.failure = "the operator has no child to propose for this parent and shape"
                if not p.operator.startswith("llm:"):
                    p.failure_kind = "no_child"
        except ArchiveError as e:  # not the operator's failure: something (an LLM call's row) was not recorded
            log.warning(f"operator {p.operator}: the archive refused a write: {e}")
            p.candidate, p.failure, p.failure_kind = None, str(e), "operator"
        except EvoError as e:
            p.candidate, p.failure, p.failure_kind = None, str(e), getattr(e, "kind", "operator")
        except Exception as e:  # an operator's bug must not end the search: a failed use, logged
            log.exception(f"operator {p.operator} failed")
            p.candidate, p.failure, p.failure_kind = None, f"{type(e).__name__}: {e}", "operator"

    def _info(self, parents: list[Candidate], shape: Shape) -> dict:
        """What was measured on the parents at this shape (for LLM prompts)."""
        return {p.id: self.known.get((p.id, shape)) for p in parents}

    def step(self) -> None:
        g = self.state.generation
        spent_before = self.state.spent
        plans = self._plans()
        calls = self._make_children(plans)  # structural children now; LLM children as their answers arrive
        # LLM plans are settled on their own threads: only admit_plan (in _evaluate) may read them
        self._check_children([p for p in plans if not p.operator.startswith("llm:")])
        kept = self._screen(plans)
        results = self._evaluate_children(kept, later=calls)
        refused = [p.failure for p in kept if p.failure_kind == "refused"]
        if refused:  # every later call would be refused too: stop, saying what to fix
            raise LLMRefused(f"the Messages API refuses the run's calls: {refused[0]}; fix that, then `evo resume`")
        self._fold(plans, results, kept)
        if self.c.search.transfer_every and g % self.c.search.transfer_every == 0:
            self._transfer()
        if self.c.islands.migration != "off" and g % self.c.islands.migration_interval == 0:
            migrate(self.islands, topology=self.c.islands.migration, migrants=self.c.islands.migrants)
        self.state.stalled = self.state.stalled + 1 if self.state.spent == spent_before else 0
        self.state.generation = g + 1

    def _check_children(self, plans: list[Plan]) -> None:
        """Before evaluation: drop a child whose declaration refuses its shape (it would only spend an
        evaluation to say so), and mark one measured before this generation as a duplicate."""
        for p in plans:
            try:
                refused = p.candidate is not None and not p.candidate.declaration.supports(p.shape, num_sms=self.ev.num_sms)
            except EvoError:  # a broken declaration: the evaluator's static checks say what is wrong
                refused = False
            if refused:
                p.candidate, p.failure, p.failure_kind = None, f"the child does not support {p.shape}", "unsupported"
            elif p.candidate is not None:  # measured before this generation: a duplicate (no evaluation spent)
                p.duplicate = (p.candidate.id, p.shape) in self.known

    def _screening(self) -> bool:
        return self.c.search.screen_factor > 1 and self.cost.ready

    def _screen(self, plans: list[Plan]) -> list[Plan]:
        """With search.screen_factor = k > 1: of the new structural children not measured yet, keep the
        1/k the cost model predicts to gain most over their shape's best (a share at random, for
        exploration); repairs, LLM children and failed operator uses are kept as they are."""
        if not self._screening():
            return plans
        open_ = [i for i, p in enumerate(plans) if p.candidate and not p.repair_depth and not p.operator.startswith("llm:")
                 and (p.candidate.id, p.shape) not in self.known]
        if not open_:
            return plans
        children = [(c, plans[i].shape) for i in open_ if (c := plans[i].candidate)]
        predicted = self.predict(children)
        assert predicted is not None  # _screening(): the model is ready, and open_ is not empty
        best = [math.log(self.best_on[plans[i].shape][0] / self.allocator.floor_ms[plans[i].shape])
                if plans[i].shape in self.best_on else 0.0 for i in open_]
        quota = min(math.ceil(len(open_) / self.c.search.screen_factor), getattr(self, "_screen_quota", len(open_)))
        keep = screen([p - b for p, b in zip(predicted, best)], quota,
                      self.rng, explore=self.c.search.screen_explore)
        dropped = {open_[j] for j in range(len(open_)) if j not in set(keep)}
        self.state.screened_out += len(dropped)
        return [p for i, p in enumerate(plans) if i not in dropped]

    def _evaluate_children(self, plans: list[Plan], later: list[cf.Future] | None = None) -> dict:
        """Compile the children ahead and evaluate them at their shapes; `later`: LLM plans still being
        answered, whose children join as they arrive."""
        # LLM plans are settled on their own threads: their children join through `later` only
        ready = [(c, p) for p in plans if (c := p.candidate) and not p.operator.startswith("llm:")]
        for c, _ in ready:
            self.candidates.setdefault(c.id, c)
            self.ev.prepare(c)
        island_of = {c.id: p.island for c, p in ready}
        return self._evaluate([(c, p.shape) for c, p in ready], island_of=island_of, later=later)

    def _fold(self, plans: list[Plan], results: dict, kept: list[Plan]) -> None:
        """Results into the policy, the allocator, the islands and the repair queue, in plan order
        (the same decisions whatever order results arrived in). `kept`: the plans screening kept; a plan
        it dropped was never evaluated, but its operators' declines and duplicates count."""
        evaluated = {id(p) for p in kept}
        seen: set = set()
        for p in plans:
            if not p.operator:
                continue
            self.state.repair_uses += p.repair_depth > 0
            if p.declined:  # had nothing to propose: neither rewarded nor charged, only counted
                self.state.failures["no_child"] += len(p.declined)
            for op in p.repeated:  # proposed a duplicate before a stand-in made the plan's child
                self.policy.update(p.context, op, self.c.mutator.penalty_duplicate)
                self.state.failures["duplicate_replanned"] += 1
            if id(p) not in evaluated:  # screened out: its child was never evaluated
                continue
            if not p.candidate:  # no child to evaluate: an LLM answer without a usable edit, ...
                if p.failure_kind == "no_child":  # no structural operator that applies had a child to propose
                    continue
                earned = reward_without_child(p.failure_kind, self.c.mutator)
                if earned is None:  # the API's trouble, not the operator's
                    self.state.failures[f"llm_{p.failure_kind}"] += 1
                    continue
                self.policy.update(p.context, p.operator, earned)
                self.state.failures[{"unsupported": "unsupported_child", "truncated": "llm_truncated"}.get(
                    p.failure_kind, "operator_failed")] += 1
                continue
            key = (p.candidate.id, p.shape)
            o = results[key]
            duplicate = p.duplicate or key in seen  # measured before, or by an earlier child of this generation
            seen.add(key)
            self.policy.update(p.context, p.operator, reward(o.status, o.speedup, self._reference(p),
                                                             self.c.mutator, duplicate=duplicate))
            if duplicate:
                continue
            self._observe(p.candidate, p.shape, o)
            if o.status == Status.OK:
                self._note_find(p, o)
                self.islands[p.island].add([Individual(p.candidate.id, p.shape, o.speedup or 0.0)])
                continue
            self.state.failures[str(o.status)] += 1
            if o.status in REPAIRABLE and p.repair_depth < MAX_REPAIR_DEPTH:
                self.state.repairs.append({"kernel": p.candidate.id, "shape": str(p.shape), "island": p.island,
                                           "parent": p.origin or p.parents[0].id,
                                           "depth": p.repair_depth})
                del self.state.repairs[:-REPAIR_QUEUE]

    def _note_find(self, p: Plan, o: Outcome) -> None:
        """A child that beat its shape's best (as it was when the child was planned) by FIND_GAIN: what
        it changed of its parent becomes a find, which replay_change tries on other kernels."""
        if p.candidate and p.parents and p.shape_best and (o.speedup or 0.0) >= p.shape_best * FIND_GAIN:
            change = gene_change(p.parents[0], p.candidate)
            if change:
                self.state.finds = remember(self.state.finds, change)

    def _reference(self, p: Plan) -> float | None:
        """What a child's speedup is compared with for its reward (mutator.reward_against)."""
        if self.c.mutator.reward_against == "best" and p.shape_best:
            return max(p.parent_fitness or 0.0, p.shape_best)
        return p.parent_fitness

    def _transfer(self) -> None:
        """Try cell elites on their neighbouring shapes: same N and K with the next smaller and the next
        larger M (a winner at M=77 is a good seed at M=1 and at M=333), else the nearest shape."""
        cells = sorted(self.best_on)
        self.rng.shuffle(cells)
        limit = max(len(self.islands), len(self.shapes) // 4)
        pairs: list[tuple[Candidate, Shape]] = []
        for shape in cells:
            cand = self.candidates.get(self.best_on[shape][1])
            if cand is None:
                continue
            for near in self._neighbours(shape):
                if ((cand.id, near) not in self.known and (cand, near) not in pairs
                        and cand.declaration.supports(near, num_sms=self.ev.num_sms)):
                    pairs.append((cand, near))
            if len(pairs) >= limit:
                break
        pairs = pairs[:max(0, min(limit, self.c.search.max_evaluations - self.state.spent))]
        if not pairs:
            return
        results = self._evaluate(pairs, island_of={})
        for cand, shape in pairs:
            o = results[(cand.id, shape)]
            self._observe(cand, shape, o)
            if o.status == Status.OK:
                for isl in self.islands:
                    if shape in isl.shapes and self._fits(isl, cand.id):
                        isl.add([Individual(cand.id, shape, o.speedup or 0.0)])

    def _neighbours(self, shape: Shape) -> list[Shape]:
        same = sorted((s for s in self.shapes if (s.N, s.K) == (shape.N, shape.K) and s != shape), key=lambda s: s.M)
        below = [s for s in same if s.M < shape.M][-1:]
        above = [s for s in same if s.M > shape.M][:1]
        if below or above:
            return below + above
        others = sorted((s for s in self.shapes if s != shape), key=lambda s: _log_distance(s, shape))
        return others[:1]

    # ---- the loop ------------------------------------------------------------------------
    STALL_GENERATIONS = 20

    def done(self) -> str | None:
        if self.state.stalled >= self.STALL_GENERATIONS:
            return (f"stalled: {self.state.stalled} generations in a row produced no new kernel to evaluate "
                    f"(all duplicates or failed operator uses)")
        if self.state.spent >= self.c.search.max_evaluations:
            return f"evaluation budget reached ({self.state.spent} evaluations)"
        if self.c.search.max_wall_hours and self.state.elapsed_s >= self.c.search.max_wall_hours * 3600:
            return f"wall-time budget reached ({self.state.elapsed_s / 3600:.2f} h)"
        return None

    def run(self) -> str:
        started = time.monotonic()
        base = self.state.elapsed_s
        # the families' tables of valid genomes, which the first repair needs (hopper's take seconds to
        # build), are built while the seeds are compiled and timed, not when the loop first waits on them
        threading.Thread(target=_prepare_families, name="evo-prepare-families", daemon=True).start()
        if self.state.generation > 0:  # resumed: any shape whose libraries the first session did not time;
            # not again those it timed, even beside a kernel: its speedups so far are against them
            time_libraries_first(self.ev, self.shapes, progress=self.c.search.progress, retime_beside=False)
        if self.state.generation == 0:
            log.info(f"seeding {len(self.islands)} island(s) x {self.c.islands.population} on {len(self.shapes)} shapes")
            self.initialize()
            self.state.elapsed_s = base + time.monotonic() - started
            self.save()
            self.report()
        while (reason := self.done()) is None:
            self.step()
            self.state.elapsed_s = base + time.monotonic() - started
            self.save()
            self.report()
        return reason

    def report(self) -> None:
        if not self.c.search.progress:
            return
        rows = elites(self.archive, self.run_id)
        by_bucket: dict[str, list] = {}
        for r in rows:
            by_bucket.setdefault(Shape(r["M"], r["N"], r["K"]).bucket, []).append(r["speedup"])
        rate = self.state.spent / self.state.elapsed_s if self.state.elapsed_s else 0
        best = "  ".join(f"{b}: {geomean(v):.2f}" for b, v in by_bucket.items() if geomean(v))
        # evaluations that failed apart from operator uses that made no new child (docs/search.md, "Seeding")
        counts = self.state.failures.most_common()
        statuses = {str(s) for s in Status}
        fails = ", ".join(f"{k} {v}" for k, v in [kv for kv in counts if kv[0] in statuses][:4]) or "none"
        misses = ", ".join(f"{k} {v}" for k, v in [kv for kv in counts if kv[0] not in statuses][:4]) or "none"
        sim = "SIMULATED " if self.c.evaluator.backend == "simulated" else ""
        log.info(f"{sim}gen {self.state.generation - 1:>3} | {self.state.spent}/{self.c.search.max_evaluations} evals "
                 f"| {rate:.1f}/s | cells {len(rows)}/{len(self.shapes)} | geomean speedup by bucket: {best} "
                 f"| failed: {fails} | no new child from the operator: {misses} "
                 f"| repairs {self.state.repair_uses} (queued {len(self.state.repairs)}) | raced {self.state.raced}")


def _prepare_families() -> None:
    for family in FAMILIES.values():
        family.prepare()


def _raise(error: Exception) -> Candidate:
    raise error


def _log_distance(a: Shape, b: Shape) -> float:
    return sum((math.log2(x) - math.log2(y)) ** 2 for x, y in ((a.M, b.M), (a.N, b.N), (a.K, b.K)))

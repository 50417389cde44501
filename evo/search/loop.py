"""`evo run` / `evo resume`: the island search with MAP-Elites cells by shape.

One generation: on every island, parents are chosen by tournament, the operator policy picks an
operator per child, children are compiled ahead on every core and evaluated on the GPU(s) (a
child from an LLM answer joins as soon as its answer is in: see evo.search.overlap);
results go to the islands, the MAP-Elites cells (one per shape) and the policy. Every few
generations elites are tried on neighbouring shapes (transfer) and the best individuals migrate
between islands. The whole state (islands, policy, RNG, counters) is saved in the archive at the
end of each generation, so `kill -9` loses at most the evaluations in flight, and a resumed run
makes the same decisions as an uninterrupted one.
"""
from __future__ import annotations

import concurrent.futures as cf
import logging
import math
import random
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from evo.archive import Archive
from evo.archive.elites import cell_of, elites, offer
from evo.archive.ownership import Owner, check_owner
from evo.archive.search_state import load_run, save_generation
from evo.config import EvoConfig
from evo.core.errors import EvoError
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
from evo.mutators.rewards import reward
from evo.mutators.structural import OPERATORS
from evo.search.overlap import in_background
from evo.search.state import Plan, SearchState

log = logging.getLogger(__name__)

TENSOR_CORE_FAMILIES = ["hopper", "ampere"]


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
        self.state = SearchState()
        self.known: dict[tuple[str, Shape], Outcome] = {}  # evaluated before this generation
        self.replay: dict[tuple[str, Shape], Outcome] = {}  # evaluated in an interrupted generation
        self.candidates: dict[str, Candidate] = {}
        self.saved_islands = 0  # islands in the saved state (a resume may change islands.n)

    # ---- state ---------------------------------------------------------------------------
    STATE_KEYS = ("search", "rng", "policy")

    def save(self) -> None:
        """The generation's state in one transaction, if this session still owns the run."""
        with self.archive.transaction():
            if self.owner is not None:
                check_owner(self.archive, self.run_id, self.owner)
            if self.saved_islands > len(self.islands):  # a resume removed islands: forget them
                self.archive.drop_islands(self.run_id, len(self.islands))
            save_generation(self.archive, self.run_id, self.state.generation,
                            state={"search": self.state.to_json(), "rng": rng_to_json(self.rng),
                                   "policy": self.policy.state()},
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
        self.candidates.update(saved.candidates)
        for kernel_id, shape, outcome, generation in saved.evaluations:
            (self.known if generation < self.state.generation else self.replay)[(kernel_id, shape)] = outcome
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
            if not p.candidate:
                return []
            self.candidates.setdefault(p.candidate.id, p.candidate)
            island_of[p.candidate.id] = p.island
            return admit([(p.candidate, p.shape)])

        meta = lambda cand: {"generation": self.state.generation, "island": island_of.get(cand.id)}  # noqa: E731
        for e in self.ev.evaluate(admit(pairs), meta=meta, later=later or [], admit=admit_plan):
            results[(e.kernel_id, e.shape)] = Outcome.of(e)
            self.state.spent += 1
            offer(self.archive, self.run_id, cell_of(e.shape), e)
        for (kid, shape), outcome in results.items():
            if outcome is not None and (kid, shape) not in self.known:
                self.known[(kid, shape)] = outcome
        return results

    # ---- seeds ---------------------------------------------------------------------------
    def _seeds(self) -> list[tuple[Island, Candidate, Shape]]:
        out = []
        num_sms = self.ev.num_sms
        for isl in self.islands:
            shapes = list(isl.shapes)
            self.rng.shuffle(shapes)
            for i in range(isl.capacity):
                shape = shapes[i % len(shapes)]
                fams = [isl.family] if isl.family else TENSOR_CORE_FAMILIES
                fam = FAMILIES[fams[i % len(fams)]]
                picks = fam.suggest(shape.M, shape.N, shape.K, num_sms)
                params = picks[(i // len(shapes)) % len(picks)] if i < 2 * len(shapes) else fam.random(self.rng)
                cand = fam.candidate(params)
                if not cand.declaration.supports(shape, num_sms=num_sms):
                    cand = FAMILIES["simt"].candidate(FAMILIES["simt"].default)  # covers every shape
                out.append((isl, cand, shape))
        return out

    def initialize(self) -> None:
        seeds = self._seeds()
        for _, cand, _ in seeds:
            self.candidates[cand.id] = cand
            self.ev.prepare(cand)
        island_of = {cand.id: isl.index for isl, cand, _ in seeds}
        results = self._evaluate([(c, s) for _, c, s in seeds], island_of=island_of)
        for isl, cand, shape in seeds:
            o = results[(cand.id, shape)]
            isl.add([Individual(cand.id, shape, o.speedup or 0.0)])
            if o.status != Status.OK:
                self.state.failures[str(o.status)] += 1
        self.state.generation = 1
        self.save()

    # ---- one generation ------------------------------------------------------------------
    def _context(self, shape: Shape, cand: Candidate) -> str:
        return f"{shape.bucket}|{cand.family or 'other'}"

    def _plan(self, isl: Island) -> Plan:
        """Choose parents, shape and operator (all random choices happen here, in a fixed order)."""
        parent = isl.select(1, self.rng)[0]
        cand = self.candidates[parent.kernel_id]
        shape = parent.shape if self.rng.random() < 0.8 else self.rng.choice(isl.shapes)
        known = self.known.get((parent.kernel_id, shape))
        parent_fit = parent.fitness if shape == parent.shape else (known.speedup if known else None)
        context = self._context(shape, cand)
        info = self._info([cand], shape)
        allowed = [n for n, op in self.operators.items() if op.applies([cand], info)]
        if not allowed:
            return Plan(isl.index, "", None, shape, parent_fit, context, "no operator applies to this parent")
        name = self.policy.choose(context, self.rng, allowed)
        parents = [cand]
        if getattr(self.operators[name], "arity", 1) == 2:
            parents.append(self.candidates[isl.select(1, self.rng)[0].kernel_id])
        plan = Plan(isl.index, name, None, shape, parent_fit, context)
        plan.parents = parents
        return plan

    def _make_children(self, plans: list[Plan]) -> list[cf.Future]:
        """Apply the operators: LLM requests rendered in plan order (from what earlier generations
        left in the archive) and each sent on a thread of its own; structural operators in plan
        order (they draw from the RNG). Returns the LLM plans' futures, each resolving to its plan."""
        # every prompt is rendered before any call starts: an answer arriving meanwhile must not
        # change a later prompt (replay and resume need the same prompts for the same state)
        calls = [self._llm_call(p) for p in plans if p.operator.startswith("llm:")]
        futures = [in_background(call) for call in calls]
        for p in plans:
            if p.operator and not p.operator.startswith("llm:"):
                self._settle(p, lambda p=p: self.operators[p.operator].apply(
                    p.parents, self.rng, shape=p.shape, info=self._info(p.parents, p.shape)))
        return futures

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
            p.failure = "" if p.candidate else "the operator does not apply to this parent"
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
        remaining = self.c.search.max_evaluations - self.state.spent
        per_island = max(1, min(self.c.search.children_per_island, remaining // max(1, len(self.islands))))
        plans = [self._plan(isl) for isl in self.islands if isl.members for _ in range(per_island)]
        known_before = set(self.known)
        calls = self._make_children(plans)
        ready = [(p.candidate, p) for p in plans if p.candidate]  # structural; LLM children join as they come
        for cand, _ in ready:
            self.candidates.setdefault(cand.id, cand)
            self.ev.prepare(cand)
        island_of = {cand.id: p.island for cand, p in ready}
        results = self._evaluate([(cand, p.shape) for cand, p in ready], island_of=island_of, later=calls)
        refused = [p.failure for p in plans if p.failure_kind == "refused"]
        if refused:  # every later call would be refused too: stop, saying what to fix
            raise LLMRefused(f"the Messages API refuses the run's calls: {refused[0]}; fix that, then `evo resume`")
        for p in plans:  # in plan order: the same decisions whatever order results arrived in
            if not p.operator:
                continue
            if not p.candidate:  # an LLM answer without a usable edit: a failed use of the operator
                if p.failure_kind in ("unavailable", "budget"):  # the API's trouble, not the operator's
                    self.state.failures[f"llm_{p.failure_kind}"] += 1
                    continue
                self.policy.update(p.context, p.operator, self.c.mutator.penalty_compile_error)
                self.state.failures["llm_truncated" if p.failure_kind == "truncated" else "operator_failed"] += 1
                continue
            o = results[(p.candidate.id, p.shape)]
            duplicate = (p.candidate.id, p.shape) in known_before
            self.policy.update(p.context, p.operator, reward(o.status, o.speedup, p.parent_fitness,
                                                             self.c.mutator, duplicate=duplicate))
            if o.status != Status.OK and not duplicate:
                self.state.failures[str(o.status)] += 1
            self.islands[p.island].add([Individual(p.candidate.id, p.shape, o.speedup or 0.0)])
        if self.c.search.transfer_every and g % self.c.search.transfer_every == 0:
            self._transfer()
        if self.c.islands.migration != "off" and g % self.c.islands.migration_interval == 0:
            migrate(self.islands, topology=self.c.islands.migration, migrants=self.c.islands.migrants)
        self.state.stalled = self.state.stalled + 1 if self.state.spent == spent_before else 0
        self.state.generation = g + 1

    def _transfer(self) -> None:
        """Try cell elites on their nearest neighbouring shapes (a winner is a good seed nearby)."""
        best = {Shape(r["M"], r["N"], r["K"]): r["kernel_id"] for r in elites(self.archive, self.run_id)}
        cells = sorted(best)
        self.rng.shuffle(cells)
        pairs = []
        for shape in cells[:len(self.islands)]:
            kid = best[shape]
            near = sorted((s for s in self.shapes if s != shape and (kid, s) not in self.known),
                          key=lambda s: _log_distance(s, shape))
            if near and self.candidates.get(kid):
                pairs.append((self.candidates[kid], near[0]))
        if not pairs or self.state.spent + len(pairs) > self.c.search.max_evaluations:
            return
        results = self._evaluate(pairs, island_of={})
        for cand, shape in pairs:
            o = results[(cand.id, shape)]
            if o.status == Status.OK:
                for isl in self.islands:
                    if shape in isl.shapes:
                        isl.add([Individual(cand.id, shape, o.speedup or 0.0)])

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
        fails = ", ".join(f"{k} {v}" for k, v in self.state.failures.most_common(4)) or "none"
        sim = "SIMULATED " if self.c.evaluator.backend == "simulated" else ""
        log.info(f"{sim}gen {self.state.generation - 1:>3} | {self.state.spent}/{self.c.search.max_evaluations} evals "
                 f"| {rate:.1f}/s | cells {len(rows)}/{len(self.shapes)} | geomean speedup by bucket: {best} "
                 f"| failures: {fails}")


def _raise(error: Exception) -> Candidate:
    raise error


def _log_distance(a: Shape, b: Shape) -> float:
    return sum((math.log2(x) - math.log2(y)) ** 2 for x, y in ((a.M, b.M), (a.N, b.N), (a.K, b.K)))

"""Replay is exact: answers by (prompt, occurrence), failures included, with their recorded cost."""
import json
import logging
from collections import Counter

import pytest

from evo.archive import Archive
from evo.cli.hydra_app import compose
from evo.mutators.llm import build_llm_operators
from evo.mutators.llm.operator import OperatorFailure
from tests.fake_anthropic import FakeAnthropic, error, message, prompt_of
from tests.llm_helpers import PARENT, SHAPE, calls, deepen, edit, llm_config, operators, search_overrides


def test_the_same_prompt_replays_its_answers_in_order_failures_included(llm_env):
    """A prompt that first failed and later succeeded replayed the later answer at the first call."""
    archive, run = llm_env
    answers = {1: (529, error("overloaded_error", "busy"), 0), 2: (200, message(deepen("```cuda\n" + PARENT.source
                                                                                       + "```", "first")), 0)}
    with FakeAnthropic(lambda req, n: answers.get(n, (200, message(deepen(prompt_of(req), "second")), 0))) as server:
        ops, _ = operators(server, archive, run, max_retries=0)
        op = ops["llm:deepen_pipeline"]
        with pytest.raises(OperatorFailure):
            op.apply([PARENT], None, shape=SHAPE, info={})
        first, second = (op.apply([PARENT], None, shape=SHAPE, info={}) for _ in range(2))
    assert [r["occurrence"] for r in calls(archive)] == [0, 1, 2]

    replay_ops, _ = build_llm_operators(llm_config(backend="replay", replay_from=str(archive.path),
                                                   prompts=["deepen_pipeline"]))
    again = replay_ops["llm:deepen_pipeline"]
    with pytest.raises(OperatorFailure, match="busy") as info:
        again.apply([PARENT], None, shape=SHAPE, info={})
    assert info.value.kind == "unavailable"
    assert [again.apply([PARENT], None, shape=SHAPE, info={}).id for _ in range(2)] == [first.id, second.id]
    with pytest.raises(OperatorFailure, match="has left the recorded one"):  # a fourth asking was never recorded
        again.apply([PARENT], None, shape=SHAPE, info={})


def decisions(path, run_id):
    a = Archive.open(path, readonly=True)
    evaluations = Counter((r["generation"], r["kernel_id"], r["M"], r["N"], r["K"], r["operator"], r["status"],
                           r["speedup"]) for r in a.db.query("select * from evaluations where run_id = ?", [run_id]))
    llm = sorted((r["prompt_hash"], r["occurrence"], r["outcome"], r["kernel_id"], round(r["cost_usd"] or 0, 9))
                 for r in a.db.query("select * from llm_calls where run_id = ?", [run_id]))
    policy = json.loads(next(a.db.query("select state_json from policy_state where run_id = ? order by id desc "
                                        "limit 1", [run_id]))["state_json"])
    elites = sorted((r["cell"], r["kernel_id"]) for r in a.db.query("select * from elites where run_id = ?", [run_id]))
    return evaluations, llm, policy, elites, a.get_state(run_id, "search")["generation"]


def test_a_replayed_run_that_hit_its_budget_makes_the_same_decisions(monkeypatch, tmp_path, caplog):
    """Replayed calls cost $0, so a run that stopped at its budget went on far past it on replay. And
    the spent budget is announced once; after it only operators that apply to their parent are used
    (only change_family applied to LLM-made kernels), never an LLM operator."""
    from evo.search import run_search
    from evo.search.loop import Search
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    seen: Counter = Counter()
    retile_prompts: dict[str, int] = {}  # in the order they first arrive
    plans = []
    make_children = Search._make_children

    def watch(self, ps):  # each plan: operator, whether it applies to its parent, whether the budget was spent
        spent = any(op.recorder.exhausted() for op in self.operators.values() if hasattr(op, "recorder"))
        plans.extend((p.operator, self.operators[p.operator].applies(p.parents, self._info(p.parents, p.shape)),
                      spent) for p in ps if p.operator)
        return make_children(self, ps)

    monkeypatch.setattr(Search, "_make_children", watch)

    def behaviour(req, n):
        prompt = prompt_of(req)
        seen[prompt] += 1
        if req["max_tokens"] == 1:
            return 200, message("", input_tokens=8, output_tokens=1), 0
        # Every outcome occurs whichever operators and parents the policy picks (the search's path moves
        # with every change to the families' sources): deepen_pipeline always edits; retile's prompts,
        # in the order they first arrive, take turns failing on their first asking (replay must fail them
        # too), editing, and answering without an edit.
        if "Operator: deepen_pipeline" in prompt:  # a real edit; a comment where the pipeline cannot deepen
            answer = deepen(prompt, "answer")
            if "SEARCH" not in answer:
                answer = edit("#include <cuda_fp16.h>", "#include <cuda_fp16.h>\n// deepened elsewhere")
            return 200, message(answer), 0
        retile_prompts.setdefault(prompt, len(retile_prompts))
        turn = retile_prompts[prompt] % 3
        if turn == 0 and seen[prompt] == 1:
            return 529, error("overloaded_error", "busy"), 0
        if turn == 1:
            answer = deepen(prompt, "retiled")
            if "SEARCH" not in answer:
                answer = edit("#include <cuda_fp16.h>", "#include <cuda_fp16.h>\n// retiled")
            return 200, message(answer), 0
        return 200, message("Retiling would not help here."), 0

    common = ["llm.prompts=[deepen_pipeline,retile]", "search.max_evaluations=28", "search.children_per_island=4",
              "mutator.structural=[mutate_one,mutate_many]",
              "llm.budget_usd=0.02", "search.seed=5"]  # each call $0.006: the budget runs out in a few generations
    with FakeAnthropic(behaviour) as server, caplog.at_level(logging.WARNING):
        c, raw = compose(search_overrides(server, tmp_path / "original.sqlite", *common))
        original = run_search(c, raw)
    assert caplog.text.count("the LLM budget of $0.02 is spent") == 1
    after = [(op, applies) for op, applies, spent in plans if spent]
    assert after and all(not op.startswith("llm:") and applies for op, applies in after)
    first = decisions(original.archive, original.run_id)
    outcomes = Counter(o for _, _, o, _, _ in first[1])
    assert outcomes["unavailable"] and outcomes["child"] and outcomes["no_edit"], outcomes
    last_llm_generation = max(g for (g, _, _, _, _, op, _, _) in first[0] if op.startswith("llm:"))
    after = [op for (g, _, _, _, _, op, _, _) in first[0] if g > last_llm_generation + 1]
    assert after and not any(op.startswith("llm:") for op in after)  # the search went on without the LLM

    c, raw = compose(search_overrides(server, tmp_path / "replayed.sqlite", *common, "llm=replay",
                                      f"llm.replay_from={original.archive}"))
    replayed = run_search(c, raw)
    assert decisions(replayed.archive, replayed.run_id) == first
    assert all(r["replayed"] for r in calls(Archive.open(replayed.archive, readonly=True)))

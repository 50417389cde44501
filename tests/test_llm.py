"""LLM operators through the real anthropic SDK against a local fake of the Messages API."""
from collections import Counter

import pytest

from evo.archive import Archive
from evo.config import LLMConfig
from evo.core.errors import ConfigError
from evo.evaluation.static_checks import check_source
from evo.mutators.llm import build_llm_operators
from evo.mutators.llm.edits import EditError, apply_answer
from evo.mutators.llm.operator import OperatorFailure
from evo.mutators.policy import OperatorPolicy
from tests.fake_anthropic import FakeAnthropic, error, message, prompt_of
from tests.llm_helpers import PARENT, SHAPE, calls, deepen, edit, operators


def test_rate_limit_then_success_makes_a_child(llm_env):
    archive, run = llm_env
    def behaviour(req, n):
        return (429, error("rate_limit_error", "slow down"), 0) if n == 1 else (200, message(deepen(prompt_of(req))), 0)
    with FakeAnthropic(behaviour) as server:
        ops, note = operators(server, archive, run)
        child = ops["llm:deepen_pipeline"].apply([PARENT], None, shape=SHAPE, info={})
        assert len(server.requests) == 2
        req = server.requests[-1]
        assert "M=1024, N=1024, K=1024" in prompt_of(req)
    assert "#define STAGES 3" in child.source and child.parents == (PARENT.id,)
    assert check_source(child.source) == []
    (row,) = calls(archive)
    assert row["outcome"] == "child" and row["kernel_id"] == child.id and row["cost_usd"] > 0
    assert row["input_tokens"] == 4000 and row["output_tokens"] == 200 and row["latency_s"] > 0


def test_server_errors_are_a_failed_use_not_a_crash(llm_env):
    archive, run = llm_env
    with FakeAnthropic(lambda req, n: (500, error("api_error", "boom"), 0)) as server:
        ops, _ = operators(server, archive, run, max_retries=1)
        with pytest.raises(OperatorFailure, match="InternalServerError"):
            ops["llm:deepen_pipeline"].apply([PARENT], None, shape=SHAPE, info={})
        assert len(server.requests) == 2  # one retry by the SDK
    assert calls(archive)[0]["outcome"] == "unavailable"


def test_an_answer_without_edits_is_a_failed_use(llm_env):
    archive, run = llm_env
    with FakeAnthropic(lambda req, n: (200, message("I would rather not change anything."), 0)) as server:
        ops, _ = operators(server, archive, run)
        with pytest.raises(OperatorFailure, match="no SEARCH/REPLACE"):
            ops["llm:deepen_pipeline"].apply([PARENT], None, shape=SHAPE, info={})
    row = calls(archive)[0]
    assert row["outcome"] == "no_edit" and row["response"].startswith("I would rather")


def test_an_edit_that_breaks_the_abi_is_rejected_before_compiling(llm_env):
    archive, run = llm_env
    bad = edit("half* __restrict__ C, int M, int N, int K)", "float* __restrict__ C, int M, int N, int K)")
    with FakeAnthropic(lambda req, n: (200, message(bad), 0)) as server:
        ops, _ = operators(server, archive, run)
        child = ops["llm:deepen_pipeline"].apply([PARENT], None, shape=SHAPE, info={})
    assert any(r.rule == "abi" for r in check_source(child.source))


def test_a_slow_answer_times_out(llm_env):
    archive, run = llm_env
    with FakeAnthropic(lambda req, n: (200, message("late"), 3.0)) as server:
        ops, _ = operators(server, archive, run, timeout_s=1, max_retries=0)
        with pytest.raises(OperatorFailure, match="Timeout"):
            ops["llm:deepen_pipeline"].apply([PARENT], None, shape=SHAPE, info={})


def test_a_very_long_answer_is_refused(llm_env):
    archive, run = llm_env
    with FakeAnthropic(lambda req, n: (200, message("x" * 250_000), 0)) as server:
        ops, _ = operators(server, archive, run)
        with pytest.raises(OperatorFailure, match="longer than"):
            ops["llm:deepen_pipeline"].apply([PARENT], None, shape=SHAPE, info={})


def test_budget_stops_the_llm_operators(llm_env):
    archive, run = llm_env
    with FakeAnthropic(lambda req, n: (200, message(deepen(prompt_of(req)), input_tokens=2_000_000), 0)) as server:
        ops, _ = operators(server, archive, run, budget_usd=5.0)
        op = ops["llm:deepen_pipeline"]
        assert op.applies([PARENT], {})
        op.apply([PARENT], None, shape=SHAPE, info={})  # 2M input tokens at $3/M: $6
        assert not op.applies([PARENT], {})
        with pytest.raises(OperatorFailure, match="budget"):
            op.apply([PARENT], None, shape=SHAPE, info={})
        assert len(server.requests) == 1


def test_replay_answers_from_a_previous_archive(llm_env, tmp_path):
    archive, run = llm_env
    with FakeAnthropic(lambda req, n: (200, message(deepen(prompt_of(req))), 0)) as server:
        ops, _ = operators(server, archive, run)
        original = ops["llm:deepen_pipeline"].apply([PARENT], None, shape=SHAPE, info={})
    c = LLMConfig(backend="replay", replay_from=str(archive.path), prompts=["deepen_pipeline"])
    replay, note = build_llm_operators(c, archive=None, run_id=None)
    assert "replay" in note
    again = replay["llm:deepen_pipeline"].apply([PARENT], None, shape=SHAPE, info={})
    assert again.id == original.id


def test_without_a_key(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    ops, note = build_llm_operators(LLMConfig(backend="auto"))
    assert ops == {} and "structural operators only" in note
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY"):
        build_llm_operators(LLMConfig(backend="anthropic"))


def test_edit_parsing():
    src = "a\nb  \nc\n"
    assert apply_answer(src, edit("b", "B"), "search_replace") == "a\nB  \nc\n"
    assert apply_answer("a\nb  \nc\n", edit("a\nb\nc", "x"), "search_replace") == "x\n"  # trailing spaces tolerated
    with pytest.raises(EditError, match="does not occur"):
        apply_answer(src, edit("zzz", "y"), "search_replace")
    with pytest.raises(EditError, match="occurs 2 times"):
        apply_answer("x\nx\n", edit("x", "y"), "search_replace")
    full = "```cuda\nextern \"C\" __global__ void hgemm() {}\n```"
    assert apply_answer(src, full, "full").startswith("extern")


def test_every_prompt_template_renders():
    from evo.mutators.llm.prompts import load_templates
    templates = load_templates()
    assert len(templates) >= 10
    for t in templates:
        text = t.render(M=1, N=2, K=3, shape="1x2x3", parent_measurements="MEAS",
                        other_source="OTHER", other_measurements="OM", error="ERR", edit_rules="RULES")
        assert "MEAS" in text and "RULES" in text  # the parent's source comes first, outside the template


def test_search_policy_learns_which_prompt_improves_kernels(monkeypatch, tmp_path, compile_cache):
    """The fake server answers deepen_pipeline with real, improving edits and retile with junk."""
    from evo.cli.hydra_app import compose
    from evo.search import run_search
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")

    def behaviour(req, n):
        prompt = prompt_of(req)
        if "Operator: deepen_pipeline" in prompt:
            return 200, message(deepen(prompt)), 0
        return 200, message("Retiling would not help here."), 0

    with FakeAnthropic(behaviour) as server:
        c, raw = compose(["evaluator=simulated", "shapes=inline", "shapes.list=[1024x1024x1024,512x2048x1024]",
                          "llm=anthropic", f"llm.base_url={server.url}", "llm.prompts=[deepen_pipeline,retile]",
                          "mutator.structural=[]", "search.max_evaluations=60", "islands.n=1",
                          "islands.population=4", "search.children_per_island=6", "search.progress=false",
                          f"archive.path={tmp_path / 's.sqlite'}", "mutator.learning_rate=0.5",
                          "islands.specialize=none", "search.seed=3"])
        result = run_search(c, raw)
    archive, run_id = Archive.open(result.archive), result.run_id
    policy = archive.get_state(run_id, "policy")
    uses = Counter()
    for ctx in policy["uses"].values():
        uses.update(ctx)
    assert uses["llm:deepen_pipeline"] > uses["llm:retile"]
    final = archive.db.query("select state_json from policy_state where run_id = ? order by id desc limit 1", [run_id])
    import json
    probs = json.loads(next(final)["state_json"])["probabilities"]
    # contexts (shape bucket x family) the policy has seen often enough to have learned something
    learned = [probs[ctx] for ctx, n in policy["uses"].items() if sum(n.values()) >= 10]
    assert learned and all(p["llm:deepen_pipeline"] > p["llm:retile"] for p in learned), (probs, policy["uses"])
    outcomes = {r["outcome"] for r in archive.db.query("select outcome from llm_calls")}
    assert {"child", "no_edit"} <= outcomes


def test_an_answer_that_is_not_a_message_is_a_failed_call_not_a_crash(llm_env):
    """A 200 whose body is a proxy's HTML page reached the client as a str and raised AttributeError,
    which ended the run."""
    archive, run = llm_env
    with FakeAnthropic(lambda req, n: (200, "<html><body>proxy login</body></html>", 0)) as server:
        ops, _ = operators(server, archive, run)
        with pytest.raises(OperatorFailure, match="not a message") as info:
            ops["llm:deepen_pipeline"].apply([PARENT], None, shape=SHAPE, info={})
    assert info.value.kind == "unavailable"
    assert [r["outcome"] for r in calls(archive)] == ["unavailable"]


def test_paid_answers_are_recorded_at_once_from_any_thread(llm_env):
    """Calls were kept in memory until a generation's thread pool returned: Ctrl-C lost them all."""
    import concurrent.futures as cf
    archive, run = llm_env
    with FakeAnthropic(lambda req, n: (200, message("no edit here"), 0)) as server:
        ops, _ = operators(server, archive, run)
        op = ops["llm:deepen_pipeline"]

        def use(_):
            with pytest.raises(OperatorFailure):
                op.apply([PARENT], None, shape=SHAPE, info={})
            return len(calls(Archive.open(archive.path, readonly=True)))  # visible to another reader at once

        with cf.ThreadPoolExecutor(4) as pool:
            seen = list(pool.map(use, range(8)))
    assert min(seen) >= 1 and len(calls(archive)) == 8
    assert all(r["cost_usd"] > 0 and r["outcome"] == "no_edit" for r in calls(archive))


def test_an_api_that_refuses_every_call_stops_the_llm_operators_at_once(llm_env):
    archive, run = llm_env
    with FakeAnthropic(lambda req, n: (401, error("authentication_error", "invalid x-api-key"), 0)) as server:
        ops, _ = operators(server, archive, run)
        op = ops["llm:deepen_pipeline"]
        with pytest.raises(OperatorFailure) as info:
            op.apply([PARENT], None, shape=SHAPE, info={})
        assert info.value.kind == "refused"
        assert not op.applies([PARENT], {})  # no more calls to an API that refuses them
        assert len(server.requests) == 1
    assert "ANTHROPIC_API_KEY" in str(info.value)  # what to fix


def test_api_trouble_is_not_held_against_the_operator(tmp_path, monkeypatch):
    """A 529 or a timeout counted as a compile error steered the policy away from the LLM operators."""
    from evo.cli.hydra_app import compose
    from evo.search import run_search
    from evo.search.loop import Search
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    with FakeAnthropic(lambda req, n: (529, error("overloaded_error", "busy"), 0)) as server:
        c, raw = compose(["evaluator=simulated", "shapes=inline", "shapes.list=[1024x1024x1024]", "llm=anthropic",
                          f"llm.base_url={server.url}", "llm.prompts=[deepen_pipeline]", "llm.max_retries=0",
                          "mutator.structural=[]", "search.max_evaluations=12", "islands.n=1", "islands.population=4",
                          "search.children_per_island=3", "search.progress=false", "islands.specialize=none",
                          f"archive.path={tmp_path / 'u.sqlite'}"])
        updates = []
        monkeypatch.setattr(Search, "STALL_GENERATIONS", 3)
        original = OperatorPolicy.update
        monkeypatch.setattr(OperatorPolicy, "update", lambda self, *a: (updates.append(a), original(self, *a)))
        result = run_search(c, raw)
    assert "stalled" in result.reason and updates == []
    state = Archive.open(result.archive, readonly=True).get_state(result.run_id, "search")
    assert state["failures"].get("llm_unavailable", 0) >= 3

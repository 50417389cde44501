"""Fail fast: a key, model or request the API refuses stops the run with one line saying what to fix,
checked by a tiny call before the first generation. (A spent budget: tests/test_llm_replay.py.)"""
import pytest

from evo.archive import Archive
from evo.cli.hydra_app import compose
from evo.mutators.llm import LLMRefused, build_llm_operators
from tests.fake_anthropic import FakeAnthropic, error, message
from tests.llm_helpers import calls, llm_config, operators, search_overrides


@pytest.mark.parametrize("status, kind, fix", [
    (401, "authentication_error", "check ANTHROPIC_API_KEY"),
    (403, "permission_error", "permissions and llm.model"),
    (404, "not_found_error", "check llm.model and llm.base_url"),
    (400, "invalid_request_error", "check llm.model, llm.max_tokens"),
])
def test_the_preflight_call_stops_a_refused_run_before_any_work(llm_env, status, kind, fix):
    archive, run = llm_env
    with FakeAnthropic(lambda req, n: (status, error(kind, "no"), 0)) as server:
        with pytest.raises(LLMRefused, match=fix) as info:
            operators(server, archive, run, preflight=True)
        (req,) = server.requests
    assert req["max_tokens"] == 1  # tiny (streamed like every call, so that llm.timeout_s holds for it too)
    assert "\n" not in str(info.value)  # one line


def test_a_preflight_that_passes_is_recorded_with_its_cost(llm_env):
    archive, run = llm_env
    with FakeAnthropic(lambda req, n: (200, message("", input_tokens=8, output_tokens=1), 0)) as server:
        ops, note = operators(server, archive, run, preflight=True)
    (row,) = calls(archive)
    assert row["operator"] == "preflight" and row["cost_usd"] > 0 and ops


def test_a_refusal_during_the_search_stops_the_run(monkeypatch, tmp_path):
    """Every call answered 401 and the run 'finished' with 56 failed operator uses."""
    from evo.search import run_search
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")

    def behaviour(req, n):  # the key passes the preflight, then the account is switched off
        if req["max_tokens"] == 1:
            return 200, message("", input_tokens=8, output_tokens=1), 0
        return 403, error("permission_error", "this key may no longer use the model"), 0

    with FakeAnthropic(behaviour) as server:
        c, raw = compose(search_overrides(server, tmp_path / "r.sqlite", "llm.prompts=[deepen_pipeline]",
                                          "mutator.structural=[]", "search.max_evaluations=40",
                                          "search.children_per_island=3"))
        with pytest.raises(LLMRefused, match="permissions and llm.model.*then `evo resume`"):
            run_search(c, raw)
        asked = len(server.requests)
    a = Archive.open(tmp_path / "r.sqlite", readonly=True)
    assert a.runs()[0]["status"] == "failed"
    assert asked <= 1 + 3  # the preflight and one generation's calls: no more work wasted


def test_without_a_known_price_a_budget_cannot_be_kept(llm_env, tmp_path):
    """An unknown model fell back to one price (which could under-count spending several-fold)."""
    from evo.core.errors import ConfigError
    from evo.search import run_search
    with pytest.raises(ConfigError, match=r"llm.model=claude-new-1 has no price.*llm.price_in_per_mtok"):
        build_llm_operators(llm_config(model="claude-new-1"))
    c, raw = compose(["evaluator=simulated", "llm=anthropic", "llm.model=claude-new-1",
                      f"archive.path={tmp_path / 'p.sqlite'}"])
    with pytest.raises(ConfigError, match="has no price"):
        run_search(c, raw)
    assert not (tmp_path / "p.sqlite").exists()  # refused before any run was recorded

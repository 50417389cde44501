"""Long answers: streamed, sized for a full rewrite of the largest seed kernel, never half-applied
when cut; one wall-clock limit per call, retries and retry-after waits included."""
from importlib import resources

import pytest

from evo.config import LLMConfig
from evo.mutators.llm.operator import OperatorFailure
from tests.fake_anthropic import FakeAnthropic, error, message, prompt_of
from tests.llm_helpers import PARENT, SHAPE, calls, deepen, operators


def test_a_cut_answer_is_a_truncated_failure_and_nothing_of_it_is_applied(llm_env):
    """An answer cut at max_tokens applied its complete edit blocks and dropped the cut one."""
    archive, run = llm_env

    def behaviour(req, n):  # two complete edits, then the cut
        return 200, message(deepen(prompt_of(req)) + "<<<<<<< SEARCH\n#define", stop_reason="max_tokens"), 0

    with FakeAnthropic(behaviour) as server:
        ops, _ = operators(server, archive, run)
        with pytest.raises(OperatorFailure, match="cut at llm.max_tokens") as info:
            ops["llm:deepen_pipeline"].apply([PARENT], None, shape=SHAPE, info={})
    assert info.value.kind == "truncated"
    (row,) = calls(archive)
    assert (row["outcome"], row["stop_reason"], row["kernel_id"]) == ("truncated", "max_tokens", None)
    assert row["cost_usd"] > 0  # paid for all the same


def test_answers_are_streamed_with_room_for_a_full_rewrite(llm_env):
    archive, run = llm_env
    with FakeAnthropic(lambda req, n: (200, message(deepen(prompt_of(req))), 0)) as server:
        ops, _ = operators(server, archive, run, thinking_budget=4096)
        ops["llm:deepen_pipeline"].apply([PARENT], None, shape=SHAPE, info={})
        req = server.requests[-1]
    assert req["stream"] is True and req["max_tokens"] == LLMConfig().max_tokens
    assert req["thinking"] == {"type": "enabled", "budget_tokens": 4096}
    assert calls(archive)[0]["stop_reason"] == "end_turn"
    # the defaults leave room for a full rewrite of the largest seed kernel, twice over, beside thinking
    hopper = resources.files("evo.families").joinpath("hopper.cu").read_text()
    tokens = len(hopper) / 3.5
    defaults = LLMConfig()
    assert defaults.max_tokens - defaults.thinking_budget >= 2 * tokens


def test_retry_after_is_obeyed_up_to_its_cap(llm_env):
    archive, run = llm_env
    with FakeAnthropic(lambda req, n: (429, error("rate_limit_error", "slow down"), 0) if n == 1
                       else (200, message(deepen(prompt_of(req))), 0)) as server:
        server.retry_after_ms = 3_600_000  # an hour
        ops, _ = operators(server, archive, run, retry_after_cap_s=0.25)
        op = ops["llm:deepen_pipeline"]
        waits = []
        op.client.sleep = waits.append
        op.apply([PARENT], None, shape=SHAPE, info={})
    assert waits == [0.25] and len(server.requests) == 2


def test_one_wall_clock_limit_covers_a_call_with_all_its_retries(llm_env):
    """A hung connection held a generation for ~40 s at llm.timeout_s=5."""
    archive, run = llm_env
    with FakeAnthropic(lambda req, n: (529, error("overloaded_error", "busy"), 0)) as server:
        ops, _ = operators(server, archive, run, max_retries=1_000_000, timeout_s=1.0)
        with pytest.raises(OperatorFailure, match=r"gave up after the call's limit llm.timeout_s=1 s") as info:
            ops["llm:deepen_pipeline"].apply([PARENT], None, shape=SHAPE, info={})
    assert info.value.kind == "unavailable"
    assert calls(archive)[0]["outcome"] == "unavailable"


def test_a_hung_answer_is_given_up_within_the_calls_limit(llm_env):
    archive, run = llm_env
    with FakeAnthropic(lambda req, n: (200, message("late"), 5.0)) as server:
        ops, _ = operators(server, archive, run, max_retries=3, timeout_s=1.0, idle_timeout_s=1.0)
        with pytest.raises(OperatorFailure, match="llm.timeout_s=1 s"):
            ops["llm:deepen_pipeline"].apply([PARENT], None, shape=SHAPE, info={})
        assert len(server.requests) == 1  # no retry started past the limit

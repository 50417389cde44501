"""Prices per model from the config, prompt caching that works, and `evo archive llm`."""
import json
import subprocess
import sys

import pytest

from evo.core.errors import ConfigError
from evo.families import FAMILIES
from evo.mutators.llm.operator import OperatorFailure
from evo.mutators.llm.prices import cost_usd, price_of
from tests.fake_anthropic import FakeAnthropic, message, prompt_of
from tests.llm_helpers import PARENT, SHAPE, calls, deepen, llm_config, operators

HOPPER = FAMILIES["hopper"].candidate(FAMILIES["hopper"].default)
SIMT = FAMILIES["simt"].candidate(FAMILIES["simt"].default)


def test_prices_come_from_the_dated_table_or_from_the_user():
    c = llm_config()
    assert c.prices_date and price_of(c).in_per_mtok == 3.0
    assert price_of(llm_config(model="claude-sonnet-4-5-20250929")) == c.prices["claude-sonnet-4-5"]  # dated name
    assert price_of(llm_config(model="claude-sonnet-4-5x")) is None  # no loose prefix matching
    own = price_of(llm_config(model="claude-new-1", price_in_per_mtok=2.0, price_out_per_mtok=10.0,
                              price_cache_write_per_mtok=2.5, price_cache_read_per_mtok=0.2))
    assert cost_usd(own, input_tokens=1_000_000, output_tokens=100_000, cache_write_tokens=0,
                    cache_read_tokens=1_000_000) == pytest.approx(2.0 + 1.0 + 0.2)
    with pytest.raises(ConfigError, match="llm.price_cache_read_per_mtok missing"):
        price_of(llm_config(model="claude-new-1", price_in_per_mtok=2.0, price_out_per_mtok=10.0,
                            price_cache_write_per_mtok=2.5))


def test_the_parent_source_is_the_cached_prefix_and_cache_tokens_are_billed(llm_env):
    """cache_control marked only the system prompt (under the minimum cacheable length), and the parent's
    source came after the per-call text."""
    archive, run = llm_env

    def behaviour(req, n):  # the second call reads the prefix the first one wrote
        return 200, message(deepen(prompt_of(req)), input_tokens=300, cache_write=0 if n > 1 else 2500,
                            cache_read=2500 if n > 1 else 0), 0

    with FakeAnthropic(behaviour) as server:
        ops, _ = operators(server, archive, run, prompts=["deepen_pipeline", "registers"])
        for name in ("llm:deepen_pipeline", "llm:registers"):
            ops[name].apply([PARENT], None, shape=SHAPE, info={})  # the same edit, whatever the instruction
        first, second = server.requests
    assert "cache_control" not in first["system"][0]
    for req in (first, second):
        stable, variable = req["messages"][0]["content"]
        assert stable["cache_control"] == {"type": "ephemeral"} and PARENT.source.strip() in stable["text"]
        assert "cache_control" not in variable and "Operator:" in variable["text"]
    assert first["messages"][0]["content"][0] == second["messages"][0]["content"][0]  # the same prefix
    assert first["messages"][0]["content"][1] != second["messages"][0]["content"][1]
    rows = calls(archive)
    assert [(r["cache_write_tokens"], r["cache_read_tokens"]) for r in rows] == [(2500, 0), (0, 2500)]
    assert rows[1]["cost_usd"] == pytest.approx((300 * 3.0 + 200 * 15.0 + 2500 * 0.30) / 1e6)


def test_a_prefix_under_the_models_minimum_is_not_marked(llm_env):
    archive, run = llm_env
    with FakeAnthropic(lambda req, n: (200, message("no edit"), 0)) as server:
        ops, _ = operators(server, archive, run, model="claude-haiku-4-5")  # caches from 4096 tokens
        for parent in (SIMT, HOPPER):
            with pytest.raises(OperatorFailure, match="no SEARCH/REPLACE"):
                ops["llm:deepen_pipeline"].apply([parent], None, shape=SHAPE, info={})
        small, large = (r["messages"][0]["content"][0] for r in server.requests)
    assert "cache_control" not in small and large["cache_control"] == {"type": "ephemeral"}


def test_evo_archive_llm_lists_calls_and_totals(llm_env):
    archive, run = llm_env
    answers = iter([message(deepen(prompt_of({"messages": [{"content": "```cuda\n" + PARENT.source + "```"}]})),
                            cache_read=500), message("no edit here", stop_reason="max_tokens")])
    with FakeAnthropic(lambda req, n: (200, next(answers), 0)) as server:
        ops, _ = operators(server, archive, run)
        ops["llm:deepen_pipeline"].apply([PARENT], None, shape=SHAPE, info={})
        with pytest.raises(OperatorFailure, match="cut at"):
            ops["llm:deepen_pipeline"].apply([PARENT], None, shape=SHAPE, info={})
    out = subprocess.run([sys.executable, "-m", "evo", "archive", "llm", str(archive.path)], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "child" in out.stdout and "truncated" in out.stdout and "max_tokens" in out.stdout
    assert "cache reads 5.9% of prompt tokens" in out.stdout  # 500 of 4000 + 500 + 4000
    data = json.loads(subprocess.run([sys.executable, "-m", "evo", "archive", "llm", "--json", str(archive.path)],
                                     capture_output=True, text=True, timeout=120).stdout)
    assert [c["outcome"] for c in data["calls"]] == ["child", "truncated"]
    assert {"operator", "outcome", "stop_reason", "input_tokens", "output_tokens", "cache_read_tokens",
            "cache_write_tokens", "cost_usd", "latency_s"} <= set(data["calls"][0])
    assert data["summary"]["calls"] == 2 and data["summary"]["cost_usd"] > 0

"""LLM operators: prompt templates (mutators/prompts/*.md) answered through the Anthropic
Messages API (or replayed from an earlier archive), parsed into edits of the parent source.

    build_llm_operators(cfg, archive=..., run_id=...) -> ({name: LLMOperator}, note for the log)

See docs/llm.md for settings, prices, caching, replay and the failure classes.
"""
from __future__ import annotations

import logging
import os
from typing import Any

from evo.config import LLMConfig
from evo.core.errors import ConfigError
from evo.mutators.llm.client import PREFLIGHT, LLMCallError, Request
from evo.mutators.llm.operator import LLMOperator, OperatorFailure
from evo.mutators.llm.prompts import load_templates

log = logging.getLogger(__name__)


class LLMRefused(ConfigError):
    """The Messages API refuses the run's calls (key, permission, model, parameters): the run stops."""


def build_llm_operators(cfg: LLMConfig, *, archive=None, run_id: int | None = None, preflight: bool | None = None):
    """The operators and a note for the log. With the Anthropic backend, the price of the model must
    be known (or given) and, unless `preflight` is False (default: llm.preflight), one tiny call checks
    the key and the model first: a refusal raises LLMRefused saying what to fix."""
    backend = cfg.backend
    if backend == "auto":
        backend = "anthropic" if os.environ.get("ANTHROPIC_API_KEY") else "none"
        if backend == "none":
            return {}, ("LLM operators are off: ANTHROPIC_API_KEY is not set, so the search uses the structural "
                        "operators only (set the key, or llm=replay llm.replay_from=OLD.sqlite)")
    if backend == "none":
        return {}, "LLM operators are off (llm=none): structural operators only"
    from evo.mutators.llm.recorder import Recorder
    recorder = Recorder(archive, run_id, budget_usd=cfg.budget_usd)
    if backend == "anthropic":
        if not os.environ.get("ANTHROPIC_API_KEY"):
            raise ConfigError("llm=anthropic needs ANTHROPIC_API_KEY in the environment (or use llm=none)")
        from evo.mutators.llm.client import AnthropicClient
        client: Any = AnthropicClient(cfg)
        client.budget_spent = recorder.exhausted  # a call waiting for a slot is not sent once the budget is spent
    else:
        from evo.mutators.llm.replay import ReplayClient
        client = ReplayClient(cfg)
    if cfg.preflight if preflight is None else preflight:
        _preflight(client, recorder)
    templates = load_templates(cfg.prompts)
    ops = {f"llm:{t.name}": LLMOperator(t, client, recorder, edit_format=cfg.edit_format) for t in templates}
    note = (f"LLM operators on ({backend}, model {cfg.model}, budget ${cfg.budget_usd:g}, "
            f"${recorder.spent_usd:.2f} spent): " + ", ".join(sorted(ops)))
    return ops, note


def _preflight(client, recorder) -> None:
    try:
        reply = client.preflight()
    except LLMCallError as e:
        if e.cost_usd:  # an answer cut mid-stream is billed: counted against the budget
            recorder.record(operator="preflight", model=client.cfg.model, prompt_hash=PREFLIGHT,
                            occurrence=recorder.next_occurrence(PREFLIGHT), outcome=e.kind, error=str(e),
                            cost_usd=e.cost_usd, replayed=0)
        if e.kind == "refused":
            raise LLMRefused(f"the Messages API refused a first test call: {e}") from None
        log.warning(f"a first test call to the Messages API failed ({e}); the search starts anyway and each LLM "
                    f"call is retried within llm.timeout_s")
        return
    if reply is None:  # replay of a run that made no test call
        return
    recorder.record(operator="preflight", model=reply.model, prompt_hash=PREFLIGHT,
                    occurrence=recorder.next_occurrence(PREFLIGHT), outcome="preflight",
                    stop_reason=reply.stop_reason, input_tokens=reply.input_tokens, output_tokens=reply.output_tokens,
                    cost_usd=reply.cost_usd, replayed=int(reply.replayed), error=reply.note or None)


__all__ = ["build_llm_operators", "LLMOperator", "LLMRefused", "OperatorFailure", "Request", "load_templates"]

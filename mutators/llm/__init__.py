"""LLM operators: prompt templates (mutators/prompts/*.md) answered through the Anthropic
Messages API (or replayed from an earlier archive), parsed into edits of the parent source.

    build_llm_operators(cfg, archive=..., run_id=...) -> ({name: LLMOperator}, note for the log)
"""
from __future__ import annotations

import os
from typing import Any

from evo.config import LLMConfig
from evo.core.errors import ConfigError
from evo.mutators.llm.operator import LLMOperator
from evo.mutators.llm.prompts import load_templates


def build_llm_operators(cfg: LLMConfig, *, archive=None, run_id: int | None = None):
    backend = cfg.backend
    if backend == "auto":
        backend = "anthropic" if os.environ.get("ANTHROPIC_API_KEY") else "none"
        if backend == "none":
            return {}, ("LLM operators are off: ANTHROPIC_API_KEY is not set, so the search uses the structural "
                        "operators only (set the key, or llm=replay llm.replay_from=OLD.sqlite)")
    if backend == "none":
        return {}, "LLM operators are off (llm=none): structural operators only"
    if backend == "anthropic":
        if not os.environ.get("ANTHROPIC_API_KEY"):
            raise ConfigError("llm=anthropic needs ANTHROPIC_API_KEY in the environment (or use llm=none)")
        from evo.mutators.llm.client import AnthropicClient
        client: Any = AnthropicClient(cfg)
    else:
        from evo.mutators.llm.client import ReplayClient
        client = ReplayClient(cfg)
    from evo.mutators.llm.recorder import Recorder
    recorder = Recorder(archive, run_id, budget_usd=cfg.budget_usd)
    templates = load_templates(cfg.prompts)
    ops = {f"llm:{t.name}": LLMOperator(t, client, recorder, edit_format=cfg.edit_format) for t in templates}
    note = (f"LLM operators on ({backend}, model {cfg.model}, budget ${cfg.budget_usd:g}): "
            + ", ".join(sorted(ops)))
    return ops, note


__all__ = ["build_llm_operators", "LLMOperator", "load_templates"]

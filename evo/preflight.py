"""Checks that must pass before any work starts (and before a run is recorded in the archive)."""
from __future__ import annotations

import os
from pathlib import Path

from evo.config import EvoConfig
from evo.errors import ConfigError, GpuUnavailable


def preflight(c: EvoConfig, *, needs_llm: bool = False) -> None:
    """Raise a one-line error for a missing GPU, nvcc, API key or replay archive."""
    from evo.compiler import nvcc_version
    nvcc_version()  # CompileToolError with what to do when nvcc is missing
    if c.evaluator.backend == "gpu":
        from evo.evaluation.pool import visible_gpus
        if not visible_gpus():
            raise GpuUnavailable("no NVIDIA GPU is visible here: run on a GPU machine, or use evaluator=simulated "
                                 "for a dry run with modelled (not measured) times")
    if needs_llm:
        if c.llm.backend == "anthropic" and not os.environ.get("ANTHROPIC_API_KEY"):
            raise ConfigError("llm=anthropic needs ANTHROPIC_API_KEY in the environment (or use llm=none)")
        if c.llm.backend == "replay" and not Path(c.llm.replay_from or "").is_file():
            raise ConfigError(f"llm.replay_from={c.llm.replay_from}: no such archive")

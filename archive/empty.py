"""What an empty answer means: one line that names the run shown, its kind, why it is empty when
the archive says so, and where to look instead (for `evo archive`, `evo export`, `evo report`)."""
from __future__ import annotations

import json

from evo.archive.store import Archive

#: run kinds that never fill cells (a bench times libraries, a self-test runs deliberately bad kernels)
NO_CELLS = {"bench": "a bench fills no cells", "selftest": "a self-test fills no cells"}


def run_label(run: dict) -> str:
    return f"run {run['id']} ({run.get('kind') or 'run'})"


def other_run_with_kernels(a: Archive, run_id: int) -> dict | None:
    """The most recent run other than `run_id` whose cells hold a kernel."""
    return next(iter(other_runs_with_kernels(a, run_id)), None)


def other_runs_with_kernels(a: Archive, run_id: int) -> list[dict]:
    """Every run other than `run_id` whose cells hold a kernel, most recent first."""
    return [r for r in reversed(a.runs()) if r["id"] != run_id and r["cells"]]


def no_kernels(a: Archive, run: dict, command: str) -> str:
    """'no kernels in run 5 (bench) of X: a bench fills no cells; run 3 (sweep) has 7: evo COMMAND X --run 3'."""
    text = f"no kernels in {run_label(run)} of {a.path}"
    why = NO_CELLS.get(run.get("kind") or "")
    if why:
        text += f": {why}"
    others = other_runs_with_kernels(a, run["id"])
    if others:
        text += f"; {run_label(others[0])} has {others[0]['cells']}: evo {command} {a.path} --run {others[0]['id']}"
    if len(others) > 1:
        text += " (also " + ", ".join(f"{run_label(r)} with {r['cells']}" for r in others[1:]) + ")"
    return text


def no_failures(run: dict) -> str:
    return f"no failed evaluations in {run_label(run)}"


def no_llm_calls(run: dict) -> str:
    """Why a run made no LLM calls, as far as its kind and stored configuration say."""
    text = f"no LLM calls in {run_label(run)}"
    if run.get("kind") not in (None, "search"):
        return f"{text}: only searches call the LLM"
    backend = (json.loads(run.get("config_json") or "{}").get("llm") or {}).get("backend")
    if backend == "none":
        return f"{text}: it ran with llm=none"
    if backend == "auto":
        return f"{text}: it ran with llm.backend=auto, which calls the LLM only when ANTHROPIC_API_KEY is set"
    return f"{text} (llm.backend={backend})" if backend else text

"""LLM calls: every prompt, answer, token count and cost, and what replay reads back."""
from __future__ import annotations

from evo.archive.store import Archive


def add_llm_calls(a: Archive, rows: list[dict]) -> None:
    """Record calls (dicts with the llm_calls columns) in one transaction."""
    with a.transaction():
        for row in rows:
            a._insert("llm_calls", row)


def llm_spent(a: Archive, run_id: int) -> float:
    """USD spent on LLM calls by a run so far."""
    row = a.db.execute("select coalesce(sum(cost_usd), 0) from llm_calls where run_id = ?", [run_id]).fetchone()
    return float(row[0])


def recorded_responses(a: Archive) -> dict[str, list[str]]:
    """prompt hash -> recorded answers, in the order they were received."""
    answers: dict[str, list[str]] = {}
    for row in a.db.query("select prompt_hash, response from llm_calls where response is not null order by id"):
        answers.setdefault(row["prompt_hash"], []).append(row["response"])
    return answers

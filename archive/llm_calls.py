"""LLM calls: every prompt, answer, token count and cost, and what replay reads back."""
from __future__ import annotations

from evo.archive.store import Archive


def add_llm_calls(a: Archive, rows: list[dict]) -> None:
    """Record calls (dicts with the llm_calls columns) in one transaction. Their values come partly from
    a server, which may send anything: each is made storable first (`_storable`), since a paid answer
    that cannot be written is an answer lost and a cost forgotten."""
    with a.transaction():
        for row in rows:
            a._insert("llm_calls", {k: _storable(v) for k, v in row.items()})


def _storable(v: object) -> object:
    """v as SQLite takes it: numbers, None and bytes as they are; text with what UTF-8 cannot hold (a
    lone surrogate, valid in JSON) replaced by '?'; anything else (a dict where text was due) as its repr."""
    if v is None or isinstance(v, (int, float, bytes)):
        return v
    text = v if isinstance(v, str) else repr(v)
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")


def llm_spent(a: Archive, run_id: int) -> float:
    """USD spent on LLM calls by a run so far."""
    row = a.db.execute("select coalesce(sum(cost_usd), 0) from llm_calls where run_id = ?", [run_id]).fetchone()
    return float(row[0])


def prompt_counts(a: Archive, run_id: int, *, before_generation: int | None = None) -> dict[str, int]:
    """prompt hash -> how many times the run has asked it (before a generation, when given)."""
    before = before_generation if before_generation is not None else 2**62
    return {r["prompt_hash"]: r["n"] for r in a.db.query(
        "select prompt_hash, count(*) as n from llm_calls where run_id = ? and coalesce(generation, -1) < ? "
        "group by prompt_hash", [run_id, before])}


def answers_since(a: Archive, run_id: int, generation: int) -> dict[tuple[str, int], dict]:
    """(prompt hash, occurrence) -> the answered calls of a run from a generation on (those of a
    generation that was interrupted: a resumed run uses them again instead of paying twice)."""
    return {(r["prompt_hash"], r["occurrence"]): r for r in a.db.query(
        "select * from llm_calls where run_id = ? and generation >= ? and response is not null order by id",
        [run_id, generation])}


def recorded_calls(a: Archive, run_id: int | None = None) -> tuple[int | None, dict[tuple[str, int], dict]]:
    """(run, {(prompt hash, occurrence): call row}) for a run's calls (default: the last run with
    calls). Rows written before occurrences were stored count in the order they were recorded."""
    if run_id is None:
        row = a.db.execute("select max(run_id) from llm_calls where prompt_hash is not null").fetchone()
        run_id = row[0] if row else None
    calls: dict[tuple[str, int], dict] = {}
    seen: dict[str, int] = {}
    for row in a.db.query("select * from llm_calls where run_id = ? and prompt_hash is not null order by id",
                          [run_id]):
        h = row["prompt_hash"]
        n = row["occurrence"] if row.get("occurrence") is not None else seen.get(h, 0)
        seen[h] = max(seen.get(h, 0), n + 1)
        calls[(h, n)] = row
    return run_id, calls


def recent_failures(a: Archive, run_id: int | None, parent_id: str, *, before_generation: int | None = None,
                    limit: int = 3) -> list[dict]:
    """A run's newest failed attempts on a parent: LLM answers without a usable edit, and children
    that failed their evaluation. Each: operator, what (outcome or status), error, generation.
    Only generations before `before_generation` when given, ordered by generation and then by
    content, never by clock: the same history gives the same list (replay relies on it)."""
    before = before_generation if before_generation is not None else 2**62
    return list(a.db.query(
        """select * from (
             select operator, outcome as what, error, generation from llm_calls
               where run_id is ? and parent_id = ? and outcome in ('no_edit', 'truncated')
                 and coalesce(generation, -1) < ?
             union all
             select e.operator, e.status as what, e.error, e.generation from lineage l
               join evaluations e on e.kernel_id = l.child and e.run_id is l.run_id
               where l.run_id is ? and l.parent = ? and e.status != 'ok' and coalesce(e.generation, -1) < ?)
           order by generation desc, operator, what, error limit ?""",
        [run_id, parent_id, before, run_id, parent_id, before, limit]))

"""Every LLM call into the archive, and the spending budget.

LLM calls run on worker threads; SQLite writes happen on the main thread only: rows recorded on
another thread wait in `pending` until the search calls `flush()` after the calls return.
"""
from __future__ import annotations

import threading

from evo.archive.llm_calls import add_llm_calls, llm_spent
from evo.archive.store import now


class Recorder:
    def __init__(self, archive, run_id: int | None, *, budget_usd: float):
        self.archive, self.run_id, self.budget_usd = archive, run_id, budget_usd
        self._lock = threading.Lock()
        self.pending: list[dict] = []
        self.spent_usd = 0.0
        if archive is not None and run_id is not None:
            self.spent_usd = llm_spent(archive, run_id)

    def exhausted(self) -> bool:
        return self.spent_usd >= self.budget_usd

    def record(self, **row) -> None:
        with self._lock:
            self.spent_usd += row.get("cost_usd") or 0.0
            self.pending.append({"run_id": self.run_id, "created_at": now(), **row})
        if threading.current_thread() is threading.main_thread():
            self.flush()

    def flush(self) -> None:
        with self._lock:
            rows, self.pending = self.pending, []
        if self.archive is not None and rows:
            add_llm_calls(self.archive, rows)

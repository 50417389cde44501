"""Every LLM call into the archive, and the spending budget."""
from __future__ import annotations

import threading

from archive.store import now


class Recorder:
    def __init__(self, archive, run_id: int | None, *, budget_usd: float):
        self.archive, self.run_id, self.budget_usd = archive, run_id, budget_usd
        self._lock = threading.Lock()
        self.spent_usd = 0.0
        if archive is not None and run_id is not None:
            row = archive.db.execute("select coalesce(sum(cost_usd), 0) from llm_calls where run_id = ?", [run_id]).fetchone()
            self.spent_usd = float(row[0])

    def exhausted(self) -> bool:
        return self.spent_usd >= self.budget_usd

    def record(self, **row) -> int | None:
        with self._lock:
            self.spent_usd += row.get("cost_usd") or 0.0
        if self.archive is None:
            return None
        return self.archive.insert("llm_calls", {"run_id": self.run_id, "created_at": now(), **row})

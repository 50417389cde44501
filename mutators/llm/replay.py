"""Replay: the calls of a recorded run answer again, matched by prompt and occurrence.

The n-th asking of a prompt in the replayed run gets the answer the n-th asking got in the recorded
run, failures included, with its recorded cost, so a replayed run spends its budget as the original
did and makes the same decisions.
"""
from __future__ import annotations

import threading

from evo.config import LLMConfig
from evo.core.errors import ConfigError
from evo.mutators.llm.client import PREFLIGHT, LLMCallError, Reply, Request


class ReplayClient:
    replayed = True  # its answers cost nothing now; their recorded cost still counts against the budget

    def __init__(self, cfg: LLMConfig):
        from evo.archive import Archive
        from evo.archive.llm_calls import recorded_calls
        self.cfg = cfg
        source = Archive.open(cfg.replay_from or "", readonly=True)
        try:
            self.run_id, self.calls = recorded_calls(source, cfg.replay_run)
        finally:
            source.close()
        if not self.calls:
            raise ConfigError(f"llm.replay_from={cfg.replay_from} holds no recorded LLM calls"
                              + (f" of run {cfg.replay_run}" if cfg.replay_run is not None else ""))
        self._lock = threading.Lock()

    def preflight(self) -> Reply | None:
        """The recorded run's test call, if it made one (its cost counts again, as all replayed costs do)."""
        row = self.calls.get((PREFLIGHT, 0))
        return Reply.from_row(row, self.cfg.model, replayed=True) if row else None

    def complete(self, req: Request, on_cost=None, on_send=None) -> Reply:
        """The recorded answer (or failure) to `req`. Neither `on_cost` nor `on_send` is called: nothing is
        sent, a replayed call's recorded cost is counted when its row is written, and no call waits for a slot."""
        with self._lock:
            row = self.calls.get((req.hash, req.occurrence))
        if row is None:
            raise LLMCallError(f"replay: run {self.run_id} of {self.cfg.replay_from} has no answer to this prompt "
                               f"(occurrence {req.occurrence}): the replayed run has left the recorded one",
                               replayed=True)
        if row["response"] is None:  # a recorded failure fails again, the same way
            raise LLMCallError(row["error"] or "recorded failure", "refused" if row["outcome"] == "refused"
                               else "unavailable", replayed=True, cost_usd=row["cost_usd"] or 0.0)
        return Reply.from_row(row, self.cfg.model, replayed=True)

"""Every LLM call into the archive, and the spending budget.

Each call is written the moment it is answered, from whichever thread made it, through a
connection of the recorder's own (SQLite serialises it with the search's writes), so a paid answer
is never lost to a crash or Ctrl-C, and a resumed run counts what was spent. Spending the budget
is announced once. Occurrences of each prompt are counted here (in plan order, by the search's
thread) so that replay can match the n-th asking of a prompt to the n-th recorded answer. A resumed
run uses the answers of the generation that was interrupted again, instead of paying for them twice.
"""
from __future__ import annotations

import logging
import math
import threading
import weakref

from evo.archive import Archive
from evo.archive.llm_calls import add_llm_calls, answers_since, llm_spent, prompt_counts
from evo.archive.store import now

log = logging.getLogger(__name__)
FAILING_CALLS = 8  # failed LLM calls in a row before the run says so (a power of two)
_live: weakref.WeakSet = weakref.WeakSet()  # every recorder, for bill_calls_left_in_flight


class Recorder:
    def __init__(self, archive, run_id: int | None, *, budget_usd: float):
        self.archive, self.run_id, self.budget_usd = archive, run_id, budget_usd
        self._lock = threading.RLock()
        self.pending: list[dict] = []
        self._writer: Archive | None = None
        self.spent_usd = 0.0
        self.failing, self.last_error = 0, ""  # calls failed since the last that answered, and its error
        self.asked: dict[str, int] = {}
        self.kept: dict[tuple[str, int], dict] = {}  # answers of an interrupted generation
        self.in_flight: dict[int, dict] = {}  # calls sent and not yet ended: their row, at an upper estimate
        self._calls = 0
        _live.add(self)
        if archive is not None and run_id is not None:
            self.spent_usd = llm_spent(archive, run_id)
            resume_at = (archive.get_state(run_id, "search") or {}).get("generation")
            self.asked = prompt_counts(archive, run_id, before_generation=resume_at)
            if resume_at is not None:
                self.kept = answers_since(archive, run_id, resume_at)

    def kept_answer(self, prompt_hash: str, occurrence: int) -> dict | None:
        """The recorded (and paid, and counted) answer to this asking from before an interruption."""
        with self._lock:
            return self.kept.pop((prompt_hash, occurrence), None)

    def next_occurrence(self, prompt_hash: str) -> int:
        with self._lock:
            n = self.asked.get(prompt_hash, 0)
            self.asked[prompt_hash] = n + 1
            return n

    def call_started(self, row: dict, upper_estimate_usd: float) -> int:
        """A call goes out: kept with what it can cost at most until it ends (call_ended), so that a run
        that stops and leaves it behind still bills it (bill_unanswered). Returns its token."""
        with self._lock:
            self._calls += 1
            self.in_flight[self._calls] = dict(row, cost_usd=upper_estimate_usd)
            return self._calls

    def call_ended(self, token: int) -> bool:
        """The call ended; False where bill_unanswered billed it already (the stop did not wait for it)."""
        with self._lock:
            return self.in_flight.pop(token, None) is not None

    def bill_unanswered(self) -> int:
        """Record every call still in flight at its upper estimate (a stopping run that leaves it behind
        is still charged for it); returns how many. One that answers later is recorded at no further cost."""
        with self._lock:
            rows, self.in_flight = list(self.in_flight.values()), {}
            for row in rows:
                self.record(**row, outcome="unavailable", error="the run stopped while this call was in flight: "
                            "billed at an upper estimate (the prompt at two characters a token, llm.max_tokens out)")
            return len(rows)

    def exhausted(self) -> bool:
        return self.spent_usd >= self.budget_usd

    def record(self, *, counted: float = 0.0, **row) -> None:
        """Write a call's row and add its cost to the spending, less what `count` added for it already."""
        cost = row.get("cost_usd")
        if cost is not None and not _money(cost):
            # the client checks the API's figures; a cost that is still not a sum of money must not make
            # the budget NaN (never spent) or negative (more to spend): counted as the whole budget
            log.warning(f"an LLM call's cost came out as {cost!r}: counted as the whole budget")
            row["cost_usd"] = cost = self.budget_usd
        with self._lock:
            self._spend((cost or 0.0) - counted)
            self.pending.append({"run_id": self.run_id, "created_at": now(), **row})
            self._note_failures(row)
            self.flush()

    def count(self, cost: float) -> float:
        """Add a call's cost to the spending the moment the client has it (before its row is written, while
        the call still holds its concurrency slot); returns what was added, for `record(counted=...)`."""
        amount = cost if _money(cost) else self.budget_usd
        with self._lock:
            self._spend(amount)
        return amount

    def _spend(self, usd: float) -> None:
        was_exhausted = self.exhausted()
        self.spent_usd += usd
        if self.exhausted() and not was_exhausted:
            log.warning(f"the LLM budget of ${self.budget_usd:g} is spent (${self.spent_usd:.2f}): LLM operators "
                        f"are off for the rest of the run and the search goes on with the structural operators; raise "
                        f"llm.budget_usd with `evo resume` to go on")

    def _note_failures(self, row: dict) -> None:
        """Say so when the API keeps failing (the search goes on with structural operators, quietly
        otherwise): once after FAILING_CALLS failed calls in a row, again at each doubling."""
        if row.get("outcome") != "unavailable":
            if row.get("response") is not None:
                self.failing = 0
            return
        self.failing, self.last_error = self.failing + 1, str(row.get("error") or "?")
        n = self.failing
        if n >= FAILING_CALLS and n & (n - 1) == 0:
            log.warning(f"the last {n} LLM calls all failed (latest: {self.last_error[:300]}); the search goes on "
                        f"with the structural operators and keeps asking; check llm.base_url, the network and the "
                        f"API's status")

    def flush(self) -> None:
        """Write the pending rows; where the archive refuses them (a locked or full disk), they stay
        pending for the next call's flush and the error goes on to the caller."""
        with self._lock:
            if self.archive is None or not self.pending:
                return
            if self._writer is None:  # its own connection: the search's is not for other threads
                self._writer = Archive.open(self.archive.path)
            add_llm_calls(self._writer, self.pending)
            self.pending = []


def _money(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0


def bill_calls_left_in_flight() -> int:
    """On a stop, after the grace for answers in flight: bill each call still unanswered (every recorder's)."""
    return sum(r.bill_unanswered() for r in list(_live))

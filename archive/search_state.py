"""What a search saves at the end of every generation, and what `evo resume` loads back.

A generation is saved in one transaction: the search's counters, RNG and policy state, every
island's population and the policy's probabilities (for reports). Killing the process between
two saves loses only the evaluations of the unfinished generation, which are themselves in the
archive and are replayed (not re-measured) on resume.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from evo.archive.store import Archive, now
from evo.core.kernel import Candidate
from evo.core.records import Outcome, Status
from evo.core.shapes import Shape


@dataclass
class SavedRun:
    """A search run as saved at the end of its last finished generation."""
    state: dict  # key -> JSON value ("search", "rng", "policy", ...)
    islands: dict[int, dict]  # island index -> population JSON
    candidates: dict[str, Candidate] = field(default_factory=dict)  # every kernel the run evaluated
    evaluations: list[tuple[str, Shape, Outcome, int]] = field(default_factory=list)  # (kernel, shape, outcome,
    # generation), in archive order


def save_generation(a: Archive, run_id: int, generation: int, *, state: dict[str, Any],
                    islands: dict[int, dict], probabilities: dict) -> None:
    with a.transaction():
        for key, value in state.items():
            a.put_state(run_id, key, value)
        for index, population in islands.items():
            a._insert("island_state", {"run_id": run_id, "island": index, "generation": generation,
                                       "population_json": json.dumps(population), "created_at": now()},
                      replace=True)
        a._insert("policy_state", {"run_id": run_id, "generation": generation,
                                   "state_json": json.dumps({"probabilities": probabilities}), "created_at": now()})
        a.touch_run(run_id)


def load_run(a: Archive, run_id: int, keys: tuple[str, ...]) -> SavedRun | None:
    """The saved state of a run, or None when it never finished a generation."""
    state = {k: a.get_state(run_id, k) for k in keys}
    if all(v is None for v in state.values()):
        return None
    islands = {row["island"]: json.loads(row["population_json"]) for row in
               a.db.query("select island, population_json from island_state where run_id = ?", [run_id])}
    saved = SavedRun(state, islands)
    for row in a.db.query("select * from kernels where id in (select kernel_id from evaluations where run_id = ?)",
                          [run_id]):
        saved.candidates[row["id"]] = Candidate(row["source"], row["family"], row["params_json"], row["operator"],
                                                tuple(json.loads(row["parents_json"])))
    for row in a.db.query("select kernel_id, M, N, K, status, speedup, time_ms, error, generation "
                          "from evaluations where run_id = ? order by id", [run_id]):
        outcome = Outcome(Status(row["status"]), row["speedup"], row["time_ms"], row["error"] or "")
        saved.evaluations.append((row["kernel_id"], Shape(row["M"], row["N"], row["K"]), outcome,
                                  row["generation"] or 0))
    return saved


def policy_history(a: Archive, run_id: int) -> list[tuple[int, dict]]:
    """(generation, probabilities per context) after each generation."""
    return [(r["generation"], json.loads(r["state_json"])["probabilities"]) for r in
            a.db.query("select generation, state_json from policy_state where run_id = ? order by id", [run_id])]

"""Versioned schema: a registry of migrations, each applied in one transaction with its record.

Version N of the schema is reached by applying migrations 1..N in order. An archive written by a
newer evo (higher version) is refused; an older one is migrated when opened.
"""
from __future__ import annotations

from collections.abc import Callable

import sqlite_utils

Migration = Callable[[sqlite_utils.Database], None]


def _v1_core(db: sqlite_utils.Database) -> None:
    db.table("runs").create({
        "id": int, "name": str, "kind": str, "status": str, "created_at": str, "updated_at": str,
        "config_json": str, "seed": int, "backend": str, "gpu": str, "host": str, "evo_version": str,
    }, pk="id")
    db.table("kernels").create({
        "id": str, "source": str, "family": str, "params_json": str, "operator": str,
        "parents_json": str, "declaration_json": str, "run_id": int, "generation": int,
        "island": int, "created_at": str,
    }, pk="id")
    db.table("lineage").create({"child": str, "parent": str, "run_id": int, "operator": str},
                         pk=("child", "parent"))
    db.table("compiles").create({
        "key": str, "kernel_id": str, "status": str, "log": str, "registers": int, "smem_static": int,
        "stack": int, "spill_stores": int, "spill_loads": int, "seconds": float, "created_at": str,
    }, pk="key")
    db.table("evaluations").create({
        "id": int, "run_id": int, "kernel_id": str, "M": int, "N": int, "K": int, "status": str,
        "error": str, "mode": str, "time_ms": float, "spread": float, "samples_json": str,
        "clock_mhz": float, "throttled": int, "max_rel_err": float, "backend": str, "gpu": str,
        "best_library": str, "best_library_ms": float, "speedup": float, "roofline_fraction": float,
        "operator": str, "generation": int, "island": int, "launch_json": str, "created_at": str,
    }, pk="id")
    db.table("evaluations").create_index(["run_id", "M", "N", "K"])
    db.table("evaluations").create_index(["kernel_id"])
    db.table("baselines").create({
        "id": int, "gpu": str, "backend": str, "M": int, "N": int, "K": int, "mode": str,
        "library": str, "status": str, "error": str, "time_ms": float, "spread": float,
        "detail": str, "measured_at": str,
    }, pk="id")
    db.table("baselines").create_index(["gpu", "backend", "M", "N", "K", "mode", "library"], unique=True)
    db.table("device_peaks").create({
        "gpu": str, "backend": str, "peak_tflops": float, "bandwidth_gbs": float, "num_sms": int,
        "l2_bytes": int, "measured_at": str,
    }, pk=("gpu", "backend"))
    db.table("elites").create({
        "run_id": int, "cell": str, "M": int, "N": int, "K": int, "kernel_id": str, "evaluation_id": int,
        "time_ms": float, "speedup": float, "updated_at": str,
    }, pk=("run_id", "cell"))
    db.table("elite_history").create({
        "id": int, "run_id": int, "cell": str, "kernel_id": str, "time_ms": float, "speedup": float,
        "evaluations_so_far": int, "at": str,
    }, pk="id")
    db.table("llm_calls").create({
        "id": int, "run_id": int, "operator": str, "model": str, "prompt_hash": str, "system": str,
        "prompt": str, "response": str, "input_tokens": int, "output_tokens": int,
        "cache_read_tokens": int, "cache_write_tokens": int, "cost_usd": float, "latency_s": float,
        "outcome": str, "error": str, "kernel_id": str, "replayed": int, "created_at": str,
    }, pk="id")
    db.table("llm_calls").create_index(["prompt_hash"])
    db.table("policy_state").create({"id": int, "run_id": int, "generation": int, "state_json": str,
                               "created_at": str}, pk="id")
    db.table("island_state").create({"run_id": int, "island": int, "generation": int, "population_json": str,
                               "created_at": str}, pk=("run_id", "island"))
    db.table("run_state").create({"run_id": int, "key": str, "value_json": str, "updated_at": str},
                           pk=("run_id", "key"))


def _v2_clocks(db: sqlite_utils.Database) -> None:
    """Library timings keep their SM clock and throttle flag, as kernel evaluations do; an evaluation
    keeps what its MAP-Elites cell made of it (`cell_offer`: new, improved, slower, or throttled =
    kept out because the GPU was throttled while it was timed; NULL when never offered)."""
    # Plain ALTER TABLE: it runs inside the migration's transaction (see Archive._migrate).
    db.execute("alter table baselines add column clock_mhz REAL")
    db.execute("alter table baselines add column throttled INTEGER")
    db.execute("alter table evaluations add column cell_offer TEXT")


def _v3_llm_calls(db: sqlite_utils.Database) -> None:
    """LLM calls keep why the answer ended (`stop_reason`: end_turn, max_tokens, ...), which occurrence
    of their prompt in the run they were (`occurrence`, 0-based: replay matches on prompt and
    occurrence), the parent kernel they were about (`parent_id`: earlier failures on a parent are
    shown in its next prompts) and the search generation that asked (`generation`)."""
    db.execute("alter table llm_calls add column stop_reason TEXT")
    db.execute("alter table llm_calls add column occurrence INTEGER")
    db.execute("alter table llm_calls add column parent_id TEXT")
    db.execute("alter table llm_calls add column generation INTEGER")


def _v4_libraries_alone(db: sqlite_utils.Database) -> None:
    """Library timings say whether they were timed alone (`alone` = 1: a library-only job, in a worker
    before its first kernel, as sweeps and searches time them since session 22) or beside a kernel (0, or
    NULL for the timings of older archives): a worker that had evaluated kernels read the libraries up to
    15% slower, so a sweep or search into such an archive times them again, alone (docs/timing.md)."""
    db.execute("alter table baselines add column alone INTEGER")


#: The registry: migration i (1-based) takes an archive from version i-1 to version i.
MIGRATIONS: list[tuple[str, Migration]] = [
    ("core tables", _v1_core),
    ("library clocks and cell offers", _v2_clocks),
    ("llm call stop reasons, occurrences, parents and generations", _v3_llm_calls),
    ("library timings say whether they were timed alone", _v4_libraries_alone),
]
SCHEMA_VERSION = len(MIGRATIONS)

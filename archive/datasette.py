"""Datasette metadata for browsing an archive: table and column descriptions, canned queries."""
from __future__ import annotations

TABLES = {
    "runs": "One row per search, sweep or bench, with its full configuration.",
    "kernels": "Every candidate kernel: CUDA source, content hash, family, template parameters, operator, parents.",
    "evaluations": "One row per (kernel, shape) evaluation: status, error, times, speedup, roofline fraction, backend.",
    "baselines": "Library times (torch.matmul, cuBLASLt heuristic/autotuned) per GPU, shape and timing mode.",
    "elites": "MAP-Elites cells: the fastest correct kernel per shape of each run.",
    "elite_history": "Every improvement of a cell, with the number of evaluations spent so far.",
    "llm_calls": "Every LLM call: prompt, response, tokens, cost, latency, outcome and the kernel it produced.",
    "compiles": "nvcc results: status, trimmed log, registers, shared memory, spills, stack.",
    "policy_state": "The operator probabilities per context after each generation.",
}
_CLOCK = "mean SM clock (MHz) read during the samples of the timing mode (0: unknown)"
_THROTTLED = "1 if a clock reading showed a slowdown reason or an SM clock below 85% of the GPU's maximum"
COLUMNS = {
    "evaluations": {"status": "ok, incorrect, fault, timeout, ... (see evo/core/records.py)",
                    "speedup": "best library time / kernel time, same GPU and timing mode",
                    "backend": "gpu (measured) or simulated (the CPU test double: modelled, not measured)",
                    "mode": "rotating (cold inputs), hot (same buffers) or server (isolated launches)",
                    "clock_mhz": _CLOCK, "throttled": _THROTTLED + " (in any timing mode)",
                    "cell_offer": "what the shape's cell made of a correct evaluation: new, improved, slower, or "
                                  "throttled (kept out: timed on a throttled GPU); empty when never offered"},
    "baselines": {"clock_mhz": _CLOCK, "throttled": _THROTTLED},
    "kernels": {"source": "the CUDA source; one over 256 KiB (always rejected for its size) is cut, with a "
                          "closing line giving its whole length"},
}
QUERIES = {
    "elites": {"title": "Best kernel per shape", "sql":
               "select c.run_id, c.cell, c.kernel_id, c.time_ms, c.speedup, v.best_library, v.roofline_fraction, "
               "k.family, k.operator from elites c join evaluations v on v.id = c.evaluation_id "
               "join kernels k on k.id = c.kernel_id order by c.run_id, c.M * c.N * c.K"},
    "failures": {"title": "Failures by cause and operator", "sql":
                 "select run_id, status, operator, count(*) as n from evaluations where status != 'ok' "
                 "group by run_id, status, operator order by n desc"},
    "llm_cost": {"title": "LLM calls, tokens and cost", "sql":
                 "select run_id, operator, outcome, count(*) as calls, sum(input_tokens) as input_tokens, "
                 "sum(output_tokens) as output_tokens, round(sum(cost_usd), 4) as cost_usd "
                 "from llm_calls group by run_id, operator, outcome"},
    "throttled": {"title": "Evaluations timed on a throttled GPU, per run", "sql":
                  "select run_id, count(*) as evaluations, sum(throttled = 1) as throttled, "
                  "sum(throttled = 1 and status = 'ok') as correct_and_throttled from evaluations group by run_id"},
    "lineage": {"title": "Parents of a kernel", "sql":
                "select l.child, l.parent, l.operator, k.family from lineage l join kernels k on k.id = l.parent "
                "where l.child = :kernel_id"},
}


def metadata(db_name: str, simulated_runs: tuple[int, ...] = ()) -> dict:
    """Datasette's metadata; with `simulated_runs`, every page's title and description say which runs
    hold times modelled by the CPU test double."""
    tables: dict[str, dict] = {t: {"description": d} for t, d in TABLES.items()}
    for t, cols in COLUMNS.items():
        tables[t]["columns"] = cols
    title, description = "evo archive", "Kernels, evaluations and baselines of an evo search (read-only)."
    if simulated_runs:
        runs = ", ".join(map(str, simulated_runs))
        title += f" (SIMULATED: run {runs})"
        description = (f"SIMULATED: run {runs} used evaluator=simulated, the CPU test double: its times are "
                       "modelled, not measured. " + description)
    return {"title": title, "description": description,
            "databases": {db_name: {"tables": tables, "queries": QUERIES, "description": description}}}

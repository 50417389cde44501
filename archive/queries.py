"""Read-only queries: browsing (the CLI, reports, export) and what the LLM prompts quote."""
from __future__ import annotations

import json

from evo.archive.records import is_truncated
from evo.archive.store import Archive
from evo.core.errors import ArchiveError
from evo.core.shapes import Shape


def resolve_run(a: Archive, run_id: int | None, kind: str | None = None) -> dict:
    if run_id:
        return a.run(run_id)
    run = a.last_run(kind) or a.last_run()
    if run is None:
        raise ArchiveError(f"{a.path} holds no runs yet")
    return run


def unfinished_runs(a: Archive, kind: str) -> list[int]:
    """Ids of the runs of one kind that did not finish (stopped, failed, or left running by a kill)."""
    return [r["id"] for r in a.db.query("select id from runs where kind = ? and status != 'finished' order by id",
                                        [kind])]


def running_runs(a: Archive) -> list[int]:
    """Ids of the runs whose status says running (their process may be alive, or killed)."""
    return [r["id"] for r in a.db.query("select id from runs where status = 'running' order by id")]


def elites(a: Archive, run_id: int) -> list[dict]:
    """Best kernel per shape with its time, rate and SM clock, each library's time (same GPU, same mode),
    the clock the fastest library ran at (a ratio against a library timed at a lower clock flatters the
    kernel), and the roofline fraction. Its operator is the one by which this run evaluated it (a kernel
    that another run made first keeps its maker in the kernels table: `evo archive show`)."""
    rows = []
    for e in a.db.query("""
            select c.cell, c.M, c.N, c.K, c.kernel_id, c.time_ms, c.speedup, v.mode, v.gpu, v.backend,
                   v.best_library, v.best_library_ms, v.roofline_fraction, v.clock_mhz, v.created_at, v.launch_json,
                   k.family, coalesce(nullif(v.operator, ''), k.operator) as operator, k.params_json
            from elites c join evaluations v on v.id = c.evaluation_id join kernels k on k.id = c.kernel_id
            where c.run_id = ? order by c.M * c.N * c.K, c.M, c.N, c.K""", [run_id]):
        timed = list(a.db.query(
            "select library, time_ms, clock_mhz from baselines where gpu = ? and backend = ? and M = ? and N = ? "
            "and K = ? and mode = ? and status = 'ok'", [e["gpu"], e["backend"], e["M"], e["N"], e["K"], e["mode"]]))
        libs = {r["library"]: r["time_ms"] for r in timed}
        fastest = min(timed, key=lambda r: r["time_ms"], default=None)
        e["clock_mhz"] = e["clock_mhz"] or None  # 0: not read (the test double, or no NVML)
        rows.append({**e, "libraries": libs, "library_clock_mhz": (fastest["clock_mhz"] or None) if fastest else None,
                     "tflops": 2 * e["M"] * e["N"] * e["K"] / (e["time_ms"] * 1e-3) / 1e12 if e["time_ms"] else None,
                     **{f"vs_{lib}": ms / e["time_ms"] for lib, ms in libs.items() if e["time_ms"]}})
    return rows


def kernel(a: Archive, kernel_id: str) -> dict:
    rows = list(a.db.query("select * from kernels where id = ? or id like ?", [kernel_id, kernel_id + "%"]))
    if not rows:
        raise ArchiveError(f"no kernel {kernel_id!r} in {a.path}")
    if len(rows) > 1:
        raise ArchiveError(f"{kernel_id!r} matches {len(rows)} kernels: give more of its id")
    k = rows[0]
    k["compiles"] = list(a.db.query("select status, registers, smem_static, stack, spill_stores, spill_loads, "
                                    "seconds, log from compiles where kernel_id = ?", [k["id"]]))
    k["evaluations"] = list(a.db.query(
        "select id, run_id, M, N, K, status, mode, time_ms, speedup, best_library, roofline_fraction, backend, gpu, "
        "error, created_at from evaluations where kernel_id = ? order by id", [k["id"]]))
    k["llm_calls"] = list(a.db.query("select id, operator, model, prompt, response, outcome, cost_usd from llm_calls "
                                     "where kernel_id = ?", [k["id"]]))
    return k


def kernel_row(a: Archive, kernel_id: str) -> dict | None:
    """A kernel's family, params_json, source and operator (None if the archive lacks it)."""
    rows = list(a.db.query("select family, params_json, source, operator from kernels where id = ?", [kernel_id]))
    return rows[0] if rows else None


def lineage(a: Archive, kernel_id: str, depth: int = 50) -> list[dict]:
    """Ancestors, nearest first: (kernel, operator, parents, depth)."""
    out, frontier, seen = [], [(kernel(a, kernel_id)["id"], 0)], set()
    while frontier:
        kid, d = frontier.pop(0)
        if kid in seen or d > depth:
            continue
        seen.add(kid)
        row = next(a.db.query("select id, family, operator, parents_json, params_json from kernels where id = ?", [kid]), None)
        if row is None:
            continue
        parents = json.loads(row["parents_json"] or "[]")
        # its best speedup and the shape of it (a kernel's speedups differ from shape to shape), and whether
        # any of its evaluations was simulated; one row, the best first (NULL speedups sort last)
        best = next(a.db.query("select speedup as s, M, N, K, max(backend = 'simulated') over () as sim "
                               "from evaluations where kernel_id = ? order by speedup is null, speedup desc limit 1",
                               [kid]), None)
        out.append({"depth": d, "kernel_id": kid, "family": row["family"], "operator": row["operator"],
                    "parents": parents, "best_speedup": best["s"] if best else None,
                    "best_on": f"{best['M']}x{best['N']}x{best['K']}" if best and best["s"] is not None else None,
                    "backend": "simulated" if best and best["sim"] else "gpu"})
        frontier += [(p, d + 1) for p in parents]
    return out


def failures(a: Archive, run_id: int) -> list[dict]:
    return list(a.db.query("""select status, operator, count(*) as count from evaluations
                              where run_id = ? and status != 'ok' group by status, operator
                              order by count desc""", [run_id]))


def llm_usage(a: Archive, run_id: int) -> list[dict]:
    """Totals by operator and outcome; `cache_read_share`: cache-read tokens over all input tokens."""
    return list(a.db.query("""select operator, outcome, count(*) as calls, sum(input_tokens) as input_tokens,
                                     sum(output_tokens) as output_tokens, sum(cache_read_tokens) as cache_read_tokens,
                                     sum(cache_write_tokens) as cache_write_tokens,
                                     round(1.0 * sum(cache_read_tokens) / nullif(sum(input_tokens)
                                           + sum(cache_read_tokens) + sum(cache_write_tokens), 0), 3)
                                       as cache_read_share,
                                     round(sum(cost_usd), 4) as cost_usd, round(avg(latency_s), 2) as avg_latency_s
                              from llm_calls where run_id = ? group by operator, outcome order by operator""", [run_id]))


def llm_call_list(a: Archive, run_id: int) -> list[dict]:
    """Every call of a run, oldest first (without prompts and answers: `evo archive show` has those)."""
    return list(a.db.query("""select id, operator, outcome, stop_reason, input_tokens, output_tokens,
                                     cache_read_tokens, cache_write_tokens, round(cost_usd, 5) as cost_usd,
                                     round(latency_s, 2) as latency_s, replayed, substr(kernel_id, 1, 12) as kernel,
                                     substr(error, 1, 80) as error
                              from llm_calls where run_id = ? order by id""", [run_id]))


def measured_times(a: Archive, kernel_id: str) -> dict[Shape, float]:
    """The newest ok time (ms) of a kernel at every shape it was measured at (any run)."""
    times: dict[Shape, float] = {}
    for r in a.db.query("select M, N, K, time_ms from evaluations where kernel_id = ? and status = 'ok' "
                        "and time_ms is not null order by id", [kernel_id]):
        times[Shape(r["M"], r["N"], r["K"])] = r["time_ms"]
    return times


def kernel_source(a: Archive, kernel_id: str) -> str:
    """A kernel's whole source (refused for one stored cut: such a kernel was rejected for its size)."""
    row = a.db.execute("select source from kernels where id = ?", [kernel_id]).fetchone()
    if row is None:
        raise ArchiveError(f"no kernel {kernel_id!r} in {a.path}")
    if is_truncated(row[0]):
        raise ArchiveError(f"kernel {kernel_id} was rejected for its size and {a.path} keeps only the start of "
                           f"its source: `evo archive show {a.path} {kernel_id[:12]}` prints it")
    return row[0]


def latest_evaluation(a: Archive, kernel_id: str, shape: Shape) -> dict | None:
    """The newest evaluation of a kernel at a shape (any run), or None."""
    return next(a.db.query(
        "select * from evaluations where kernel_id = ? and M = ? and N = ? and K = ? order by id desc limit 1",
        [kernel_id, shape.M, shape.N, shape.K]), None)


def latest_compile(a: Archive, kernel_id: str) -> dict | None:
    return next(a.db.query("select * from compiles where kernel_id = ? order by created_at desc limit 1",
                           [kernel_id]), None)


def evaluation_trace(a: Archive, run_id: int) -> list[dict]:
    """Every evaluation of a run in the order it was recorded: island, shape, speedup."""
    return list(a.db.query("select island, M, N, K, speedup from evaluations where run_id = ? order by id",
                           [run_id]))


def operator_use(a: Archive, run_id: int) -> dict[str, dict]:
    """Per operator of a run: evaluations it made, how many were correct, their mean speedup, and how
    many set a new fastest time on their shape (the shape's first correct evaluation counts)."""
    best: dict[tuple, float] = {}
    out: dict[str, dict] = {}
    for r in a.db.query("select operator, M, N, K, status, time_ms, speedup from evaluations where run_id = ? "
                        "order by id", [run_id]):
        use = out.setdefault(r["operator"] or "?", {"uses": 0, "ok": 0, "speedups": [], "new_bests": 0})
        use["uses"] += 1
        if r["status"] != "ok" or not r["time_ms"]:
            continue
        use["ok"] += 1
        use["speedups"].append(r["speedup"] or 0.0)
        shape = (r["M"], r["N"], r["K"])
        if shape not in best or r["time_ms"] < best[shape]:
            best[shape] = r["time_ms"]
            use["new_bests"] += 1
    for use in out.values():
        speedups = use.pop("speedups")
        use["mean_speedup"] = sum(speedups) / len(speedups) if speedups else None
    return out


def elite_history(a: Archive, run_id: int) -> list[dict]:
    """Every improvement of a cell, in order, with the evaluations spent so far."""
    return list(a.db.query("select cell, speedup, evaluations_so_far from elite_history where run_id = ? "
                           "order by id", [run_id]))


def throttling(a: Archive, run_id: int) -> dict:
    """How throttling touched a run: `evaluations` (of `of`) timed on a throttled GPU, `kept_out`
    (correct ones kept out of the cells for it), `elites` (cells holding a throttled evaluation:
    archives written before evo kept them out), `library_throttled` of `library` timings on the
    run's GPUs, and the mean SM clock of the kernels' and of the libraries' timings (MHz). A figure
    an older archive did not record (schema version 1, read without upgrading) is None."""
    kept_out = "coalesce(sum(cell_offer = 'throttled'), 0)" if _has(a, "evaluations", "cell_offer") else "null"
    ev = a.db.execute(f"""select count(*), coalesce(sum(throttled = 1), 0), {kept_out}, avg(nullif(clock_mhz, 0))
                          from evaluations where run_id = ?""", [run_id]).fetchone()
    elites_throttled = a.db.execute("""select count(*) from elites c join evaluations v on v.id = c.evaluation_id
                                       where c.run_id = ? and v.throttled = 1""", [run_id]).fetchone()[0]
    lib = (None, None)
    if _has(a, "baselines", "throttled"):
        lib = a.db.execute("""select coalesce(sum(throttled = 1), 0), avg(nullif(clock_mhz, 0)) from baselines
                              where (gpu, backend) in (select distinct gpu, backend from evaluations where run_id = ?)""",
                           [run_id]).fetchone()
    library = a.db.execute("""select count(*) from baselines where (gpu, backend) in
                              (select distinct gpu, backend from evaluations where run_id = ?)""", [run_id]).fetchone()[0]
    return {"evaluations": ev[1], "of": ev[0], "kept_out": ev[2], "elites": elites_throttled, "clock_mhz": ev[3],
            "library": library, "library_throttled": lib[0], "library_clock_mhz": lib[1]}


def run_timings(a: Archive, run_id: int) -> list[dict]:
    """Every evaluation of a run in the order recorded: kernel_id, M, N, K, status, time_ms."""
    return list(a.db.query("select kernel_id, M, N, K, status, time_ms from evaluations where run_id = ? order by id",
                           [run_id]))


def correct_timings(a: Archive) -> list[dict]:
    """Every kernel's best correct time on each shape and GPU, with its source and family and the GPU's
    measured peaks (what a cost model is fit to): M, N, K, gpu, time_ms, kernel_id, source, family,
    peak_tflops, bandwidth_gbs (None where the archive has no peaks for that GPU)."""
    return list(a.db.query("""
            select e.M, e.N, e.K, e.gpu, min(e.time_ms) as time_ms, k.id as kernel_id, k.source, k.family,
                   p.peak_tflops, p.bandwidth_gbs
            from evaluations e join kernels k on k.id = e.kernel_id
            left join device_peaks p on p.gpu = e.gpu and p.backend = e.backend
            where e.status = 'ok' and e.time_ms > 0 group by e.M, e.N, e.K, e.gpu, k.id
            order by e.M, e.N, e.K, k.id"""))


def _has(a: Archive, table: str, column: str) -> bool:
    """Whether the file has this column (an archive read without upgrading may predate it)."""
    return any(row[1] == column for row in a.db.execute(f"pragma table_info([{table}])"))


def device_num_sms(a: Archive, gpu: str, backend: str) -> int | None:
    """The SM count recorded for a GPU (launch declarations may depend on it), or None."""
    row = a.db.execute("select num_sms from device_peaks where gpu = ? and backend = ?", [gpu, backend]).fetchone()
    return row[0] if row and row[0] else None

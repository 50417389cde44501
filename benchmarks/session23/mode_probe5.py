"""Session 23, for the next GPU session: are a sweep's kernel timings in the slow mode, and when?

Session 23's grid125 sweep timed the libraries first (alone) and they then read as clean benches did
(within 0.1% geomean). But `evo bench kernels_of=` timed the same winners again, one draw each, and on 19
of the 53 shapes under 1 GFLOP it read the very same kernel (same cubin, same launch) 0.22-0.31 us faster
than the sweep had; on the other 34 it read 0.0-0.1 us slower, as a best-of-24 pick should. The 19 are
every shape of 72-1032 KiB of operands (timed over 1016-8192 rotating sets); they share families, grids and
K with the others; the offset is the size of the "slow mode" session 22 found for the libraries (0.33 us a
call). Which side is right is the question.

Here one real worker (evo's WorkerPool, as a sweep runs it) replays a sweep's kernels in the sweep's own
order, each twice in a row, with the sweep's settings (3 replays of 10 ms, 2 draws, PDL as recorded), and
every 8 kernels times torch alone on a canary shape. Printed per kernel: the sweep's time, both new times
and the bench's time where the bench has that shape's winner. Read it as:
  - t1 and t2 agree with the sweep on the slow-group shapes: the sweep's order reproduces the slow mode;
    the canary then says whether the whole worker was slow at that moment (torch slower too) or only
    that kernel's timing;
  - t1 and t2 agree with the bench: something of the sweep (the order of other work, the compile
    processes beside it, the race) put those timings in the slow mode;
  - t1 and t2 disagree with each other: the mode is drawn per job.

    python benchmarks/session23/mode_probe5.py SWEEP.sqlite [BENCH.sqlite] [--first N] [--ids 26,31,...]
(on the GPU machine, evo installed, from /tmp). PROBE_SIMULATED=1: the plumbing on the CPU test double.
"""
import argparse
import json
import os
import sqlite3

CANARY = (64, 64, 256)
SIMULATED = bool(os.environ.get("PROBE_SIMULATED"))


def sweep_rows(path: str, first: int, ids: list[int]) -> list[tuple]:
    db = sqlite3.connect(path)
    q = ("select e.id, e.M, e.N, e.K, e.time_ms, k.family, k.params_json from evaluations e "
         "join kernels k on k.id = e.kernel_id where e.status = 'ok' ")
    if ids:
        rows = db.execute(q + f"and e.id in ({','.join(str(i) for i in ids)}) order by e.id").fetchall()
    else:
        rows = db.execute(q + "order by e.id limit ?", (first,)).fetchall()
    return rows


def bench_times(path: str | None) -> dict:
    if not path:
        return {}
    db = sqlite3.connect(path)
    return {(m, n, k): (kid, t) for m, n, k, kid, t in db.execute(
        "select M, N, K, kernel_id, min(time_ms) from evaluations where status = 'ok' group by M, N, K")}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("sweep")
    ap.add_argument("bench", nargs="?")
    ap.add_argument("--first", type=int, default=96)
    ap.add_argument("--ids", default="")
    a = ap.parse_args()
    from evo.config import EvaluatorConfig
    from evo.core.shapes import Shape
    from evo.evaluation.evaluator import Evaluator
    from evo.families import FAMILIES
    rows = sweep_rows(a.sweep, a.first, [int(i) for i in a.ids.split(",") if i])
    bench = bench_times(a.bench)
    cfg = EvaluatorConfig(backend="simulated" if SIMULATED else "gpu", replays=3, target_replay_ms=10, draws=2,
                          libraries=["torch"], cache_dir="/tmp/evo-cache")
    ev = Evaluator(cfg).start()
    try:
        gpu = ev.devices[0].key
        canary = Shape(*CANARY)

        def canary_us() -> str:
            ev._baselines.clear()  # noqa: SLF001 -- a probe: time torch again each time
            ev._alone.clear()  # noqa: SLF001
            list(ev.measure_libraries([canary]))
            t = ev.library_times(gpu, canary, cfg.mode).get("torch")
            return f"{t * 1e3:6.2f}" if t else "  none"

        print(f"canary torch {CANARY}: {canary_us()} us (before any kernel)", flush=True)
        print("   id  shape                 family   sweep     t1     t2   bench  (us; bench: that shape's winner, "
              "* = the same kernel)", flush=True)
        for i, (eid, M, N, K, t_ms, family, params) in enumerate(rows):
            fam = FAMILIES[family]
            cand = fam.candidate(json.loads(params))
            shape = Shape(M, N, K)
            ts = [f"{e.time_ms * 1e3:6.2f}" if e.ok else e.status.value
                  for e in ev.evaluate([(cand, shape), (cand, shape)], measure_libraries=False, race=False)]
            b = bench.get((M, N, K))
            bs = f"{b[1] * 1e3:6.2f}{'*' if b[0] == cand.id else ' '}" if b else "     - "
            print(f"{eid:5d}  {str(shape):20s}  {family:7s} {t_ms * 1e3:6.2f} {ts[0]:>6} {ts[1]:>6}  {bs}", flush=True)
            if i % 8 == 7:
                print(f"canary torch {CANARY}: {canary_us()} us", flush=True)
    finally:
        ev.close()


if __name__ == "__main__":
    main()

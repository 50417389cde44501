"""Session 30: do a worker's kernel timings drift away from its library timings as it works?

A sweep times the libraries first, in a worker that has evaluated no kernel yet (session 22's fix for the
libraries' slow mode), and then its kernels, in the same worker, after hundreds of other jobs. `evo bench
kernels_of=` reads grid125's small-shape winners 4.3% faster (H100, session 29) than the sweep that found
them. If a worker drifts into a slow mode for kernels too, a sweep's ratios are biased against the kernels
on small shapes, by as much as that.

One worker (evo's Evaluator, a sweep's settings: 3 replays of 10 ms, 2 draws; GPU 0), four rounds on the same
six small shapes: each round times the libraries again (alone, as a sweep does first) and the shape's
sweep winner (two draws), its source as the sweep stored it. Between rounds, LOAD of the sweep's other
kernels are evaluated, as a sweep would. Round 3 repeats round 2's timings with BUSY processes spinning
on the CPU (a sweep compiles beside its worker). Printed per shape and round: torch, cuBLASLt (autotuned),
the kernel (us), kernel / best library. Read it as:
  - the kernel's time rising from round 0 to round 2 while the libraries stay: a sweep's kernels are
    timed in a slower mode than its libraries (the ratio drops with the worker's age);
  - both rising: the worker's mode, which libraries-first hides from the libraries only;
  - neither: the gap is elsewhere (the draw, the kernels' order, the compile load: round 3).

    python mode_probe6.py SWEEP.sqlite [--load 60] [--busy 16]     (on the GPU machine, from /tmp)
PROBE_SIMULATED=1: the plumbing on the CPU test double (modelled times, not measurements).
"""
import argparse
import json
import os
import sqlite3
import subprocess
import sys

# three of grid125's worst small shapes (2.3-4.3 MB of operands: ~250-450 rotating sets), and three of the
# 72-1032 KiB shapes that session 23 found read 0.22-0.31 us faster in a bench than in their sweep (1016-8192 sets)
SHAPES = [(4096, 256, 64), (64, 16384, 64), (256, 4096, 256), (256, 256, 256), (64, 256, 1024), (64, 64, 4096)]
SIMULATED = bool(os.environ.get("PROBE_SIMULATED"))


def winner(db: sqlite3.Connection, M: int, N: int, K: int) -> tuple | None:
    """The sweep's fastest ok evaluation on M x N x K: (source, family, params), the stored source (as `evo
    bench kernels_of=` times it), not one rebuilt from the genome by today's family code. None: no such."""
    return db.execute("select k.source, k.family, k.params_json from evaluations e join kernels k on k.id = e.kernel_id "
                      "where e.status = 'ok' and e.M = ? and e.N = ? and e.K = ? order by e.time_ms limit 1",
                      (M, N, K)).fetchone()


def winners(db: sqlite3.Connection) -> dict:
    """Each probe shape's winner (see `winner`)."""
    return {s: row for s in SHAPES if (row := winner(db, *s))}


def load_rows(db: sqlite3.Connection, n: int, offset: int) -> list:
    """`n` of the sweep's other evaluations (its own order, from `offset`): the work between rounds."""
    marks = ",".join("?" * len(SHAPES))
    keys = [f"{M}x{N}x{K}" for M, N, K in SHAPES]
    return db.execute("select e.M, e.N, e.K, k.family, k.params_json from evaluations e join kernels k "
                      f"on k.id = e.kernel_id where e.status = 'ok' and (e.M || 'x' || e.N || 'x' || e.K) "
                      f"not in ({marks}) order by e.id limit ? offset ?", (*keys, n, offset)).fetchall()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("sweep")
    ap.add_argument("--load", type=int, default=60)
    ap.add_argument("--busy", type=int, default=16)
    a = ap.parse_args()
    from evo.config import EvaluatorConfig
    from evo.core.kernel import Candidate
    from evo.core.shapes import Shape
    from evo.evaluation.evaluator import Evaluator
    from evo.families import FAMILIES

    db = sqlite3.connect(a.sweep)
    wins = winners(db)
    libs = ["torch", "cublaslt_autotuned"]
    cfg = EvaluatorConfig(backend="simulated" if SIMULATED else "gpu", replays=3, target_replay_ms=10, draws=2,
                          libraries=libs, cache_dir="/tmp/evo-cache", gpus=[0])  # one GPU: its libraries, its kernels
    if SIMULATED:
        print("SIMULATED (the CPU test double's modelled times, not measurements)")
    ev = Evaluator(cfg).start()
    table: dict = {}

    def us(t):
        return f"{t * 1e3:6.2f}" if t else "  none"

    def row(r: int, s) -> str:
        lt, k = table[(r, s)]
        best = min((t for t in lt if t), default=None)
        ratio = f"{k / best:.3f}" if k and best else "-"
        return f"{str(s):16s} {r:5d}  {us(lt[0])}  {us(lt[1])}  {us(k)}   {ratio}"

    print("shape            round   torch  cuBLASLt  kernel   kernel/best-lib  (us)", flush=True)
    try:
        gpu = ev.devices[0].key
        shapes = [Shape(*s) for s in SHAPES if s in wins]

        def one_round(r: int) -> None:
            ev._baselines.clear()  # noqa: SLF001 -- a probe: the libraries timed again, alone, each round
            ev._alone.clear()  # noqa: SLF001
            for s, results in ev.measure_libraries(shapes):
                for lib in results:
                    if lib.status != "ok":
                        print(f"  {s} {lib.library}: {lib.status} {lib.error[:200]}", flush=True)
            pairs = []
            for s in shapes:
                source, family, params = wins[(s.M, s.N, s.K)]
                cand = Candidate(source, family, params)
                pairs += [(cand, s), (cand, s)]
            done = list(ev.evaluate(pairs, measure_libraries=False, race=False))  # in the order they end
            for s in shapes:
                ks = [e.time_ms for e in done if e.shape == s and e.ok]
                lt = ev.library_times(gpu, s, cfg.mode)
                table[(r, s)] = ([lt.get(lib) for lib in libs], min(ks) if ks else None)
                print(row(r, s), flush=True)  # as it comes: a command cut short keeps the rounds it finished
            print(f"  (round {r}: worker restarts so far {ev.pool.restarts}: a restart resets the worker's age)", flush=True)

        def load(offset: int) -> None:
            pairs = []
            for M, N, K, family, params in load_rows(db, a.load, offset):
                pairs.append((FAMILIES[family].candidate(json.loads(params)), Shape(M, N, K)))
            bad = sum(not e.ok for e in ev.evaluate(pairs, measure_libraries=False, race=False))
            print(f"load: {len(pairs)} of the sweep's other evaluations ({bad} not ok)", flush=True)

        one_round(0)
        load(0)
        one_round(1)
        load(a.load)
        one_round(2)
        burn = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(a.busy)]
        try:
            one_round(3)
        finally:
            for p in burn:
                p.kill()
                p.wait()
    finally:
        ev.close()

    print(f"rounds: 0 fresh worker; 1 after {a.load} other evaluations; 2 after {2 * a.load}; "
          f"3 as 2 with {a.busy} busy CPU processes")
    print("shape            round   torch  cuBLASLt  kernel   kernel/best-lib")
    for s in sorted({s for _, s in table}, key=lambda s: (s.M, s.N, s.K)):
        for r in range(4):
            if (r, s) in table:
                print(row(r, s))


if __name__ == "__main__":
    main()

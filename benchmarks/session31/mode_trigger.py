"""Session 31: which job puts a worker into the slow launch mode?

Session 31's first probe (`run1/probe6.txt`, H100) found that after 30 of a sweep's other evaluations a
worker reads the libraries AND the kernels about 0.33 us a call slower on small shapes (a step, not a drift:
60 evaluations read as 30). A sweep times its libraries first, in a fresh worker, and its kernels after: the
step then lands on the kernels alone. This probe finds the step: one worker (a sweep's settings, GPU 0) times
torch and cuBLASLt on two small shapes, then evaluates the sweep's other kernels one at a time, timing the
libraries again after each; printed per step: the job just run (shape, family, the genes that matter) and
the libraries' times. The first step whose times jump names the job that set the mode.

    python mode_trigger.py SWEEP.sqlite [--steps 40] [--pdl 1]      (on the GPU machine, from /tmp)

--pdl 1 launches the jobs' kernels as programmatic dependent launches, as sweeps did from session 18 to 30
(a suspect: the slow mode was first seen in session 22's sweeps); the default, plainly.
"""
import argparse
import json
import os
import random
import sqlite3

SHAPES = [(256, 256, 256), (4096, 256, 64)]
# genes printed where they are not at their usual value (the persistent, unsplit, unclustered plain tile)
USUAL = {"SPLIT_K": 1, "SPLIT_CLUSTER": 0, "CLUSTER_M": 1, "PERSISTENT": 1, "SWAP_AB": 0, "STREAM_K": 0,
         "TAIL_SPLIT": 1, "FIXUP": 0, "TMA_STORE": 0, "PINGPONG": 0, "CTAS_PER_SM": 1}


def wanted(family: str, params: str, only: str) -> bool:
    """--only: any job; fixup (hopper, FIXUP=1: ordered partials over L2); atomics (hopper split-K over L2 by
    fp32 atomics: SPLIT_K > 1, FIXUP=0, no cluster); plain (hopper, no split of any kind)."""
    p = json.loads(params)
    if only == "any":
        return True
    if family != "hopper":
        return False
    over_l2 = p.get("SPLIT_K", 1) > 1 and not p.get("SPLIT_CLUSTER")
    split = p.get("SPLIT_K", 1) > 1 or p.get("TAIL_SPLIT", 1) > 1 or p.get("STREAM_K", 0)
    return {"fixup": p.get("FIXUP", 0) == 1, "atomics": over_l2 and not p.get("FIXUP"),
            "plain": not split}[only]


def load_rows(db: sqlite3.Connection, n: int, only: str = "any") -> list:
    """`n` of the sweep's other ok evaluations, drawn at random (seed 0) from every family and shape, not the
    sweep's first ones (ampere picks on the smallest shapes): a trigger may be a gene only some kernels have."""
    rows = db.execute("select e.M, e.N, e.K, k.family, k.params_json from evaluations e join kernels k "
                      "on k.id = e.kernel_id where e.status = 'ok' order by e.id").fetchall()
    rows = [r for r in rows if tuple(r[:3]) not in SHAPES and wanted(r[3], r[4], only)]
    return random.Random(0).sample(rows, min(n, len(rows)))


def library_times_now(ev, cfg, libs: list[str]) -> str:
    """The libraries timed again, alone, on SHAPES in GPU 0's worker: us a call, per shape."""
    from evo.core.shapes import Shape
    shapes = [Shape(*s) for s in SHAPES]
    ev._baselines.clear()  # noqa: SLF001 -- a probe: the libraries timed again, alone, every step
    ev._alone.clear()  # noqa: SLF001
    list(ev.measure_libraries(shapes))
    out = []
    for s in shapes:
        lt = ev.library_times(ev.devices[0].key, s, cfg.mode)
        out.append(" ".join(f"{lt[lib] * 1e3:5.2f}" if lt.get(lib) else " none" for lib in libs))
    return "  |  ".join(out)


def probe_steps(jobs, *, pdl: bool, heading: str, width: int) -> int:
    """One fresh worker (a sweep's settings, GPU 0) times the libraries twice, then evaluates `jobs` (label,
    candidate, shape) one at a time, timing the libraries again after each; one line a step. Returns the
    worker's restarts. PROBE_SIMULATED=1: the plumbing on the CPU test double (modelled times)."""
    from evo.config import EvaluatorConfig
    from evo.evaluation.evaluator import Evaluator

    libs = ["torch", "cublaslt_autotuned"]
    simulated = bool(os.environ.get("PROBE_SIMULATED"))
    if simulated:
        print("SIMULATED (the CPU test double's modelled times, not measurements)")
    cfg = EvaluatorConfig(backend="simulated" if simulated else "gpu", replays=3, target_replay_ms=10, draws=2, libraries=libs,
                          cache_dir="/tmp/evo-cache", gpus=[0], pdl=pdl)
    ev = Evaluator(cfg).start()
    try:
        print(f"step  {heading:{width}s}  " + "  |  ".join(f"{M}x{N}x{K}: torch cuBLASLt" for M, N, K in SHAPES), flush=True)
        print(f"{0:4d}  {'(fresh worker)':{width}s}  {library_times_now(ev, cfg, libs)}", flush=True)
        print(f"{0:4d}  {'(fresh worker, again)':{width}s}  {library_times_now(ev, cfg, libs)}", flush=True)
        for step, (label, kernel, shape) in enumerate(jobs, 1):
            results = list(ev.evaluate([(kernel, shape)], measure_libraries=False, race=False))
            job = f"{label} [{results[0].status if results else 'none'}]"
            print(f"{step:4d}  {job[:width]:{width}s}  {library_times_now(ev, cfg, libs)}", flush=True)
        return ev.pool.restarts
    finally:
        ev.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("sweep")
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--only", default="any", choices=["any", "fixup", "atomics", "plain"])
    ap.add_argument("--pdl", type=int, default=0, help="evaluator.pdl for the jobs (1: as sweeps ran from session 18 to 30)")
    a = ap.parse_args()
    from evo.core.shapes import Shape
    from evo.families import FAMILIES

    db = sqlite3.connect(a.sweep)

    def jobs():
        for M, N, K, family, params in load_rows(db, a.steps, a.only):
            p = json.loads(params)
            genes = " ".join([f"{p.get('BM')}x{p.get('BN')}"] + [f"{g}={p[g]}" for g, v in USUAL.items() if p.get(g, v) != v])
            yield f"{M}x{N}x{K} {family} {genes}", FAMILIES[family].candidate(p), Shape(M, N, K)

    restarts = probe_steps(jobs(), pdl=bool(a.pdl), heading="job (shape, family, genes)", width=78)
    print(f"worker restarts: {restarts}; jobs launched with PDL: {bool(a.pdl)}; jobs: {a.only}")


if __name__ == "__main__":
    main()

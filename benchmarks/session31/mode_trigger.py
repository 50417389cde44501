"""Session 31: which job puts a worker into the slow launch mode?

Session 31's first probe (`run1/probe6.txt`, H100) found that after 30 of a sweep's other evaluations a
worker reads the libraries AND the kernels about 0.33 us a call slower on small shapes (a step, not a drift:
60 evaluations read as 30). A sweep times its libraries first, in a fresh worker, and its kernels after: the
step then lands on the kernels alone. This probe finds the step: one worker (a sweep's settings, GPU 0) times
torch and cuBLASLt on two small shapes, then evaluates the sweep's other kernels one at a time, timing the
libraries again after each; printed per step: the job just run (shape, family, the genes that matter) and
the libraries' times. The first step whose times jump names the job that set the mode.

    python mode_trigger.py SWEEP.sqlite [--steps 40]       (on the GPU machine, from /tmp)
"""
import argparse
import json
import os
import sqlite3
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "session30"))
from mode_probe6 import load_rows  # noqa: E402

SHAPES = [(256, 256, 256), (4096, 256, 64)]
GENES = ("BM", "BN", "SPLIT_K", "SPLIT_CLUSTER", "CLUSTER_M", "PERSISTENT", "SWAP_AB", "STREAM_K", "TAIL_SPLIT",
         "FIXUP", "TMA_STORE", "PINGPONG", "CTAS_PER_SM")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("sweep")
    ap.add_argument("--steps", type=int, default=40)
    a = ap.parse_args()
    from evo.config import EvaluatorConfig
    from evo.core.shapes import Shape
    from evo.evaluation.evaluator import Evaluator
    from evo.families import FAMILIES

    db = sqlite3.connect(a.sweep)
    libs = ["torch", "cublaslt_autotuned"]
    simulated = bool(os.environ.get("PROBE_SIMULATED"))  # the plumbing on the CPU test double: modelled times
    if simulated:
        print("SIMULATED (the CPU test double's modelled times, not measurements)")
    cfg = EvaluatorConfig(backend="simulated" if simulated else "gpu", replays=3, target_replay_ms=10, draws=2, libraries=libs,
                          cache_dir="/tmp/evo-cache", gpus=[0])
    ev = Evaluator(cfg).start()
    shapes = [Shape(*s) for s in SHAPES]
    try:
        gpu = ev.devices[0].key

        def libs_now() -> str:
            ev._baselines.clear()  # noqa: SLF001 -- a probe: the libraries timed again, alone, every step
            ev._alone.clear()  # noqa: SLF001
            list(ev.measure_libraries(shapes))
            out = []
            for s in shapes:
                lt = ev.library_times(gpu, s, cfg.mode)
                out.append(" ".join(f"{lt[lib] * 1e3:5.2f}" if lt.get(lib) else " none" for lib in libs))
            return "  |  ".join(out)

        print("step  job (shape, family, genes)                                        "
              + "  |  ".join(f"{M}x{N}x{K}: torch cuBLASLt" for M, N, K in SHAPES), flush=True)
        print(f"{0:4d}  (fresh worker)                                                    {libs_now()}", flush=True)
        print(f"{0:4d}  (fresh worker, again)                                             {libs_now()}", flush=True)
        for step, (M, N, K, family, params) in enumerate(load_rows(db, a.steps, 0), 1):
            p = json.loads(params)
            genes = " ".join(f"{g}={p[g]}" for g in GENES if g in p and p[g] not in (0, 1) or g in ("BM", "BN"))
            results = list(ev.evaluate([(FAMILIES[family].candidate(p), Shape(M, N, K))],
                                       measure_libraries=False, race=False))
            status = results[0].status if results else "none"
            job = f"{M}x{N}x{K} {family} {genes} [{status}]"
            print(f"{step:4d}  {job[:64]:64s}  {libs_now()}", flush=True)
        print(f"worker restarts: {ev.pool.restarts}")
    finally:
        ev.close()


if __name__ == "__main__":
    main()

"""Session 22, second probe: is the slow timing mode the worker's, or the evaluation path's?

mode_probe.py read torch fast in every plain process (spawned or not) and slow in `evo bench`'s worker
on 256x256x4096, 64x1024x256 and 64x256x1024. Here, six rounds over those shapes (plus 64x64x256):
  H: in this process, GpuHarness.evaluate with the bench's own request (the worker's code path), the
     peaks measured first as the evaluator has its worker do;
  W: the same requests through evo's Evaluator (pool, spawned worker), as `evo bench` sends them.

    python benchmarks/session22/mode_probe2.py     (on the GPU machine, evo installed; from /tmp)
"""
import multiprocessing as mp

SHAPES = [(256, 256, 4096), (64, 1024, 256), (64, 256, 1024), (64, 64, 256)]
ROUNDS = 6


def request(M: int, N: int, K: int) -> dict:
    return {"op": "evaluate", "shape": [M, N, K], "cubin": None, "source": None, "launch": None, "draws": 1,
            "modes": ["rotating"], "replays": 3, "target_replay_ms": 10, "server_gap_ms": [0.05, 2.0],
            "libraries": ["torch"]}


def in_process() -> None:
    from evo.core.records import LibraryResult
    from evo.evaluation.gpu_harness import GpuHarness
    h = GpuHarness()
    h.peaks()
    for r in range(ROUNDS):
        row = []
        for M, N, K in SHAPES:
            out = h.evaluate(request(M, N, K), lambda s: None)
            t = LibraryResult.from_json(out["libraries"][0]).timing
            row.append(f"{M}x{N}x{K} {t.median_ms * 1e3:6.2f}")
        print(f"[H in process] round {r}: " + "  ".join(row), flush=True)


def through_worker() -> None:
    from evo.config import EvaluatorConfig
    from evo.core.records import Shape
    from evo.evaluation.evaluator import Evaluator
    ev = Evaluator(EvaluatorConfig(libraries=["torch"], replays=3, target_replay_ms=10)).start()
    try:
        for r in range(ROUNDS):
            row = []
            for shape, libs in ev.measure_libraries([Shape(*s) for s in SHAPES]):
                row.append(f"{shape.M}x{shape.N}x{shape.K} {libs[0].timing.median_ms * 1e3:6.2f}")
            print(f"[W worker] round {r}: " + "  ".join(row), flush=True)
    finally:
        ev.close()


if __name__ == "__main__":
    ctx = mp.get_context("spawn")
    p = ctx.Process(target=in_process)  # its own process, so that the worker below is the only context after
    p.start()
    p.join()
    through_worker()

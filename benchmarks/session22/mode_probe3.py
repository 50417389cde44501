"""Session 22, third probe: which part of the worker puts its launches in the slow timing mode?

mode_probe2.py: GpuHarness.evaluate with the bench's requests reads torch fast for six rounds in a plain
process, and slow through evo's worker from the fourth job on (256x256x4096: 7.1 against 8.0 us). Here,
spawned processes run the same requests (4 shapes, 3 rounds, the peaks first) with one part of
worker_main each, then all of them, then the real worker through a WorkerPool:
  none      GpuHarness.evaluate only (as mode_probe2's fast case)
  log       the evo logger at DEBUG through a PipeLogHandler to the parent
  healthy   harness.healthy() before each evaluation
  progress  progress messages through the pipe
  process   die_with_parent, SIGINT ignored, CUDA_VISIBLE_DEVICES=0, CUDA_MODULE_LOADING=LAZY
  all       every one of the above
  healthy_now  the harness's health check as changed in session 22 (on its stream, its own element)
  sync_only    torch.cuda.synchronize() alone before each evaluation
  pool      worker_main itself, driven by WorkerPool.run

    python benchmarks/session22/mode_probe3.py     (on the GPU machine, evo installed; from /tmp)
"""
import multiprocessing as mp
import os
import signal
import sys

SHAPES = [(256, 256, 4096), (64, 1024, 256), (64, 256, 1024), (64, 64, 256)]
ROUNDS = 3
PARTS = ["log", "healthy", "progress", "process"]


def request(M: int, N: int, K: int) -> dict:
    return {"op": "evaluate", "shape": [M, N, K], "cubin": None, "source": None, "launch": None, "draws": 1,
            "modes": ["rotating"], "replays": 3, "target_replay_ms": 10, "server_gap_ms": [0.05, 2.0],
            "libraries": ["torch"]}


def variant(conn, parts: list[str]) -> None:
    import logging

    from evo.evaluation import worker
    if "process" in parts:
        worker.die_with_parent()
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        os.environ["CUDA_VISIBLE_DEVICES"] = "0"
        os.environ.setdefault("CUDA_MODULE_LOADING", "LAZY")
    if "log" in parts:
        root = logging.getLogger("evo")
        root.addHandler(worker.PipeLogHandler(conn))
        root.setLevel(logging.DEBUG)
        root.propagate = False
    from evo.core.records import LibraryResult
    if os.environ.get("PROBE_SIMULATED"):  # a CPU dry run of the plumbing (modelled times)
        from evo.evaluation.simulated import SimulatedHarness
        h = SimulatedHarness("sim0")
    else:
        from evo.evaluation.gpu_harness import GpuHarness
        h = GpuHarness()
    logging.getLogger("evo.probe").info("ready")
    h.peaks()
    lines = []
    for r in range(ROUNDS):
        row = []
        for i, (M, N, K) in enumerate(SHAPES):
            if "healthy" in parts:  # the check as it was before session 22
                import torch
                torch.cuda.synchronize()
                float(torch.ones(1, device="cuda").add_(1).item())
            if "healthy_now" in parts:  # the harness's check as it is now
                h.healthy()
            if "sync_only" in parts:
                import torch
                torch.cuda.synchronize()
            logging.getLogger("evo.probe").debug(f"request {r}.{i}")
            progress = (lambda s: conn.send({"type": "progress", "stage": s})) if "progress" in parts else (lambda s: None)
            out = h.evaluate(request(M, N, K), progress)
            t = LibraryResult.from_json(out["libraries"][0]).timing
            row.append(f"{M}x{N}x{K} {t.median_ms * 1e3:6.2f}")
        lines.append(f"round {r}: " + "  ".join(row))
    conn.send({"type": "done", "lines": lines})


def run_variant(ctx, name: str, parts: list[str]) -> None:
    parent, child = ctx.Pipe()
    p = ctx.Process(target=variant, args=(child, parts))
    p.start()
    child.close()
    while True:
        try:
            msg = parent.recv()
        except EOFError:
            print(f"[{name}] the process ended without its result (exit code {p.exitcode})", flush=True)
            break
        if msg.get("type") == "done":
            for line in msg["lines"]:
                print(f"[{name}] {line}", flush=True)
            break
    p.join()


def run_pool() -> None:
    from evo.core.records import LibraryResult
    from evo.evaluation.pool import Job, WorkerPool
    sim = bool(os.environ.get("PROBE_SIMULATED"))
    with WorkerPool(devices=["sim0" if sim else "0"], backend="simulated" if sim else "gpu") as pool:
        list(pool.run([Job({"op": "peaks"})]))
        for r in range(ROUNDS):
            row = []
            for job, reply in pool.run([Job(request(*s), tag=s) for s in SHAPES]):
                t = LibraryResult.from_json(reply["libraries"][0]).timing
                row.append(f"{'x'.join(map(str, job.tag))} {t.median_ms * 1e3:6.2f}")
            print(f"[pool] round {r}: " + "  ".join(row), flush=True)


if __name__ == "__main__":
    ctx = mp.get_context("spawn")
    only = sys.argv[1:]
    for name, parts in [("none", []), *[(p, [p]) for p in PARTS], ("all", PARTS),
                        ("healthy_now", ["healthy_now"]), ("sync_only", ["sync_only"])]:
        if not only or name in only:
            run_variant(ctx, name, parts)
    if not only or "pool" in only:
        run_pool()

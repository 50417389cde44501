"""Session 22: what puts a process's launches in the slow timing mode?

Session 21 found timings in two modes a constant per launch apart (about 0.35 us a kernel). Session 22's
first run (library_context.py) read every library fast in a plain process, while `evo bench` of the same
shapes, the same day, read them slow (256x256x4096: 7.0 against 8.0 us; 64x256x16384: 7.8 against 8.8).
The library's two kernels per call and one extra gap each fits a gap between kernels.

This script times torch on six shapes (as the worker does, sealed, and as a plain graph) in
  B: a child started by multiprocessing's spawn, the main process without a CUDA context;
  C: the same child with the worker's environment (CUDA_VISIBLE_DEVICES=0, CUDA_MODULE_LOADING=LAZY);
  E: `evo bench` of the same shapes, torch alone (its worker process);
  A: the main process itself;
  D: the main process while another process holds an idle CUDA context;
  G: the main process again, after the other has exited.

    python benchmarks/session22/mode_probe.py     (on the GPU machine, evo installed; from /tmp)
"""
import multiprocessing as mp
import os
import subprocess
import sys
import time

SHAPES = [(64, 64, 256), (4096, 1024, 256), (64, 256, 16384), (256, 256, 4096), (64, 1024, 256), (64, 256, 1024)]
REQ = {"modes": ["rotating"], "replays": 3, "target_replay_ms": 10}


def measure_here(label: str, env: dict | None = None) -> None:
    os.environ.update(env or {})
    import torch

    from evo.evaluation import gpu_baselines
    from evo.evaluation.gpu_buffers import TimingSets
    from evo.evaluation.gpu_harness import GpuHarness
    from evo.evaluation.gpu_timing import time_graph
    h = GpuHarness()
    for M, N, K in SHAPES:
        (r,) = gpu_baselines.measure(h, M, N, K, ["torch"], ["rotating"], REQ, lambda s: None)
        sets = TimingSets(h, M, N, K, ["rotating"])
        call = lambda i, s=sets: torch.matmul(s.A[i], s.B[i], out=s.C[i])  # noqa: E731
        g = time_graph(call, mode="rotating", launches=4 * sets.n, sets=sets.n, replays=5, stream=h.stream,
                       clock=h.clock).median_ms * 1e3
        print(f"[{label}] {M}x{N}x{K} torch sealed {r.timing.median_ms * 1e3:6.2f} us  graph {g:6.2f} us",
              flush=True)
        del sets
        torch.cuda.empty_cache()


def bench() -> None:
    shapes = ",".join(f"{m}x{n}x{k}" for m, n, k in SHAPES)
    db = "/tmp/mode_probe_bench.sqlite"
    if os.path.exists(db):
        os.remove(db)
    out = subprocess.run([sys.executable, "-m", "evo", "bench", "evaluator=gpu", "shapes=inline",
                          f"shapes.list=[{shapes}]", "evaluator.libraries=[torch]", "evaluator.replays=3",
                          "evaluator.target_replay_ms=10", "search.progress=false", f"archive.path={db}"],
                         capture_output=True, text=True, timeout=200, env={**os.environ, "PYTHONSAFEPATH": "1"})
    print(out.stdout[-1500:], out.stderr[-1500:], flush=True)
    import sqlite3
    for m, n, k, t in sqlite3.connect(db).execute("select M, N, K, time_ms from baselines where library='torch'"):
        print(f"[E evo bench] {m}x{n}x{k} torch sealed {t * 1e3:6.2f} us", flush=True)


def main() -> None:
    ctx = mp.get_context("spawn")
    for label, env in (("B spawned child", None),
                       ("C spawned child, worker env", {"CUDA_VISIBLE_DEVICES": "0", "CUDA_MODULE_LOADING": "LAZY"})):
        p = ctx.Process(target=measure_here, args=(label, env))
        p.start()
        p.join()
    bench()
    measure_here("A main process")
    idle = subprocess.Popen([sys.executable, "-c", "import torch, time; torch.zeros(1, device='cuda'); "
                             "print('idle context up', flush=True); time.sleep(600)"])
    time.sleep(8)
    measure_here("D main, another process holds an idle context")
    idle.kill()
    idle.wait()
    measure_here("G main again, the other process gone")


if __name__ == "__main__":
    main()

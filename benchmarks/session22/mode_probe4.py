"""Session 22, for the next GPU session: what puts a sweep's worker in the slow timing mode?

After the health-check fix (mode_probe3.py), `evo bench` reads the libraries alike in every process,
but grid125's sweep of the same session read them 5% slower (geomean; up to 13% on small shapes;
sweep_vs_bench.txt). A sweep's request evaluates a kernel, then the libraries, in one job. Here one
process per variant drives evo's own Evaluator (compiling, preparing and racing as a sweep does) through
an in-process pool whose harness runs a hook before each job, four shapes, three rounds; each round
times the libraries again. Printed per round: the libraries' best time per shape and the kernel's.
  libs            library-only jobs (as `evo bench`): the fast control
  kernel          a hopper kernel, then the libraries, in each job (as a sweep)
  kernel_nopdl    the same with evaluator.pdl=false
  alloc_default   library-only jobs; before each, 2 MiB allocated and freed on the default stream
  kernel_default  library-only jobs; before each, one tiny kernel on the default stream (no allocation)
  module          library-only jobs; before each, the kernel's module loaded and unloaded
  guarded_default library-only jobs; before each, the correctness buffers allocated (on the default
                  stream, as _evaluate_kernel allocated them before session 22), armed, read and freed
  guarded_stream  the same, allocated on the harness's timing stream
  kernel_guarded_default  as `kernel`, with the harness's correctness buffers allocated on the default
                  stream, as before session 22's last change (the harness now allocates them on its timing
                  stream: if `kernel` reads fast and this slow, that change was the fix)
  pool            the real worker (WorkerPool), kernel then libraries, as `kernel`
  pool_first      the real worker as sweeps run it since session 22: each round the libraries alone
                  (Evaluator.time_libraries_first), then the kernels, whose jobs carry none; do the
                  libraries of rounds 1 and 2, after kernels ran, read slow again?

    python benchmarks/session22/mode_probe4.py [VARIANT ...]   (on the GPU machine, evo installed; from /tmp)
PROBE_SIMULATED=1 runs the plumbing on the CPU test double (modelled times; no hooks run).
"""
import multiprocessing as mp
import os
import sys
from dataclasses import asdict

SHAPES = [(256, 256, 4096), (64, 1024, 256), (64, 256, 1024), (64, 64, 256)]
ROUNDS = 3
VARIANTS = ["libs", "kernel", "kernel_nopdl", "alloc_default", "kernel_default", "module", "guarded_default",
            "guarded_stream", "kernel_guarded_default", "pool", "pool_first"]
SIMULATED = bool(os.environ.get("PROBE_SIMULATED"))


class InProcessPool:
    """evo's Pool interface over one harness in this process, with a hook before each job."""

    restarts = 0

    def __init__(self, harness, before):
        self.h, self.before = harness, before
        self.seen: list[dict] = []  # the kernel requests, as sent

    def start(self):
        return self

    @property
    def devices(self):
        return ["0"]

    @property
    def infos(self):
        return [self.h.info]

    def call_each(self, request, devices=None):
        return {"0": {"type": "result", "gpu": self.h.info.key, "peaks": asdict(self.h.peaks())}}

    def run(self, jobs):
        for job in jobs:
            if job is None:
                continue
            msg = dict(job.request)
            if job.prepare:
                msg.update(job.prepare(self.h.info))
            if msg.get("cubin") is not None:
                self.seen.append(msg)
            self.before(self.h, msg)
            yield job, {"type": "result", "gpu": self.h.info.key, **self.h.evaluate(msg, lambda s: None)}

    def close(self):
        pass


def hooks(variant: str, kernel_msg: dict | None):
    """The hook run before each job of a library-only variant."""
    if variant == "alloc_default":
        def before(h, msg):
            import torch
            x = torch.empty(2 << 20, dtype=torch.uint8, device="cuda")
            del x
        return before
    if variant == "kernel_default":
        import torch
        one = torch.zeros(1, device="cuda")  # allocated once: the hook itself allocates nothing
        return lambda h, msg: one.add_(1)
    if variant == "module":
        def before(h, msg):
            from evo.evaluation.gpu_launch import LoadedKernel
            LoadedKernel(kernel_msg["cubin"], kernel_msg["launch"]).unload()
        return before
    if variant in ("guarded_default", "guarded_stream"):
        def before(h, msg):
            import torch

            from evo.evaluation.gpu_buffers import Guarded
            M, N, K = msg["shape"]
            if variant == "guarded_stream":
                with torch.cuda.stream(h.stream):
                    bufs = [Guarded(M, K), Guarded(K, N), Guarded(M, N)]
            else:
                bufs = [Guarded(M, K), Guarded(K, N), Guarded(M, N)]
            with torch.cuda.stream(h.stream):  # as check_once arms and reads them
                for g in bufs:
                    g.arm()
                assert all(g.intact() for g in bufs)
            del bufs
        return before
    return lambda h, msg: None


def on_default_stream() -> None:
    """The harness's correctness buffers allocated on the default stream, as before session 22's change."""
    import torch

    import evo.evaluation.gpu_harness as gh
    plain = gh.Guarded

    class GuardedOnDefaultStream(plain):
        def __init__(self, rows: int, cols: int):
            with torch.cuda.stream(torch.cuda.default_stream()):
                super().__init__(rows, cols)

    gh.Guarded = GuardedOnDefaultStream


def run_variant(variant: str) -> None:
    from evo.config import EvaluatorConfig
    from evo.core.shapes import Shape
    from evo.evaluation.evaluator import Evaluator
    from evo.families import FAMILIES
    shapes = [Shape(*s) for s in SHAPES]
    cand = FAMILIES["hopper"].candidate(dict(FAMILIES["hopper"].default))
    cfg = EvaluatorConfig(backend="simulated" if SIMULATED else "gpu", replays=3, target_replay_ms=10,
                          libraries=["torch", "cublaslt_heuristic"], pdl=variant != "kernel_nopdl",
                          cache_dir="/tmp/evo-cache")
    pool = None
    if not variant.startswith("pool"):
        if SIMULATED:
            from evo.evaluation.simulated import SimulatedHarness
            pool = InProcessPool(SimulatedHarness("sim0"), lambda h, msg: None)
        else:
            from evo.evaluation.gpu_harness import GpuHarness
            pool = InProcessPool(GpuHarness(), lambda h, msg: None)
            if variant == "kernel_guarded_default":
                on_default_stream()
    ev = Evaluator(cfg, pool=pool).start()
    try:
        with_kernel = variant in ("kernel", "kernel_nopdl", "kernel_guarded_default", "pool", "pool_first")
        if pool is not None and not with_kernel and not SIMULATED:  # the kernel's module for `module`: compiled
            list(ev.evaluate([(cand, shapes[0])], measure_libraries=False, race=False))
            pool.before = hooks(variant, pool.seen[0] if pool.seen else None)
        gpu = ev.devices[0].key
        for r in range(ROUNDS):
            ev._baselines.clear()  # noqa: SLF001 -- a probe: time the libraries again every round
            ev._alone.clear()  # noqa: SLF001 -- (pool_first: alone again, not beside the kernels)
            kernel_us = {}
            if variant == "pool_first":
                ev.time_libraries_first(shapes)
            if with_kernel:
                for e in ev.evaluate([(cand, s) for s in shapes], race=False):
                    kernel_us[e.shape] = f"{e.time_ms * 1e3:6.2f}" if e.ok else e.status.value
            else:
                list(ev.measure_libraries(shapes))
            row = []
            for s in shapes:
                libs = ev.library_times(gpu, s, cfg.mode)
                best = f"{min(libs.values()) * 1e3:6.2f}" if libs else "  none"
                row.append(f"{s} lib {best}" + (f" kernel {kernel_us.get(s, '-')}" if with_kernel else ""))
            print(f"[{variant}] round {r}: " + "  ".join(row), flush=True)
    finally:
        ev.close()


if __name__ == "__main__":
    ctx = mp.get_context("spawn")
    for v in sys.argv[1:] or VARIANTS:
        p = ctx.Process(target=run_variant, args=(v,))
        p.start()
        p.join()
        if p.exitcode:
            print(f"[{v}] exit code {p.exitcode}", flush=True)

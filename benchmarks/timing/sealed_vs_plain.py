"""Sealed timing (fresh inputs and poisoned outputs before every timed launch, every output
verified) against the plain rotating timing it replaced, on one GPU in one process.

    python3 benchmarks/timing/sealed_vs_plain.py

For honest kernels and torch.matmul the two should agree (the refresh and the checks happen
outside the timed region); for the timer-gaming self-test kernels the plain method reports a
speedup that the sealed one does not.
"""
from __future__ import annotations

import math

import torch

from evo.core.shapes import Shape
from evo.evaluation.compiler import Compiler
from evo.evaluation.gpu_buffers import TimingSets
from evo.evaluation.gpu_harness import GpuHarness
from evo.evaluation.gpu_launch import LoadedKernel
from evo.evaluation.gpu_timing import launches_for, time_graph, time_sealed
from evo.evaluation.selftest import kernel_source
from evo.families import FAMILIES

TARGET_MS, REPLAYS = 20.0, 5


def plain(h, sets, call):
    """The old method: one graph cycling over the sets, outputs never re-poisoned, inputs fixed."""
    est = sets.estimate_ms(call)
    launches = launches_for(est, TARGET_MS, sets.n)
    launches = math.ceil(launches / sets.n) * sets.n
    return time_graph(call, mode="rotating", launches=launches, sets=sets.n, replays=REPLAYS, stream=h.stream,
                      clock=h.clock).median_ms


def sealed(h, sets, call, verify=True):
    est = sets.estimate_ms(call)
    chunks = max(1, math.ceil(TARGET_MS / max(est * sets.n, 1e-3)))
    t, error = time_sealed(call, sets, mode="rotating", chunks=chunks, replays=REPLAYS, stream=h.stream,
                           clock=h.clock, verify=verify)
    return t.median_ms, t.clock_mhz, error


def main() -> None:
    h = GpuHarness()
    compiler = Compiler()
    hopper = FAMILIES["hopper"]
    rows = []
    cases = [(f"hopper {s}", hopper.render(hopper.suggest(s.M, s.N, s.K, h.info.num_sms)[0]), s)
             for s in (Shape(8192, 8192, 8192), Shape(4096, 4096, 4096), Shape(1024, 1024, 1024),
                       Shape(77, 4096, 4096), Shape(256, 2048, 7168), Shape(64, 64, 64))]
    cases += [(name, kernel_source(name), s) for name, s in (
        ("good.cu", Shape(128, 128, 256)), ("bad_reuse_output.cu", Shape(128, 128, 256)),
        ("bad_reuse_grid.cu", Shape(128, 128, 256)), ("good_one_block.cu", Shape(64, 64, 64)),
        ("bad_input_cache.cu", Shape(64, 64, 64)))]
    for name, source, s in cases:
        res = compiler.compile(source)
        assert res.ok and res.cubin is not None, res.log
        launch = _launch(source, s, h.info.num_sms)
        k = LoadedKernel(res.cubin, launch)
        sets = TimingSets(h, s.M, s.N, s.K, ["rotating"])
        call = lambda i, k=k, sets=sets: k.launch(sets.args(k, i), h.stream.cuda_stream)  # noqa: E731
        old = plain(h, sets, call)
        new, mhz, error = sealed(h, sets, call)
        rows.append((name, str(s), sets.n, old * 1e3, new * 1e3, new / old, mhz, error or ""))
        k.unload()
        del sets
        torch.cuda.empty_cache()
    for s in (Shape(8192, 8192, 8192), Shape(4096, 4096, 4096), Shape(1024, 1024, 1024), Shape(77, 4096, 4096),
              Shape(64, 64, 64)):
        sets = TimingSets(h, s.M, s.N, s.K, ["rotating"])
        call = lambda i, sets=sets: torch.matmul(sets.A[i], sets.B[i], out=sets.C[i])  # noqa: E731
        old = plain(h, sets, call)
        new, mhz, error = sealed(h, sets, call, verify=True)
        rows.append(("torch.matmul", str(s), sets.n, old * 1e3, new * 1e3, new / old, mhz, error or ""))
        del sets
        torch.cuda.empty_cache()
    print(f"{'kernel':22} {'shape':16} {'sets':>5} {'plain_us':>10} {'sealed_us':>10} {'sealed/plain':>12} "
          f"{'MHz':>6}  verification")
    for r in rows:
        print(f"{r[0]:22} {r[1]:16} {r[2]:>5} {r[3]:>10.2f} {r[4]:>10.2f} {r[5]:>12.3f} {r[6]:>6.0f}  {r[7][:90]}")


def _launch(source: str, s: Shape, num_sms: int) -> dict:
    from evo.core.kernel import Candidate
    return Candidate.make(source).declaration.launch_for(s, num_sms=num_sms).to_json()


if __name__ == "__main__":
    main()

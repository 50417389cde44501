"""Session 30, for the next GPU session: does a library gain, when it follows itself, an overlap that a model
would not give it?

The evaluator times every call in a CUDA graph of calls back to back on rotating buffer sets (docs/timing.md).
evo's kernels are launched as programmatic dependent launches (PDL) that wait for the previous grid before
anything else, and none signals its dependents early: in a replay the kernel after it is itself, so an early
signal would overlap the next replay of itself, a gain it would not have in a model, where the kernel before
a GEMM is another one. A library's kernel is captured as the library launches it. If it is launched with
PDL and signals early (CUTLASS-style kernels can), its back-to-back time holds an overlap evo's rule denies
its own kernels, and on the shapes of a few microseconds that could be a large part of the 0.3-0.6 us by
which cuBLASLt wins (4096x256x64: 3.60 us against 3.04).

Per shape, evo's session 28 grid125 winner (its stored source, launched as the evaluator launches it, and
plainly), torch.mm and the evaluator's two cuBLASLt baselines (through nvmath, as it calls them), each as
three graphs over the shape's rotating buffer sets: the calls back to back (as timed), each call followed
by a one-element fill (a plain kernel that signals nothing), and the fills alone. Per call:
back-to-back time, and (calls with fills - fills alone) / calls, the call's time after a foreign kernel.
Their difference is what following itself gains. evo's kernel, which signals nothing early, is the control:
its gain should be about zero.

    python overlap_probe.py GRID125_SWEEP.sqlite [--shapes 4096x256x64,...] [--replays 7]
(on the GPU machine, evo installed, from /tmp). Times in microseconds, medians of the replays. No output is
checked here: the kernels are a sweep's verified winners and only their timing is in question.
"""
import argparse
import sqlite3
import statistics
import sys
from pathlib import Path

import torch

from evo.core.kernel import Candidate
from evo.core.shapes import Shape
from evo.evaluation.compiler import Compiler
from evo.evaluation.gpu_baselines import _cublaslt_calls
from evo.evaluation.gpu_buffers import TimingSets
from evo.evaluation.gpu_harness import GpuHarness
from evo.evaluation.gpu_launch import LoadedKernel, driver_takes_pdl

# beside this script (run with PYTHONSAFEPATH=1, which leaves the script's folder off sys.path)
sys.path.insert(0, str(Path(__file__).resolve().parent))
from mode_probe6 import winner  # noqa: E402 -- the sweep's winner, its stored source

SHAPES = "4096x256x64,64x16384x64,256x4096x256,256x256x256,1024x1024x1024"


def per_call_us(body, n: int, stream: torch.cuda.Stream, replays: int) -> float:
    """Median over replays of one graph holding body(0..n-1), per call, in microseconds."""
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.stream(stream):
        body(0)  # outside the capture: workspaces, lazy loading
        stream.synchronize()
        with torch.cuda.graph(graph, stream=stream):
            for i in range(n):
                body(i)
        graph.replay()
        stream.synchronize()
        samples = []
        for _ in range(replays):
            torch.cuda._sleep(100_000)  # the replay is queued before the GPU reaches the start event
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record(stream)
            graph.replay()
            end.record(stream)
            end.synchronize()
            samples.append(start.elapsed_time(end) * 1e3 / n)
    del graph
    return statistics.median(samples)


def probe_shape(h: GpuHarness, comp: Compiler, s: Shape, row: tuple, replays: int, scratch: torch.Tensor) -> None:
    """The three graphs for evo's winner (PDL as the evaluator launches it, and plain) and torch.mm on `s`."""
    stream, raw = h.stream, h.stream.cuda_stream
    cand = Candidate(*row)
    r = comp.compile(cand.source)
    if r.cubin is None:
        print(f"{s}: the winner did not compile: {r.log[:300]}")
        return
    launch = cand.declaration.launch_for(s, num_sms=h.info.num_sms).to_json()
    pdl = bool(comp.pdl_timing(cand.source, r)) and driver_takes_pdl()
    sets = TimingSets(h, s.M, s.N, s.K, ["rotating"])
    calls = {}
    for label, use_pdl in ((f"evo{' PDL' if pdl else ''}", pdl), ("evo plain", False)):
        kernel = LoadedKernel(r.cubin, {**launch, "pdl": use_pdl})
        args = sets.launch_args(kernel)
        calls[label] = (lambda k, ar: lambda i: k.launch(ar, raw, i))(kernel, args)
    calls["torch.mm"] = lambda i: torch.mm(sets.a(i), sets.B[i], out=sets.C[i])
    for autotune in (False, True):  # the evaluator's cuBLASLt baselines, as it calls them (nvmath)
        try:
            calls[f"cuBLASLt {'autotuned' if autotune else 'heuristic'}"] = _cublaslt_calls(h, sets, autotune)[0][0]
        except Exception as e:  # noqa: BLE001 -- a probe: say so and go on with the others
            print(f"{s}: cuBLASLt ({'autotuned' if autotune else 'heuristic'}) unavailable: {str(e)[:200]}")

    def fill(i: int) -> None:
        scratch.fill_(float(i))

    for label, call in calls.items():
        alone = per_call_us(call, sets.n, stream, replays)

        def with_fill(i: int, call=call) -> None:
            call(i)
            fill(i)
        both = per_call_us(with_fill, sets.n, stream, replays)
        fills = per_call_us(fill, sets.n, stream, replays)  # beside each: the clock drifts between graphs
        after = both - fills
        print(f"{str(s):16s} {label:20s} {alone:10.3f}  {after:10.3f}  {after - alone:+10.3f}   (fills {fills:.3f})",
              flush=True)
    print(f"{str(s):16s} {sets.n} calls a graph", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("sweep")
    ap.add_argument("--shapes", default=SHAPES)
    ap.add_argument("--replays", type=int, default=7)
    a = ap.parse_args()
    db = sqlite3.connect(a.sweep)
    h = GpuHarness()
    comp = Compiler(cache_dir="/tmp/evo-cache")
    with torch.cuda.stream(h.stream):
        scratch = torch.zeros(1, device="cuda")
    print(f"{h.info.name}; PDL launches {'taken' if driver_takes_pdl() else 'NOT taken by this driver'}")
    print("shape            call                 back-to-back  after a fill  gain from following itself  (us a call)")
    for text in a.shapes.split(","):
        s = Shape(*(int(x) for x in text.split("x")))
        row = winner(db, s.M, s.N, s.K)
        if row is None:
            print(f"{s}: no winner in the sweep")
            continue
        probe_shape(h, comp, s, row, a.replays, scratch)
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()

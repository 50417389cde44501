"""Does torch's mm on W.T stored [K, N] (evo.dispatch.Linear's torch path) cost more than nn.Linear's
mm on W [N, K] transposed when called eagerly, where CUDA graphs see no difference?

Per (M, N, K): kernels launched per call (torch.profiler), and per-call ms of the two layouts in
CUDA graphs and eagerly (a loop of calls between events), interleaved over 9 rounds (which layout
goes first alternates), medians; each sample spans at least 10 ms. The fifth session's run (in
benchmarks/dispatch/fifth_session/layout_eager/) predates the alternation: kn always went first.
Usage (GPU): python3 benchmarks/dispatch/layout_eager.py [OUT.json]
"""
import json
import math
import statistics
import sys

import torch

SHAPES = [(m, n, k) for n, k in ((4096, 4096), (4096, 14336), (6144, 4096), (28672, 4096))
          for m in (17, 64, 128, 200, 256, 264, 512)]


def kernels_per_call(fn) -> list[str]:
    fn()
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]


def per_call_ms(fn, calls: int, graph: bool) -> float:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    if graph:
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            fn()
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(calls):
                fn()
        run = g.replay
    else:
        def run():
            for _ in range(calls):
                fn()
    run()
    start.record()
    run()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / calls


def main(out=None):
    torch.backends.cuda.matmul.allow_tf32 = False
    rows = []
    print(f"{'shape':>18} {'kernels kn':>10} {'kernels nk':>10} {'graph kn/nk':>11} {'eager kn/nk':>11} "
          f"{'eager kn us':>11} {'eager nk us':>11}")
    for m, n, k in SHAPES:
        x = torch.randn(m, k, dtype=torch.float16, device="cuda")
        w = torch.randn(n, k, dtype=torch.float16, device="cuda")
        w_t = w.t().contiguous()
        y = torch.empty(m, n, dtype=torch.float16, device="cuda")
        kn = lambda x=x, w_t=w_t, y=y: torch.mm(x, w_t, out=y)  # noqa: E731
        nk = lambda x=x, w=w, y=y: torch.mm(x, w.t(), out=y)  # noqa: E731
        one = min(per_call_ms(f, 20, False) for f in (kn, nk))
        calls = max(20, math.ceil(10.0 / max(one, 1e-4)))  # the faster layout's samples span 10 ms too
        res = {"graph": ([], []), "eager": ([], [])}
        for r in range(9):
            for mode in ("graph", "eager"):
                for j in ((0, 1) if r % 2 == 0 else (1, 0)):  # which layout goes first alternates
                    res[mode][j].append(per_call_ms((kn, nk)[j], calls, mode == "graph"))
        med = {mode: (statistics.median(a), statistics.median(b)) for mode, (a, b) in res.items()}
        row = {"M": m, "N": n, "K": k, "kernels_kn": kernels_per_call(kn), "kernels_nk": kernels_per_call(nk),
               "graph_ms": med["graph"], "eager_ms": med["eager"], "samples": res}
        rows.append(row)
        print(f"{m:>6}x{n:>5}x{k:>5} {len(row['kernels_kn']):>10} {len(row['kernels_nk']):>10} "
              f"{med['graph'][0] / med['graph'][1]:>11.3f} {med['eager'][0] / med['eager'][1]:>11.3f} "
              f"{med['eager'][0] * 1e3:>11.2f} {med['eager'][1] * 1e3:>11.2f}")
    if out:
        json.dump(rows, open(out, "w"), indent=1)


if __name__ == "__main__":
    main(*sys.argv[1:])

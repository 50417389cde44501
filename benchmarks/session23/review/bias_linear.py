"""Session 23's dispatch review, for a GPU session: an evo.dispatch.Linear with a bias beside nn.Linear at
small M. Where a kernel runs, the bias is a second kernel after it (evo_ops.cpp, linear()), and
`evo export --verify` times matmul without a bias, so a layer with a bias may be slower than nn.Linear
where the re-check found the kernel faster.

    EXPORT=folder python bias_linear.py     (an export whose tables hold (N, K); N and K from the first table)
Prints the time per call of both, each as a CUDA graph of 200 calls, at M = 1, 3, 17 and 64.
"""
import os

import torch

import evo.dispatch as dispatch


def per_call_us(layer, x, calls: int = 200) -> float:
    graph = torch.cuda.CUDAGraph()
    with torch.no_grad():
        layer(x)
        torch.cuda.synchronize()
        with torch.cuda.graph(graph):
            for _ in range(calls):
                layer(x)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    graph.replay()
    start.record()
    graph.replay()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / calls * 1000


def main() -> None:
    d = dispatch.configure(os.environ["EXPORT"], checked=False)
    table = d.tables[0]
    n, k = table["N"], table["K"]
    plain = torch.nn.Linear(k, n, bias=True).half().cuda()
    fast = dispatch.Linear.from_linear(plain, d)
    for m in (1, 3, 17, 64):
        x = torch.randn(m, k, dtype=torch.float16, device="cuda")
        print(f"M={m:3d} N={n} K={k}: nn.Linear {per_call_us(plain, x):7.2f} us, evo {per_call_us(fast, x):7.2f} us "
              f"({d.explain(x, fast.weight_t)})", flush=True)


if __name__ == "__main__":
    main()

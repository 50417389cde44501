"""What the library runs on the shapes the hopper family cannot reach (issue 13): torch.mm in fp16 on
each shape, a few warm-up calls, then 3 profiled calls; run under `ncu --clock-control none --csv` to get
the library kernel's name, grid, duration and DRAM throughput.

    ncu --clock-control none --csv --metrics ... python3 benchmarks/session14/lib_profile.py 64x4096x4096 ...
"""
import sys

import torch

for arg in sys.argv[1:]:
    M, N, K = map(int, arg.split("x"))
    a = torch.randn(M, K, device="cuda", dtype=torch.float16)
    b = torch.randn(K, N, device="cuda", dtype=torch.float16)
    for _ in range(3):
        torch.mm(a, b)
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_push(arg)
    for _ in range(3):
        torch.mm(a, b)
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()

"""Why the libraries' baselines ran at lower clocks than the kernels on large shapes (run_c): torch.matmul
timed twice over, alternately, on the same shapes and GPU with evo's own timing code (sealed rotating
mode, replays of 100 ms): once as a library is timed (verify=False) and once as a kernel is
(verify=True). `duty_cycle.txt` came from this script as of commit 13075e9, when a library's sets
built no reference and ran no checks between chunks: there the kernel way read 6-11% faster at a
higher clock on large shapes. Since then the libraries run the same checks (verdicts unread), and the
two ways should read alike: the check of that change on a GPU.

    python benchmarks/session15/duty_cycle.py   # on the GPU machine, evo installed
"""
import torch

from evo.evaluation.gpu_buffers import TimingSets
from evo.evaluation.gpu_harness import GpuHarness

h = GpuHarness()
req = {"modes": ["rotating"], "replays": 3, "target_replay_ms": 100}
for M, N, K in ((8192, 8192, 8192), (16384, 16384, 4096), (4096, 4096, 4096)):
    as_library = TimingSets(h, M, N, K, ["rotating"])
    as_kernel = TimingSets(h, M, N, K, ["rotating"])
    for rnd in range(3):
        for name, sets, verify in (("as a library", as_library, False), ("as a kernel", as_kernel, True)):
            (t,), error = sets.time_all(lambda i, s=sets: torch.matmul(s.A[i], s.B[i], out=s.C[i]), req, verify=verify)
            print(f"{M}x{N}x{K} round {rnd} {name:<13} {t.median_ms * 1e3:9.1f} us  {t.clock_mhz:6.0f} MHz"
                  f"  {'throttled' if t.throttled else ''} {error or ''}", flush=True)
    del as_library, as_kernel
    torch.cuda.empty_cache()

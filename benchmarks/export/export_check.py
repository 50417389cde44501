"""Exported kernels, loaded through evo.dispatch, re-checked and re-timed beside torch.matmul.

For each shape of an export folder: correctness of evo.dispatch.matmul on fresh random inputs
(3 draws, fp32-accumulated reference, the evaluator's tolerance), then CUDA-graph timing of
dispatch.matmul and torch.matmul on the same rotating buffers, in one process on one GPU.
Usage (GPU machine): python3 benchmarks/export/export_check.py EXPORT_DIR
Since format 2 (torch.ops.evo.matmul) only ranges whose recorded speedup passed are loaded: the
others run torch here too (and are reported as ~1.0x). `evo export --verify` is the re-check that
decides what evo.dispatch uses; this script stays for comparing with the format-1 logs.
"""
import json
import math
import sys

import torch

import evo.dispatch
from evo.evaluation.gpu_timing import ClockReader, time_graph
from evo.evaluation.tolerance import error_stats, verdict


def main(folder: str) -> None:
    torch.backends.cuda.matmul.allow_tf32 = False
    manifest = json.load(open(f"{folder}/manifest.json"))
    d = evo.dispatch.configure(folder, checked=False)
    stream = torch.cuda.Stream()
    clock = ClockReader(str(torch.cuda.get_device_properties(0).uuid))
    print(f"{'shape':>18} {'check':>6} {'rel_err':>9} {'export_us':>10} {'torch_us':>10} {'speedup':>8} "
          f"{'recorded':>9}")
    ratios, recorded = [], []
    for e in manifest["kernels"]:
        M, N, K = e["M"], e["N"], e["K"]
        errs = []
        for _ in range(3):
            a = torch.randn(M, K, dtype=torch.float16, device="cuda")
            b = torch.randn(K, N, dtype=torch.float16, device="cuda")
            c = evo.dispatch.matmul(a, b)
            torch.cuda.synchronize()
            stats = error_stats(c.float(), a.float() @ b.float())
            errs.append(stats["rel_err"])
            bad = verdict(stats)
            if bad:
                break
        nsets = max(2, math.ceil(3 * 60e6 / (2 * (M * K + K * N + M * N))))
        nsets = min(nsets, 4096)
        A = torch.randn(nsets, M, K, dtype=torch.float16, device="cuda")
        B = torch.randn(nsets, K, N, dtype=torch.float16, device="cuda")
        C = torch.empty(nsets, M, N, dtype=torch.float16, device="cuda")
        launches = nsets * max(1, math.ceil(200 / nsets)) if M * N * K < 2**30 else nsets * 2
        t_exp = time_graph(lambda i, A=A, B=B, C=C: d.matmul(A[i], B[i], out=C[i]), mode="rotating", launches=launches,
                           sets=nsets, replays=5, stream=stream, clock=clock)
        t_torch = time_graph(lambda i, A=A, B=B, C=C: torch.matmul(A[i], B[i], out=C[i]), mode="rotating", launches=launches,
                             sets=nsets, replays=5, stream=stream, clock=clock)
        ratio = t_torch.median_ms / t_exp.median_ms
        rec = e["library_ms"].get("torch", 0) / e["time_ms"] if e["library_ms"].get("torch") else float("nan")
        ratios.append(ratio)
        recorded.append(rec)
        print(f"{M:>6}x{N:>5}x{K:>5} {'ok' if not bad else 'FAIL':>6} {max(errs):>9.2e} {t_exp.median_ms * 1e3:>10.2f} "
              f"{t_torch.median_ms * 1e3:>10.2f} {ratio:>8.3f} {rec:>9.3f}" + (f"  {bad}" if bad else ""))
        del A, B, C
    g = math.exp(sum(map(math.log, ratios)) / len(ratios))
    gr = math.exp(sum(map(math.log, recorded)) / len(recorded))
    print(f"geomean speedup vs torch.matmul: re-timed {g:.3f}, recorded at search time {gr:.3f} over {len(ratios)} shapes")


if __name__ == "__main__":
    main(sys.argv[1])

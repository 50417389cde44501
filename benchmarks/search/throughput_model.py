"""Estimated GPU-side cost of one evaluation at the quick preset's settings (5 replays of 20 ms, 3
draws, 1 GiB of rotating sets), per smoke shape, before and after the asynchronous sealed loop.
Every rate below is an ESTIMATE for an H200 (none is measured by this script); the counts (sets,
chunks, bytes) follow the code. benchmarks/search/throughput_profile.sh measures the real split.

    python3 benchmarks/search/throughput_model.py
"""
import math

L2 = 62_914_560
TIMING_BYTES, MAX_SETS, PROJ = 1 << 30, 8192, 1 << 28
HBM = 3.6e12            # B/s reached by streaming torch kernels (peak ~4.3-4.8)
GEN = 1.0e12            # B/s of fp16 output of normal_ (Philox + Box-Muller): a guess, see the note
OP_US = 8.0             # host cost of one torch op issued from Python
SYNC_US = 30.0          # a host wait plus the GPU's drain
NODE_US = 40.0          # capture + instantiate per graph node (pre-sealed 64^3 sweeps: ~45 us/launch all in)
DRAW_MS = 1.0           # one correctness draw, small shapes (plus the fp32 reference at ~50 TFLOP/s)
SHAPES = {  # kernel time of a typical search kernel, us (compare24/sweep archives; estimates)
    (64, 64, 64): 3.2, (256, 256, 1024): 7.7, (1, 4096, 4096): 15.0, (77, 4096, 4096): 31.0,
    (1024, 1024, 1024): 20.0, (333, 11008, 4096): 130.0, (4096, 4096, 4096): 300.0}
MIX = {(64, 64, 64): .22, (256, 256, 1024): .19, (1, 4096, 4096): .11, (77, 4096, 4096): .09,
       (1024, 1024, 1024): .10, (333, 11008, 4096): .15, (4096, 4096, 4096): .14}  # simulated quick run


def model(M, N, K, t_us, replays=5, target=20.0, draws=3, asynchronous=False):
    sb = 2 * (M * K + K * N + M * N)
    n = min(MAX_SETS, max(max(2, math.ceil(3 * L2 / sb)), TIMING_BYTES // sb))
    chunks = max(1, math.ceil(target / (t_us / 1e3 * n)))
    total_chunks = replays * chunks + 1
    per_set_proj = 4 * (2 * M * N + M * K + K * N)
    groups = math.ceil(n / max(1, PROJ // per_set_proj))
    refresh = n * sb / GEN * 1e3                                 # ms per chunk
    ab, c = 14 - 4 * asynchronous, 68 - 4 * asynchronous            # check bytes per element (gather gone after)
    check_gpu = n * (ab * (M * K + K * N) + c * M * N) / HBM * 1e3  # ms per chunk
    timed = n * t_us / 1e3 + 0.05                                   # + the 50 us spin
    host = (groups * 20 + 10) * OP_US / 1e3 + (0 if asynchronous else (groups + 1) * SYNC_US / 1e3)
    gpu = refresh + check_gpu + timed
    per_chunk = max(gpu, host) if asynchronous else gpu + host
    fixed_gpu = 3 * refresh + (draws + 1) * (DRAW_MS + 2 * M * N * K / 50e12 * 1e3)  # sets fill x3, draws
    capture = n * NODE_US / 1e3
    return dict(n=n, chunks=chunks, groups=groups, refresh=refresh * total_chunks, check=check_gpu * total_chunks,
                timed=timed * total_chunks, host=host * total_chunks, capture=capture, fixed=fixed_gpu,
                total=per_chunk * total_chunks + capture + fixed_gpu)


if __name__ == "__main__":
    for asynchronous in (False, True):
        print(f"\n{'after: chunks queued, one wait per replay' if asynchronous else 'before: a wait per chunk'}")
        print(f"{'shape':>16} {'sets':>5} {'ch/rep':>6} {'grp':>4} {'refresh':>8} {'check':>7} {'timed':>7} "
              f"{'host':>7} {'capture':>8} {'fixed':>6} {'total ms':>8}")
        mean = 0.0
        for (M, N, K), t in SHAPES.items():
            r = model(M, N, K, t, asynchronous=asynchronous)
            mean += MIX[(M, N, K)] * r["total"]
            print(f"{f'{M}x{N}x{K}':>16} {r['n']:5d} {r['chunks']:6d} {r['groups']:4d} {r['refresh']:8.1f} "
                  f"{r['check']:7.1f} {r['timed']:7.1f} {r['host']:7.1f} {r['capture']:8.1f} {r['fixed']:6.1f} "
                  f"{r['total']:8.1f}")
        print(f"mix-weighted mean: {mean:.0f} ms per evaluation -> {1e3 / mean:.2f} evaluations/s (GPU-bound part only)")

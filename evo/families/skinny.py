"""Family "skinny": few rows (M up to 64) against a large B, computed as C^T = B^T A^T on mma.sync so
that the tokens fill the 8-wide side of the instruction; B streams through cp.async, K is split to
keep every SM loading. Correct for any M (row tiles of MP), fast where B's traffic dominates."""
import math

from evo.families._family import (
    ANY_SPLITS,
    SMEM_LIMIT,
    SMEM_PER_SM,
    Family,
    Params,
    mma_sync_snippet,
    splitk_requires,
    splitk_snippet,
)


def _smem(p: Params) -> int:
    return p["STAGES"] * (p["BK"] * p["BN"] + p["MP"] * p["BK"]) * 2


def _wn(p: Params) -> int:
    return p["BN"] // p["WARPS"]


def _problem(p: Params) -> str | None:
    if p["BN"] % p["WARPS"] or _wn(p) % 16 or _wn(p) > 64:
        return f"{p['BN']} columns over {p['WARPS']} warps: each warp needs 16, 32, 48 or 64 columns"
    if (_wn(p) // 16) * (p["MP"] // 8) * 4 > 128:
        return "more than 128 accumulators per thread"
    if _smem(p) > SMEM_LIMIT:
        return f"{_smem(p)} bytes of shared memory exceed {SMEM_LIMIT}"
    return None


def _ctas_per_sm(p: Params) -> int:
    return max(1, min(SMEM_PER_SM // (_smem(p) + 1024), 2048 // (p["WARPS"] * 32), 16))


def _suggest(M: int, N: int, K: int, num_sms: int) -> list[Params]:
    if M > 64:
        return []
    mp = next(m for m in (8, 16, 32, 64) if m >= M)
    k_tiles = -(-K // 64)
    out = []
    # Measured on the H200 (benchmarks/families/): narrow column tiles with a few stages each, several CTAs
    # per SM, beat wide tiles and deep pipelines (one CTA per SM keeps fewer loads in flight).
    for bn, warps, stages, bonus in ((64, 4, 6, 1.0), (128, 4, 4, 0.97), (64, 4, 4, 0.96), (64, 2, 6, 0.95),
                                     (256, 8, 4, 0.94)):
        p = {"MP": mp, "BN": bn, "BK": 64, "WARPS": warps, "STAGES": stages, "SPLIT_K": 1}
        if _problem(p):
            continue
        slots = num_sms * _ctas_per_sm(p)
        tiles = -(-M // mp) * -(-N // bn)
        scored = []
        for split in ANY_SPLITS:
            if k_tiles < 2 * split and split > 1:
                break
            items = tiles * split
            waves = -(-items // slots)
            # loads in flight: a full wave keeps every SM busy; the reduction costs a little per split
            balance = items / (waves * slots)
            fill = min(1.0, items / num_sms)
            scored.append((fill * (0.5 + 0.5 * balance) / (1 + 0.03 * math.log2(split)) * bonus, split))
        scored.sort(reverse=True)
        for rank, (score, split) in enumerate(scored[:2]):
            out.append((score * (1 - 0.02 * rank), dict(p, SPLIT_K=split)))
    return [p for _, p in sorted(out, key=lambda x: -x[0])]


SKINNY = Family(
    name="skinny",
    description="small M: C^T = B^T A^T on mma.sync m16n8k16 (tokens on the 8-wide side), cp.async "
                "streaming of B, split-K (any count) to fill every SM",
    space={"MP": (8, 16, 32, 64), "BN": (64, 128, 256), "BK": (32, 64, 128), "WARPS": (2, 4, 8),
           "STAGES": (2, 3, 4, 5, 6, 8), "SPLIT_K": ANY_SPLITS},
    template="skinny.cu",
    _problem=_problem,
    _derive=lambda p: {"THREADS": str(p["WARPS"] * 32), "WN": str(_wn(p)), "SMEM": str(_smem(p)),
                       "MMA_SYNC": mma_sync_snippet(),
                       "SPLITK": splitk_snippet(p["SPLIT_K"] > 1),
                       "SPLITK_REQUIRES": splitk_requires(p["SPLIT_K"], p["MP"], p["BN"])},
    default={"MP": 16, "BN": 128, "BK": 64, "WARPS": 4, "STAGES": 4, "SPLIT_K": 4},
    _suggest=_suggest,
    default_in_shortlist=False,
)

"""Family "ampere": mma.sync tensor-core kernel with a cp.async pipeline."""
from evo.families._family import (
    SMEM_LIMIT,
    Family,
    Params,
    mma_sync_snippet,
    split_for,
    splitk_requires,
    splitk_snippet,
    tile_score,
)


def _threads(p: Params) -> int:
    return (p["BM"] // p["WM"]) * (p["BN"] // p["WN"]) * 32


def _smem(p: Params) -> int:
    return p["STAGES"] * (p["BM"] * p["BK"] + p["BK"] * p["BN"]) * 2


def _problem(p: Params) -> str | None:
    if p["WM"] > p["BM"] or p["WN"] > p["BN"]:
        return "warp tile larger than the block tile"
    if not 64 <= _threads(p) <= 512:
        return f"{_threads(p)} threads: must be 64..512 (2 to 16 warps)"
    if _smem(p) > SMEM_LIMIT:
        return f"{_smem(p)} bytes of shared memory exceed {SMEM_LIMIT}"
    if (p["WM"] // 16) * (p["WN"] // 8) * 4 > 128:
        return "more than 128 accumulators per thread"
    return None


def _suggest(M: int, N: int, K: int, num_sms: int) -> list[Params]:
    out = []
    for bm, bn, bk, wm, wn, stages in ((128, 128, 32, 64, 64, 4), (128, 256, 32, 64, 64, 3), (64, 128, 32, 32, 64, 4),
                                       (64, 64, 64, 32, 32, 4), (32, 64, 64, 32, 32, 4), (128, 64, 64, 64, 32, 3)):
        tiles = -(-M // bm) * -(-N // bn)
        split = split_for(tiles, -(-K // bk), num_sms, cap=16)
        p = {"BM": bm, "BN": bn, "BK": bk, "WM": wm, "WN": wn, "STAGES": stages, "SPLIT_K": split, "GROUP_M": 8}
        out.append((tile_score(M, N, bm, bn, split, num_sms), p))
        if split > 1:  # fewer splits: less reduction traffic, fewer CTAs
            out.append((tile_score(M, N, bm, bn, split, num_sms) * 0.9, dict(p, SPLIT_K=split // 2)))
    return [p for _, p in sorted(out, key=lambda x: -x[0])]


AMPERE = Family(
    name="ampere",
    description="mma.sync m16n8k16 + ldmatrix + multi-stage cp.async, swizzled smem, split-K",
    space={"BM": (32, 64, 128, 256), "BN": (64, 128, 256), "BK": (32, 64), "WM": (32, 64), "WN": (32, 64),
           "STAGES": (2, 3, 4, 5), "SPLIT_K": (1, 2, 4, 8, 16), "GROUP_M": (1, 8)},
    template="ampere.cu",
    _problem=_problem,
    _derive=lambda p: {"THREADS": str(_threads(p)), "SMEM": str(_smem(p)), "MMA_SYNC": mma_sync_snippet(),
                       "SPLITK": splitk_snippet(p["SPLIT_K"] > 1),
                       "SPLITK_REQUIRES": splitk_requires(p["SPLIT_K"], p["BM"], p["BN"])},
    default={"BM": 128, "BN": 128, "BK": 32, "WM": 64, "WN": 64, "STAGES": 4, "SPLIT_K": 1, "GROUP_M": 8},
    _suggest=_suggest,
)

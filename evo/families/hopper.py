"""Family "hopper": TMA + wgmma, warp-specialized producer/consumers, persistent (sm_90a)."""
from evo.families._family import Family, Params, split_for, splitk_requires, splitk_snippet, tile_score

SMEM_LIMIT = 232448


def _smem(p: Params) -> int:
    stage = (p["BM"] * 64 + 64 * p["BN"]) * 2
    epilogue = p["CONSUMERS"] * 64 * 72 * 2  # one padded 64x64 fp16 staging tile per consumer
    return p["STAGES"] * stage + 2 * p["STAGES"] * 8 + 16 + epilogue + 1024  # + barriers, flag, alignment slack


def _problem(p: Params) -> str | None:
    rows = p["BM"] // p["CONSUMERS"]
    if rows * p["CONSUMERS"] != p["BM"] or rows not in (64, 128):
        return "each consumer warpgroup must own 64 or 128 rows"
    if rows * p["BN"] // 128 > 128:
        return "more than 128 fp32 accumulators per consumer thread"
    if _smem(p) > SMEM_LIMIT:
        return f"{_smem(p)} bytes of shared memory exceed {SMEM_LIMIT}"
    return None


def wgmma_helper(n: int) -> str:
    """wgmma m64nNk16, f16 inputs, f32 accumulators; A K-major, B MN-major (transposed)."""
    count = n // 2
    regs = ", ".join(f"%{i}" for i in range(count))
    outs = ", ".join(f'"+f"(d[{i}])' for i in range(count))
    return (
        f"__device__ __forceinline__ void wgmma_m64n{n}(float* d, uint64_t desc_a, uint64_t desc_b) {{\n"
        f"    asm volatile(\n"
        f'        "{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{count + 2}, 0;\\n"\n'
        f'        "wgmma.mma_async.sync.aligned.m64n{n}k16.f32.f16.f16 "\n'
        f'        "{{{regs}}}, %{count}, %{count + 1}, p, 1, 1, 0, 1;\\n}}\\n"\n'
        f"        : {outs}\n"
        f'        : "l"(desc_a), "l"(desc_b), "r"(1));\n'
        f"}}"
    )


def _derive(p: Params) -> dict[str, str]:
    consumers = p["CONSUMERS"]
    items = f"cdiv(M, {p['BM']}) * cdiv(N, {p['BN']}) * {p['SPLIT_K']}"
    return {
        "THREADS": str(128 * (consumers + 1)), "SMEM": str(_smem(p)),
        "GRID": f"min(num_sms, {items})" if p["PERSISTENT"] else items,
        "PRODUCER_REGS": "40", "CONSUMER_REGS": "232" if consumers == 2 else "240",
        "WGMMA": wgmma_helper(p["BN"]), "SPLITK": splitk_snippet(p["SPLIT_K"]),
        "SPLITK_REQUIRES": splitk_requires(p["SPLIT_K"], p["BM"], p["BN"]),
    }


def _suggest(M: int, N: int, K: int, num_sms: int) -> list[Params]:
    k_tiles = -(-K // 64)
    out = []
    for bm, bn, consumers in ((128, 256, 2), (256, 128, 2), (128, 128, 2), (128, 128, 1), (128, 192, 2),
                              (64, 256, 1), (64, 128, 1), (64, 64, 1), (128, 64, 1)):
        tiles = -(-M // bm) * -(-N // bn)
        split = split_for(tiles, k_tiles, num_sms)
        p = {"BM": bm, "BN": bn, "CONSUMERS": consumers, "STAGES": 4, "GROUP_M": 8, "SPLIT_K": split, "PERSISTENT": 1}
        for stages in (5, 4, 3):
            p["STAGES"] = stages
            if _problem(p) is None:
                break
        score = tile_score(M, N, bm, bn, split, num_sms) * (1 + 0.1 * (bm * bn >= 128 * 256))
        out.append((score, p))
        if split > 1:  # fewer splits: less fp32 reduction traffic (measured: often the better trade)
            out.append((score * 0.97, dict(p, SPLIT_K=1)))
            out.append((score * 0.9, dict(p, SPLIT_K=split // 2)))
    return [p for _, p in sorted(out, key=lambda x: -x[0])]


HOPPER = Family(
    name="hopper",
    description="TMA + mbarrier pipeline + wgmma, producer/consumer warpgroups, persistent, split-K",
    space={"BM": (64, 128, 256), "BN": (64, 128, 192, 256), "CONSUMERS": (1, 2), "STAGES": (2, 3, 4, 5, 6, 7),
           "GROUP_M": (1, 4, 8, 16), "SPLIT_K": (1, 2, 4, 8, 16, 32), "PERSISTENT": (0, 1)},
    template="hopper.cu",
    _problem=_problem,
    _derive=_derive,
    default={"BM": 128, "BN": 256, "CONSUMERS": 2, "STAGES": 4, "GROUP_M": 8, "SPLIT_K": 1, "PERSISTENT": 1},
    _suggest=_suggest,
)

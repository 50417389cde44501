"""Family "hopper": TMA + wgmma, warp-specialized producer/consumers, persistent (sm_90a)."""
import itertools
import math
import string
from functools import cache

from evo.families._family import (
    ANY_SPLITS,
    SMEM_LIMIT,
    SMEM_PER_SM,
    WS_FLOATS,
    Family,
    Params,
    split_for,
    splitk_requires,
    splitk_snippet,
    template_text,
    tile_intensity,
    tile_rows,
    tile_score,
    wave_split,
)

MAX_CLUSTER_SPLIT = 8  # portable cluster size


def _cluster(p: Params) -> bool:
    return p["SPLIT_K"] > 1 and p["SPLIT_CLUSTER"] == 1


def _region(p: Params) -> int:
    """Bytes of the pipeline stages; cluster split-K reuses them for the padded fp32 partial tile."""
    stages = p["STAGES"] * (p["BM"] * 64 + 64 * p["BN"]) * 2
    partial = p["BM"] * (p["BN"] + 8) * 4 if _cluster(p) else 0
    return -(-max(stages, partial) // 1024) * 1024


def _smem(p: Params) -> int:
    if p["TMA_STORE"]:  # barriers and flag in a 1024-byte block, then TMA_STORE swizzled 64x64 fp16 tiles a consumer
        return _region(p) + 1024 + p["CONSUMERS"] * p["TMA_STORE"] * 64 * 64 * 2 + 1024  # + alignment slack
    epilogue = 0 if _cluster(p) else p["CONSUMERS"] * 64 * 72 * 2  # a padded 64x64 fp16 tile per consumer
    return _region(p) + 2 * p["STAGES"] * 8 + 16 + epilogue + 1024  # + barriers, flag, alignment slack


#: tile rows (BM) a transposed product (SWAP_AB=1) takes: the wgmma's N, any multiple of 8 up to 256
SWAPPED_BM = tuple(range(8, 257, 8))
#: tile rows of the plain product: the wgmma's M side, 64 rows per instruction, split among the consumers
PLAIN_BM = (64, 128, 256)


def _wgmma_n(p: Params) -> int:
    """The wgmma's N: the tile's columns, or its rows when the product runs transposed."""
    return p["BM"] if p["SWAP_AB"] else p["BN"]


def _problem(p: Params) -> str | None:
    swap = p["SWAP_AB"] == 1
    split_dim, side = (p["BN"], "columns (BN)") if swap else (p["BM"], "rows (BM)")
    owners = 1 if p["PINGPONG"] else p["CONSUMERS"]  # ping-pong: each consumer owns whole tiles of its own
    rows = split_dim // owners
    if not swap and p["BM"] not in PLAIN_BM:
        return f"BM must be one of {PLAIN_BM} (a multiple of 8 up to 256 only with SWAP_AB=1)"
    if p["PINGPONG"] and (p["CONSUMERS"] != 2 or swap or p["SPLIT_K"] > 1 or p["SPLIT_CLUSTER"]
                          or p["TAIL_SPLIT"] > 1 or p["STREAM_K"] or p["FIXUP"] or not p["PERSISTENT"]
                          or p["CTAS_PER_SM"] != 1):
        return ("PINGPONG=1 alternates whole tiles between two consumer warpgroups of a persistent CTA: it "
                "needs CONSUMERS=2, PERSISTENT=1, CTAS_PER_SM=1, SWAP_AB=0, and no split-K, tail split or "
                "stream-K (a multicast pair, CLUSTER_M=2, is fine)")
    if rows * owners != split_dim or rows not in (64, 128):
        return f"each consumer warpgroup must own 64 or 128 of the tile's {side}"
    if rows * _wgmma_n(p) // 128 > 128:
        return "more than 128 fp32 accumulators per consumer thread"
    if swap and (p["SPLIT_CLUSTER"] or p["CLUSTER_M"] > 1 or p["GROUP_M"] not in (1, 8)):
        return "SWAP_AB=1 takes neither clusters (SPLIT_CLUSTER=0, CLUSTER_M=1) nor GROUP_M other than 1 or 8"
    if p["CTAS_PER_SM"] == 2 and p["CONSUMERS"] != 1:
        return "two CTAs per SM leave registers for one consumer warpgroup only"
    if p["CTAS_PER_SM"] == 2 and _wgmma_n(p) > 128:
        return "two CTAs per SM compile with 128 registers per thread: too few for one wgmma of N > 128"
    limit = SMEM_LIMIT if p["CTAS_PER_SM"] == 1 else SMEM_PER_SM // 2 - 1024
    if _smem(p) > limit:
        return f"{_smem(p)} bytes of shared memory exceed {limit} ({p['CTAS_PER_SM']} CTA(s) per SM)"
    if p["CLUSTER_M"] == 2 and p["SPLIT_CLUSTER"]:
        return "multicast pairs (CLUSTER_M=2) split K over L2 only: they need SPLIT_CLUSTER=0"
    if p["TAIL_SPLIT"] > 1 and (p["SPLIT_K"] > 1 or not p["PERSISTENT"] or p["CLUSTER_M"] > 1):
        return "TAIL_SPLIT splits the last round of a persistent schedule: it needs SPLIT_K=1, PERSISTENT=1, CLUSTER_M=1"
    if p["STREAM_K"] and (p["SPLIT_K"] > 1 or not p["PERSISTENT"] or p["CLUSTER_M"] > 1 or p["TAIL_SPLIT"] > 1):
        return ("STREAM_K shares out the last round of a persistent schedule: it needs SPLIT_K=1, PERSISTENT=1, "
                "CLUSTER_M=1 and no TAIL_SPLIT")
    if p["FIXUP"] and not ((p["SPLIT_K"] > 1 and not p["SPLIT_CLUSTER"]) or p["TAIL_SPLIT"] > 1):
        return ("FIXUP=1 orders the partials of split-K over L2 or of a tail split: it needs SPLIT_K > 1 "
                "(not SPLIT_CLUSTER) or TAIL_SPLIT > 1")
    if p["TMA_STORE"] and (p["SPLIT_K"] > 1 or p["TAIL_SPLIT"] > 1 or p["STREAM_K"] or p["SWAP_AB"]):
        return ("TMA_STORE (1 or 2) stores whole tiles of C as given: it needs SPLIT_K=1, TAIL_SPLIT=1, STREAM_K=0 "
                "and SWAP_AB=0")
    if p["SPLIT_CLUSTER"] == 1:
        if p["SPLIT_K"] == 1:
            return "SPLIT_CLUSTER needs SPLIT_K > 1"
        if p["SPLIT_K"] not in (2, 4, 8) or p["BM"] % p["SPLIT_K"]:
            return "a cluster split-K takes 2, 4 or 8 splits, each adding up BM / SPLIT_K rows"
        if p["SPLIT_K"] > MAX_CLUSTER_SPLIT:
            return f"a cluster split-K takes at most {MAX_CLUSTER_SPLIT} splits (portable cluster size)"
        if p["PERSISTENT"]:
            return "cluster split-K runs one tile per CTA (PERSISTENT=0)"
    return None


def wgmma_helper(n: int, swap: bool = False) -> str:
    """wgmma m64nNk16, f16 inputs, f32 accumulators; A K-major, B MN-major (transposed), or with
    `swap` the other way round (A MN-major, B K-major: C^T = B^T A^T on the same shared tiles)."""
    count = n // 2
    transpose = "1, 0" if swap else "0, 1"
    regs = ", ".join(f"%{i}" for i in range(count))
    outs = ", ".join(f'"+f"(d[{i}])' for i in range(count))
    return (
        f"__device__ __forceinline__ void wgmma_m64n{n}(float* d, uint64_t desc_a, uint64_t desc_b) {{\n"
        f"    asm volatile(\n"
        f'        "{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{count + 2}, 0;\\n"\n'
        f'        "wgmma.mma_async.sync.aligned.m64n{n}k16.f32.f16.f16 "\n'
        f'        "{{{regs}}}, %{count}, %{count + 1}, p, 1, 1, {transpose};\\n}}\\n"\n'
        f"        : {outs}\n"
        f'        : "l"(desc_a), "l"(desc_b), "r"(1));\n'
        f"}}"
    )


def _consumer_regs(p: Params) -> int:
    """setmaxnreg target: the CTA's register file share, less the producer's 40 per thread."""
    per_cta = 65536 // p["CTAS_PER_SM"]
    return min(240, (per_cta // 128 - 40) // p["CONSUMERS"] // 8 * 8)


def _derive(p: Params) -> dict[str, str]:
    consumers, cluster, pair = p["CONSUMERS"], _cluster(p), p["CLUSTER_M"]
    if pair == 1:
        # a tail split makes up to TAIL_SPLIT items of a tile when the tiles do not fill the GPU
        items = f"cdiv(M, {p['BM']}) * cdiv(N, {p['BN']}) * {p['SPLIT_K'] * p['TAIL_SPLIT']}"
        if p["STREAM_K"]:  # as hopper.cu's streamk_plan: shares of at least 4 k-steps, at most 4 per tile
            tiles = f"cdiv(M, {p['BM']}) * cdiv(N, {p['BN']})"
            items = f"min({tiles} * 4, max(1, {tiles} * cdiv(K, 64) // 4))"
        grid = f"min(num_sms * {p['CTAS_PER_SM']}, {items})" if p["PERSISTENT"] else items
    else:  # items are pairs of M tiles (each in SPLIT_K slices), one cluster of `pair` CTAs each
        items = f"cdiv(cdiv(M, {p['BM']}), {pair}) * cdiv(N, {p['BN']}) * {p['SPLIT_K']}"
        grid = (f"{pair} * min(num_sms * {p['CTAS_PER_SM']} // {pair}, {items})" if p["PERSISTENT"]
                else f"{pair} * {items}")
    cluster_dims = p["SPLIT_K"] if cluster else pair
    over_l2 = not cluster and (p["SPLIT_K"] > 1 or p["TAIL_SPLIT"] > 1 or p["STREAM_K"] > 0)  # partials meet in L2
    tail_requires = (f"\n// @evo requires = num_sms * {p['CTAS_PER_SM'] * p['BM'] * p['BN']} <= {WS_FLOATS}"
                     if p["TAIL_SPLIT"] > 1 else "")  # one workspace slot per last-round tile (or per item, FIXUP=1)
    if p["FIXUP"] and p["SPLIT_K"] > 1:  # a partial tile of its own for every item
        tail_requires += (f"\n// @evo requires = {tile_rows(p['BM'], pair)} * cdiv(N, {p['BN']}) * "
                          f"{p['SPLIT_K'] * p['BM'] * p['BN']} <= {WS_FLOATS}")
    ordered = " (ordered partials)" if p["FIXUP"] else ""
    row_owner = "0" if p["PINGPONG"] else "consumer"  # whose share of a tile's rows a consumer computes and stores
    return {
        "THREADS": str(128 * (consumers + 1)), "SMEM": str(_smem(p)), "GRID": grid,
        "PRODUCER_REGS": "40", "CONSUMER_REGS": str(_consumer_regs(p)),
        "WGMMA": wgmma_helper(_wgmma_n(p), swap=p["SWAP_AB"] == 1), "WG_N": str(_wgmma_n(p)),
        "SWAP_HOW": "transposed on the tensor cores (C^T = B^T A^T)" if p["SWAP_AB"] else "as given",
        "ROW_OWNER": row_owner,
        "SPLITK": splitk_snippet(over_l2),
        "STREAMK": template_text("streamk.cuh") if p["STREAM_K"] or p["FIXUP"] else "",
        "SPLITK_REQUIRES": ("" if cluster else splitk_requires(p["SPLIT_K"], p["BM"], p["BN"], pair)) + tail_requires,
        "TAIL_HOW": (f"split up to {p['TAIL_SPLIT']} ways{ordered}" if p["TAIL_SPLIT"] > 1 else
                     "stream-K over every CTA (deterministic fix-up)" if p["STREAM_K"] == 1 else
                     "stream-K of the last round alone (deterministic fix-up)" if p["STREAM_K"] else "none"),
        "SPLIT_HOW": "cluster DSMEM" if cluster else (
            ("ordered partials" if p["FIXUP"] else "fp32 atomics") if p["SPLIT_K"] > 1 else "none"),
        "CLUSTER_DECL": f"\n// @evo cluster  = {cluster_dims}, 1, 1" if cluster_dims > 1 else "",
        **_tma_store(p["TMA_STORE"], row_owner),
        **_pingpong(p["PINGPONG"]),
    }


def _pingpong(on: int) -> dict[str, str]:
    """The template's pieces for PINGPONG: 0 renders the kernel as before the gene existed (the consumers
    split each tile's rows); 1 gives each consumer warpgroup whole tiles, the CTA's even items to the first
    and odd ones to the second, so that one's epilogue runs while the other's wgmmas do. The two take turns
    at the tensor cores: a consumer starts its k-loop once the other has issued all of its own (two named
    barriers). The turns are also what makes the stage arithmetic safe: a consumer jumps to its item's first
    stage by counting k-steps, and an mbarrier's parity wait can tell apart only consecutive uses of a stage,
    so the stage's previous use (the other consumer's item) must already have been waited for. Without the
    turns (an unordered variant, reviewed before it ran) a consumer could take a stage two uses ahead."""
    if not on:
        return {"PINGPONG_DEFINE": "", "TILE_OWNERS": "CONSUMERS", "STAGE_READERS": "CONSUMERS * 4 * CLUSTER_M",
                "STAGE_READER_WARP": "consumer warp of the cluster",
                "CONSUMER_OWNS": "ROWS_PER_CONSUMER rows of the tile",
                "PINGPONG_HELPERS": "", "PINGPONG_FIRST": "", "PINGPONG_STEP": "", "PINGPONG_BEFORE": "",
                "PINGPONG_AFTER": ""}
    part = _pingpong_pieces()
    return {"PINGPONG_DEFINE": "\n" + part["define"], "TILE_OWNERS": "1",
            "STAGE_READERS": "4 * CLUSTER_M",
            "STAGE_READER_WARP": "warp of the one consumer (in each CTA of the cluster) that reads the stage",
            "CONSUMER_OWNS": "whole tiles, every other item of the CTA",
            "PINGPONG_HELPERS": "\n" + part["helpers"], "PINGPONG_FIRST": " + consumer * item_stride",
            "PINGPONG_STEP": " * 2", "PINGPONG_BEFORE": "\n" + part["before"], "PINGPONG_AFTER": "\n" + part["after"]}


@cache  # parsed once: a search renders thousands of kernels
def _pingpong_pieces() -> dict[str, str]:
    """hopper_pingpong.cuh's pieces by name, cut at its "// ---- NAME" lines."""
    pieces = template_text("hopper_pingpong.cuh").split("// ---- ")[1:]
    return {piece.split("\n", 1)[0].strip(): piece.split("\n", 1)[1].rstrip("\n") for piece in pieces}


def _tma_store(buffers: int, row_owner: str) -> dict[str, str]:
    """The template's pieces for the epilogue of a plain product (not transposed): with TMA_STORE = 1 or 2
    staging tiles a consumer, a tensor map over C, its kernel parameter and prefetch, the bulk-store
    helpers, the staged stores (hopper_epilogue_tma.cuh) and the wait for them before the CTA exits; with
    0, 16-byte stores by every thread (hopper_epilogue_stores.cuh), rendering as before the gene existed.
    Two staging tiles let a chunk's conversion overlap the previous chunk's store; one leaves 8 KB more
    for the pipeline (a stage more on the 128x128 tiles at 2 CTAs per SM that win on K = 256). `row_owner` is
    the index whose share of the tile's rows a consumer stores ("consumer", or "0" where each owns whole tiles)."""
    if not buffers:
        return {"TMA_C_DECL": "", "TMC_PARAM": "", "TMC_PREFETCH": "", "TMA_STORE_HELPERS": "", "TMA_STORE_DRAIN": "",
                "EPILOGUE_PLAIN": _epilogue("hopper_epilogue_stores.cuh", row_owner)}
    return {"TMA_C_DECL": "\n// @evo tma      = C box(64, 64) swizzle(128)",
            "TMC_PARAM": ", const __grid_constant__ CUtensorMap tmC",
            "TMC_PREFETCH": '\n        asm volatile("prefetch.tensormap [%0];" :: "l"(&tmC) : "memory");',
            "TMA_STORE_HELPERS": template_text("hopper_tma_store.cuh").rstrip("\n")
            + f"\n#define TMA_BUFFERS {buffers}  // staging tiles a consumer",
            "TMA_STORE_DRAIN": "\n    if (warpgroup > 0 && tid_in_wg == 0) bulk_wait_all();  // every store done",
            "EPILOGUE_PLAIN": _epilogue("hopper_epilogue_tma.cuh", row_owner)}


def _epilogue(name: str, row_owner: str) -> str:
    return string.Template(template_text(name)).substitute(ROW_OWNER=row_owner).rstrip("\n")


def _subspaces(space: dict[str, tuple[int, ...]]) -> list[dict[str, tuple[int, ...]]]:
    """The parts of the genome that can hold valid configurations (the whole product is 6 million
    combinations, mostly tile rows that only a transposed product takes)."""
    plain = dict(space, BM=PLAIN_BM, SWAP_AB=(0,))
    swapped = dict(space, SWAP_AB=(1,), SPLIT_CLUSTER=(0,), CLUSTER_M=(1,), GROUP_M=(1, 8), TMA_STORE=(0,))
    # FIXUP=1 only where partials meet over L2: split-K without a cluster, or a tail split
    over_l2 = [dict(SPLIT_K=tuple(n for n in space["SPLIT_K"] if n > 1), SPLIT_CLUSTER=(0,), TAIL_SPLIT=(1,)),
               dict(SPLIT_K=(1,), SPLIT_CLUSTER=(0,), TAIL_SPLIT=tuple(t for t in space["TAIL_SPLIT"] if t > 1))]
    # ping-pong: whole tiles for each of two consumers of a persistent CTA, none of the splits
    pingpong = dict(plain, PINGPONG=(1,), CONSUMERS=(2,), SPLIT_K=(1,),
                    SPLIT_CLUSTER=(0,), PERSISTENT=(1,), CTAS_PER_SM=(1,), TAIL_SPLIT=(1,),
                    STREAM_K=(0,), FIXUP=(0,))
    return [dict(part, FIXUP=(0,), PINGPONG=(0,)) for part in (plain, swapped)] + [
        dict(part, STREAM_K=(0,), FIXUP=(1,), TMA_STORE=(0,), PINGPONG=(0,), **l2)
        for part in (plain, swapped) for l2 in over_l2] + [pingpong]


def _fit_stages(p: Params, K: int) -> Params | None:
    """The deepest pipeline that fits, or None: up to 7 stages, but 5 with split-K unless it is over L2
    with stages of at most 20 KB (BM + BN at most 160 rows of 64 k-values), or 6 for split-K over L2 with
    64x128 or 128x64 tiles where K >= 8192. Measured on the H200, the same kernels paired in one run:
    without split-K, 6 stages ran 4.6% and 7 stages 10.4% faster than 5 (benchmarks/README.md, third
    `evo compare`); of 239 split-K picks over L2 of the llm_layers and grid125 shortlists
    (benchmarks/session14), those with small stages ran 4.5% faster with the deepest pipeline up to 7
    (geomean of 89 pairs, 1 slower by 2%), the others no faster (0.998 over 150 pairs, 23 slower by 2%,
    down to 0.87). Pairs of the 117 64x128 and 128x64 split-K picks over L2 of both shortlists at 5
    against 6 stages (benchmarks/session20) ran 1.3% faster with 6 at K >= 8192 (32 pairs, 2 slower by
    2%, down to 0.954; 7 stages 1.1%), 0.4% below (not taken). Cluster split-K stays at 5 (not measured
    again)."""
    over_l2 = p["SPLIT_K"] > 1 and not p["SPLIT_CLUSTER"]
    if p["SPLIT_K"] == 1 or (over_l2 and p["BM"] + p["BN"] <= 160):
        most = 7
    elif over_l2 and p["BM"] + p["BN"] == 192 and K >= 8192:
        most = 6
    else:
        most = 5
    return deepest_fitting(p, most)


def deepest_fitting(p: Params, most: int, fewest: int = 2) -> Params | None:
    """p with the most stages from `most` down to `fewest` that make a valid configuration, or None."""
    for stages in range(most, fewest - 1, -1):
        q = dict(p, STAGES=stages)
        if _problem(q) is None:
            return q
    return None


def tail_parts(tiles: int, slots: int, cap: int = 16, k_tiles: int = 1 << 30) -> int:
    """How many parts the kernel splits each last-round tile into (as `tail_parts` in hopper.cu:
    up to `cap`, as many as fill the last round, at most one per k-step)."""
    tail = tiles % slots
    return max(1, min(cap, slots // tail, k_tiles)) if tail else 1


def rounds(work: int, ctas_per_sm: int, tail_cap: int, K: int, num_sms: int) -> tuple[float, float, int]:
    """(rounds, useful fraction of the rounds' CTA slots, parts per last-round tile) of `work` items, as
    the cost model and the test double read a kernel: whole waves over the SMs, unless a tail split
    (hopper's TAIL_SPLIT) actually splits the last round, which it does over every CTA slot
    (SMs x CTAs per SM) with at most one part per k-step."""
    if tail_cap > 1:
        slots = num_sms * ctas_per_sm
        parts = tail_parts(work, slots, tail_cap, -(-K // 64))
        if parts > 1:
            split_rounds = work // slots + 1 / parts
            return split_rounds, work / (split_rounds * slots), parts
    waves = -(-work // num_sms)
    return float(waves), work / (waves * num_sms), 1


def tail_score(M: int, N: int, bm: int, bn: int, parts: int, num_sms: int, reduction_cost: float = 0.25) -> float:
    """`tile_score` for a tail split: full rounds of whole tiles, then a round of tiles in `parts`
    K slices, each slice paying the split-K reduction."""
    tiles = -(-M // bm) * -(-N // bn)
    busiest = tiles // num_sms + (1 + reduction_cost * math.log2(parts)) / parts  # rounds of the busiest CTA
    return _rounds_score(M, N, bm, bn, busiest, num_sms)


def streamk_score(M: int, N: int, bm: int, bn: int, num_sms: int, overhead: float = 0.1) -> float:
    """`tile_score` for stream-K: the tiles' k-steps shared evenly over the SMs, every CTA paying
    `overhead` for its partials and the fix-up."""
    busiest = -(-M // bm) * -(-N // bn) / num_sms * (1 + overhead)
    return _rounds_score(M, N, bm, bn, busiest, num_sms)


def _rounds_score(M: int, N: int, bm: int, bn: int, busiest: float, num_sms: int) -> float:
    """Useful fraction of the work issued when the busiest CTA runs `busiest` rounds of tiles (padding
    and idle SMs), discounted for small tiles as in `tile_score`."""
    tiles = -(-M // bm) * -(-N // bn)
    return (M * N) / (tiles * bm * bn) * tiles / (busiest * num_sms) * tile_intensity(bm, bn)


def _ordered_where_it_pays(p: Params, M: int, N: int) -> Params:
    """FIXUP=1 for split-K over L2 and tail splits of at most 4 parts. Measured on the H200
    (benchmarks/session10/fixup_pairs.py): 152 pairs of llm_layers shortlist picks, the same kernel both
    ways in one run; the ordered fix-up ran split-K 2 / 3 ways 10.1 / 5.1% faster (geomean of 32 / 12
    pairs) and tail splits capped at 2 or 4 parts 4.1 and 3.6% (25, 28 pairs), but tail splits of 8 or
    16 parts 3.3 and 5.2% slower (18, 24 pairs; likely because the last CTA reads every partial in
    turn, not profiled). Split-K 4 is on weak evidence (5 pairs, 3 faster, 2 slower, geomean +2.6%);
    split-K 5 and 10 were slower (0.993, 0.898; 5 and 2 pairs), 6 faster (1 pair). The rule is fitted
    to the same picks it was measured on."""
    parts = p["SPLIT_K"] if p["SPLIT_K"] > 1 and not p["SPLIT_CLUSTER"] else p["TAIL_SPLIT"]
    if not 1 < parts <= 4:
        return p
    tiles = -(-M // p["BM"]) * -(-N // p["BN"])
    if p["SPLIT_K"] > 1 and tiles * p["SPLIT_K"] * p["BM"] * p["BN"] > WS_FLOATS:  # a partial tile per item
        return p
    return dict(p, FIXUP=1)


def _tma_store_where_it_pays(p: Params, M: int, N: int, k_tiles: int, num_sms: int) -> Params:
    """p storing C through two TMA staging tiles a consumer (TMA_STORE=2, at p's stages) where K is at
    most 4 k-steps (the TMA store takes no split-K, so that is each tile's loop), there are more tiles
    than SMs and one CTA runs per SM; else p. There the epilogue weighs most, and a persistent CTA's
    bulk store drains while it loads its next tile. Measured on the H200 as pairs, the same kernel both
    ways in one run (benchmarks/session16; its tma_pairs.py prints the tables):
    - such picks: 1.071x with the TMA store (47 pairs on 9 grid125 shapes, min 1.007); 46 of them at
      K = 256, one at K = 64;
    - at most one tile an SM: 1.007 under 1M outputs (36 pairs, 12 slower by 2%, down to 0.965), 1.020
      from 1M (28 pairs, 1 slower by 2%);
    - one staging tile beside 2 CTAs an SM: 1.003 (20 pairs); two beside 2 CTAs: not measured;
    - longer loops: 128x128 tiles and larger 0.998-1.011, smaller tiles 0.950-0.972 (down to 0.82).
    The rule is fitted to the same picks it was measured on. The grid125 sweep that followed timed the
    rule's top pick (128x256, 4 stages) beside its twin without the TMA store on 11 shapes: 1.108x
    (1.063-1.194; 5 of them at K = 64). That twin is the family default, which `suggest` appends
    when no pick equals it, so on those shapes the list ends with it."""
    tiles = -(-M // p["BM"]) * -(-N // p["BN"])
    if k_tiles > 4 or tiles <= num_sms or p["CTAS_PER_SM"] != 1 or p["TMA_STORE"]:
        return p
    q = dict(p, TMA_STORE=2)
    return q if _problem(q) is None else p


def _suggest(M: int, N: int, K: int, num_sms: int) -> list[Params]:
    k_tiles = -(-K // 64)
    out = []

    def offer(score: float, p: Params) -> None:
        q = _fit_stages(_ordered_where_it_pays(p, M, N), K)
        if q is not None:
            out.append((score, _tma_store_where_it_pays(q, M, N, k_tiles, num_sms)))

    # 64x192 (one consumer): 513x2304 needs 9x12 tiles of it against 5x9 of 128x256 (fewer padded rows, a fuller wave)
    tiles_offered = [(bm, bn, consumers, 0) for bm, bn, consumers in (
        (128, 256, 2), (256, 128, 2), (128, 128, 2), (128, 128, 1), (128, 192, 2),
        (64, 256, 1), (64, 192, 1), (64, 128, 1), (64, 64, 1), (128, 64, 1))]
    tiles_offered += [(bm, bn, consumers, 1) for bm in swapped_rows(M)
                      for bn, consumers in ((128, 2), (256, 2), (128, 1), (64, 1))]
    for bm, bn, consumers, swap in tiles_offered:
        tiles = -(-M // bm) * -(-N // bn)
        bonus = 1 + 0.1 * (bm * bn >= 128 * 256)
        split = split_for(tiles, k_tiles, num_sms)
        p = {"BM": bm, "BN": bn, "CONSUMERS": consumers, "STAGES": 5, "GROUP_M": 8, "SPLIT_K": split,
             "SPLIT_CLUSTER": 0, "PERSISTENT": 1, "CTAS_PER_SM": 1, "CLUSTER_M": 1, "TAIL_SPLIT": 1, "SWAP_AB": swap,
             "STREAM_K": 0, "FIXUP": 0, "TMA_STORE": 0, "PINGPONG": 0}
        score = tile_score(M, N, bm, bn, split, num_sms) * bonus
        offer(score, p)
        # Wave quantization: a split count that is not a power of two can fill the SMs that powers leave idle.
        wave = wave_split(M, N, bm, bn, k_tiles, num_sms)
        if wave != split:
            offer(tile_score(M, N, bm, bn, wave, num_sms) * bonus, dict(p, SPLIT_K=wave))
        if split > 1:  # fewer splits: less fp32 reduction traffic (measured: often the better trade)
            offer(score * 0.97, dict(p, SPLIT_K=1))
            offer(score * 0.9, dict(p, SPLIT_K=split // 2))
        # Cluster split-K adds partials in distributed shared memory, not through L2 atomics: cheaper,
        # so it is worth splitting down to 2 k-steps per CTA.
        cluster_split = split_for(tiles, k_tiles, num_sms, cap=8, min_k_tiles=2)
        if cluster_split > 1:
            cluster_score = tile_score(M, N, bm, bn, cluster_split, num_sms, reduction_cost=0.1) * bonus
            offer(cluster_score, dict(p, SPLIT_K=cluster_split, SPLIT_CLUSTER=1, PERSISTENT=0))
        parts = tail_parts(tiles, num_sms, k_tiles=k_tiles // 4)  # at least 4 k-steps a part, as split_for
        if split == 1 and tiles > num_sms and parts > 1:
            # whole tiles for the full rounds, the last round's few tiles split over K to fill the GPU
            offer(tail_score(M, N, bm, bn, parts, num_sms) * bonus, dict(p, TAIL_SPLIT=min(16, 1 << (parts - 1).bit_length())))
        tail = tiles % num_sms
        if (bm * bn == 128 * 256 and consumers == 2 and not swap and split == 1 and tiles > num_sms
                and num_sms * 0.15 <= tail <= num_sms / 3 and k_tiles >= 128):
            # Stream-K, measured on the H200 (benchmarks/session9/): of 44 stream-K configurations on 26
            # llm_layers shapes, 4 won, on 3 shapes, all 128x256 or 256x128 tiles with two consumers,
            # K >= 8192 and a last round of 21-24% of the SMs (512x10240x8192, 640x8192x8192: 128x256
            # 3% faster than any other pick, 256x128 1.2%; 5000x3584x18944: 0.7%); the other 40 ran at
            # 0.37-0.995 of the best speed. Offered only in that neighbourhood (a last round of 15-33%),
            # where one measured configuration lost (256x128 on 5000x3584x18944, 0.992).
            offer(streamk_score(M, N, bm, bn, num_sms) * bonus, dict(p, STREAM_K=1))
        if consumers == 1 and split == 1 and tiles > num_sms:
            # two CTAs per SM: one CTA's epilogue overlaps the other's loads and math
            offer(score * (0.98 if K <= 1024 else 0.9), dict(p, CTAS_PER_SM=2))
    # Multicast pairs (CLUSTER_M=2) stay out of the shortlist: measured no faster than unpaired tiles on
    # 4096^3 and 8192^3 (benchmarks/seeds/multicast/); the search can still reach them.
    # The scores cannot tell the two reductions apart reliably: alternate them, best first.
    ranked = sorted(out, key=lambda x: -x[0])
    cluster = [p for _, p in ranked if p["SPLIT_CLUSTER"]]
    other = [p for _, p in ranked if not p["SPLIT_CLUSTER"] and not p["SWAP_AB"]]
    order = [p for _, p in ranked]
    cluster_leads = cluster and (not other or order.index(cluster[0]) < order.index(other[0]))
    first, second = (cluster, other) if cluster_leads else (other, cluster)
    plain = [p for pair in itertools.zip_longest(first, second) for p in pair if p is not None]
    # Nor the transposed product from the plain one: it takes every fourth place from the second on.
    # Judged on three llm_layers sweeps' measurements (benchmarks/session7/README.md): the winning
    # transposed picks rank high among their kind, the plain winners anywhere in the first 12, and
    # this order keeps both at 16 picks where taking kinds in turn lost 0.1%.
    swapped = [p for _, p in ranked if p["SWAP_AB"]]
    merged: list[Params] = []
    while plain or swapped:
        take_swap = swapped and (len(merged) % 4 == 1 or not plain)
        merged.append((swapped if take_swap else plain).pop(0))
    return [q for p in merged for q in (p, _deep_beside(p, k_tiles), _pingpong_beside(p, M, N, k_tiles, num_sms),
                                        *_transposed_beside(p, M), _narrow_beside(p, M, N, k_tiles, num_sms))
            if q is not None]


def _narrow_beside(p: Params, M: int, N: int, k_tiles: int, num_sms: int) -> Params | None:
    """A transposed product of 32-row by 64-column tiles with K unsplit and the deepest pipeline (up to 13
    stages), offered right after p, where p is a plain 64x64 pick, M > 64, a tile runs 16 to 64 k-steps
    (K = 961-4096; measured at 1024 and 4096) and those narrow tiles make one nearly full wave (90-100% of the SMs); else None.
    That is cuBLASLt's choice on such shapes (session 28's H100 sweep recorded 32x64 tiles, K unsplit, on
    1024x256x4096 and 4096x64x4096), where the shortlist had 64x64 tiles split over K or half a wave of them.

    Measured on an H100 (benchmarks/session29, narrow_ab.py: 20 shapes below the best library, 32/48-row
    transposed tiles against the sweep's winner in one run): 1.034-1.088x on four of the six grid125 shapes
    this rule takes (1024x256x4096, 1024x256x1024, 256x1024x1024, 4096x64x1024; 128 tiles each; the other
    two, 256x1024x4096 and 4096x64x4096, were not measured with it); at K = 16384 the same tiles ran
    0.69-0.79x, with a split over K or more than one wave 0.55-0.97x, 48x128 tiles in one unsplit wave
    0.98x (255x2816x2048). The rule is fitted to those four."""
    if (M <= 64 or p["SWAP_AB"] or (p["BM"], p["BN"]) != (64, 64) or not 16 <= k_tiles <= 64
            or not 0.9 * num_sms <= -(-M // 32) * -(-N // 64) <= num_sms):
        return None
    narrow = dict(p, BM=32, SWAP_AB=1, CONSUMERS=1, SPLIT_K=1, SPLIT_CLUSTER=0, FIXUP=0, TAIL_SPLIT=1, STREAM_K=0,
                  PERSISTENT=1, CTAS_PER_SM=1, CLUSTER_M=1, TMA_STORE=0, PINGPONG=0,
                  GROUP_M=p["GROUP_M"] if p["GROUP_M"] in (1, 8) else 8)
    return deepest_fitting(narrow, 13)


def _pingpong_beside(p: Params, M: int, N: int, k_tiles: int, num_sms: int) -> Params | None:
    """p as ping-pong consumers (PINGPONG=1, p's own epilogue, the deepest pipeline up to 8 stages: 6 for
    these tiles, as for p), offered right after p, where p is a 128x128 pick with more tiles than SMs and
    at most 16 k-steps a tile, and the family takes it as ping-pong (`_problem`: two consumers, persistent,
    one CTA an SM, not transposed, no split of any kind); else None. There a tile's epilogue weighs as much
    as its loop, and one consumer stores while the other computes.

    Measured on the H200 as pairs, the same pick both ways in one run (benchmarks/session25, from session
    24's pingpong_ab.py over 73 grid125 and llm_layers shapes with more 128x128 tiles than SMs): from such
    picks 1.090x at 4 k-steps (K = 256: 7 pairs, min 1.074, the pick's TMA store) and 1.046x at 16
    (K = 1024: 7 pairs, min 1.020); between and below (K = 64-768) no such pick was paired, so the rule
    reaches there unmeasured. The best ping-pong kernel against the shape's sweep winner: 1.030-1.060x on
    the 7 K = 256 shapes where a CTA gets at most 8 tiles (0.965-1.002 on the 3 where it gets more),
    1.009-1.016x on 7 of 10 K = 1024 shapes (0.980-0.999 on the others). On longer loops the twin still
    gained a little over its 128x128 pick (1.011x, 14 pairs), but the shapes' winners there are larger
    tiles, which the best ping-pong kernel did not beat (0.80-0.99x): no place on the list. The rule is
    fitted to the pairs it was measured on; the shortlists it makes had not been swept when it was
    written. Not offered for a pick in a 2-CTA cluster: ping-pong pairs sharing B by multicast ran
    0.85-0.98x the same kernels unpaired (benchmarks/session26, 32 shapes on an H100)."""
    if ((p["BM"], p["BN"]) != (128, 128) or k_tiles > 16 or -(-M // 128) * -(-N // 128) <= num_sms
            or p.get("CLUSTER_M", 1) > 1):
        return None
    return deepest_fitting(dict(p, PINGPONG=1), 8)  # None where _problem refuses ping-pong for p


def _deep_beside(p: Params, k_tiles: int, deepest: int = 16) -> Params | None:
    """p with the deepest pipeline that fits up to `deepest` stages, offered right after p, where p's
    stages are small (BM + BN at most 160 rows of 64 k-values) and each work item runs at least 64
    k-steps, or 16 to 63 without a cluster split; else None. Measured on the H200 as pairs
    (benchmarks/session14, run_c): picks of at least 64 k-steps ran 1.066x with the deepest pipeline
    (71 pairs, 11 slower by 2%), so the variant goes beside its pick rather than in its place. As a
    shortlist of 24 (benchmarks/session15, main's list and this one timed side by side), it raised
    grid125 from 0.960 to 0.962 of the best library and the 38 llm_layers shapes where the lists differ
    (of 42; the time budget cut 4) from 0.988 to 0.994, and lowered none (64x4096x4096 0.885 -> 0.961,
    129x4096x4096 1.040 -> 1.180). The library runs 13-16 stages on such shapes (cuBLAS under ncu,
    benchmarks/session14). Items of 16-63 k-steps (benchmarks/session21, gap_ab.py, rule written first):
    1.015x (25 pairs, grid125) and 1.046x (44 pairs, llm_layers, down to 0.83); beside the 24 picks it
    beat the shape's best by 2% on 9 and 4 shapes, and in the shortlist of 24 it makes, the best measured
    member is 1.3% and 1.6% faster (geomean over the 26 and 25 measured shapes whose list it changes;
    single evaluations) and slower on none."""
    steps = k_tiles // max(1, p["SPLIT_K"])
    if p["BM"] + p["BN"] > 160 or steps < 16 or (steps < 64 and p["SPLIT_CLUSTER"]):
        return None
    return deepest_fitting(p, deepest, p["STAGES"] + 1)


def _transposed_beside(p: Params, M: int) -> list[Params]:
    """p as a transposed product of 32- and of 48-row tiles, offered right after p, where p is a plain
    product of 64-row tiles and M fits one such tile with less padding than a transposed tile would save
    (`swapped_rows(M)` is empty, so no other transposed pick is offered: M = 57 to 64); else nothing.
    The smaller tiles double the CTAs on shapes with few tiles. Measured on the H200 (benchmarks/session21,
    gap_ab.py, rule written first, as variants of the first six hopper picks at M <= 64): on grid125's 25
    M = 64 shapes they beat the shape's best of 24 picks by 2% on 12 (up to 10.5%, 64x64x4096), and the
    shortlist of 24 they make has a best measured member 2.5% faster there (geomean; 64x1024x4096 3.5%
    slower, picks pushed out of the 24). On llm_layers they won nowhere (29 shapes, most of them M < 57,
    where transposed picks were already offered), so they are offered only where none are (a narrowing
    chosen after the run, measured at M = 61 and 64 only: 1.002 on the 4 llm_layers shapes it touches)."""
    if M > 64 or swapped_rows(M) or p["SWAP_AB"] or p["BM"] != 64:
        return []
    return [q for bm in (32, 48) if _problem(q := dict(p, SWAP_AB=1, BM=bm)) is None]


def swapped_rows(M: int) -> list[int]:
    """Tile rows for a transposed product (SWAP_AB=1) on M rows: M in the fewest tiles of at most 256
    rows, or 1-2 more, of nearly equal parts rounded up to 8, where that pads M at least 3% less than the plain product's 64-row
    tiles do (elsewhere the plain tiles lose nothing to padding and win on a simpler epilogue)."""
    plain_padding = M / (-(-M // 64) * 64)
    rows = []
    for tiles in range(-(-M // 256), -(-M // 256) + 3):
        bm = -(-math.ceil(M / tiles) // 8) * 8  # the tile's share of M, up to a multiple of 8
        if bm not in rows and M / (tiles * bm) >= plain_padding * 1.03 and -(-M // bm) == tiles:
            rows.append(bm)
    return rows


HOPPER = Family(
    name="hopper",
    description="TMA + mbarrier pipeline + wgmma, producer/consumer warpgroups, persistent, split-K (L2 atomics "
                "or a cluster adding over DSMEM), the last round's tiles split over K or shared out stream-K, one or "
                "two CTAs per SM, 2-CTA clusters multicasting B, ping-pong consumers (one's epilogue beside the "
                "other's wgmmas)",
    space={"BM": SWAPPED_BM, "BN": (64, 128, 192, 256), "CONSUMERS": (1, 2), "STAGES": tuple(range(2, 17)),
           "GROUP_M": (1, 4, 8, 16), "SPLIT_K": ANY_SPLITS, "SPLIT_CLUSTER": (0, 1),
           "PERSISTENT": (0, 1), "CTAS_PER_SM": (1, 2), "CLUSTER_M": (1, 2), "TAIL_SPLIT": (1, 2, 4, 8, 16),
           "SWAP_AB": (0, 1), "STREAM_K": (0, 1, 2), "FIXUP": (0, 1), "TMA_STORE": (0, 1, 2),
           "PINGPONG": (0, 1)},
    template="hopper.cu",
    _problem=_problem,
    _derive=_derive,
    default={"BM": 128, "BN": 256, "CONSUMERS": 2, "STAGES": 4, "GROUP_M": 8, "SPLIT_K": 1, "SPLIT_CLUSTER": 0,
             "PERSISTENT": 1, "CTAS_PER_SM": 1, "CLUSTER_M": 1, "TAIL_SPLIT": 1, "SWAP_AB": 0, "STREAM_K": 0,
             "FIXUP": 0, "TMA_STORE": 0, "PINGPONG": 0},
    _suggest=_suggest,
    later_genes={"TAIL_SPLIT": 1, "SWAP_AB": 0, "STREAM_K": 0, "FIXUP": 0, "TMA_STORE": 0, "PINGPONG": 0},
    _subspaces=_subspaces,
    growing="STAGES",  # only the shared memory check reads it
    _values_for=lambda key, p: (SWAPPED_BM if p["SWAP_AB"] else PLAIN_BM) if key == "BM" else None,
)

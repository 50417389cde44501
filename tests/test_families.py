import dataclasses
import os
import random

import pytest

from evo.core.kernel import parse_declaration, waits_first_in_ptx
from evo.core.shapes import Shape, grid_shapes
from evo.families import FAMILIES
from evo.families._family import wave_split

ODD = [Shape(1, 1, 1), Shape(1, 4096, 4096), Shape(77, 4096, 4096), Shape(333, 11008, 4096), Shape(5, 7, 13),
       Shape(64, 64, 16384), Shape(8192, 8192, 8192), Shape(100, 4095, 4096)]


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_defaults_and_random_configs_are_valid(name):
    fam = FAMILIES[name]
    assert fam.valid(fam.default)
    rng = random.Random(0)
    for _ in range(20):
        assert fam.valid(fam.random(rng))


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_invalid_parameters_are_explained_and_repaired(name):
    fam = FAMILIES[name]
    bad = dict(fam.default)
    key = next(iter(fam.space))
    bad[key] = 3  # not an allowed value anywhere
    assert "not one of" in fam.problem(bad)
    with pytest.raises(ValueError):
        fam.render(bad)
    fixed = fam.repair(bad, random.Random(1))
    assert fam.valid(fixed) and sum(fixed[k] != fam.default[k] for k in fam.space) <= 2


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_repair_picks_among_the_nearest_valid_genomes_in_their_order(name):
    """repair's vectorized distance (issue 14: it was most of the host's time between generations)
    draws from exactly the ties the plain definition gives, so seeded searches decide as before."""
    fam, rng = FAMILIES[name], random.Random(3)
    for i in range(20):
        params = {k: rng.choice(v) for k, v in fam.space.items()}
        params[rng.choice(list(fam.space))] = 3 if i % 2 else None  # off the genome, or not a number
        distance = {j: sum(p[k] != params.get(k) for k in fam.space) for j, p in enumerate(fam.all_valid)}
        least = min(distance.values())
        nearest = [fam.all_valid[j] for j, d in distance.items() if d == least]
        assert fam.repair(params, random.Random(i)) == random.Random(i).choice(nearest)


def test_every_shape_is_covered_by_some_family():
    """Together the families support every shape M, N, K >= 1 (simt needs no alignment)."""
    for shape in ODD + grid_shapes([64, 4096, 16384]):
        assert any(parse_declaration(f.render(f.default)).supports(shape) for f in FAMILIES.values()), shape


def test_tensor_core_families_need_aligned_rows():
    for name in ("ampere", "hopper", "skinny"):
        decl = parse_declaration(FAMILIES[name].render(FAMILIES[name].default))
        assert decl.supports(Shape(77, 4096, 4096)) and decl.supports(Shape(1, 8, 8))
        assert not decl.supports(Shape(100, 4095, 4096)) and not decl.supports(Shape(64, 64, 13))


def test_hopper_declares_tensor_maps_and_a_persistent_grid():
    fam = FAMILIES["hopper"]
    launch = parse_declaration(fam.render(fam.default)).launch_for(Shape(8192, 8192, 8192), num_sms=132)
    assert launch.grid == (132, 1, 1) and launch.block == (384, 1, 1)
    assert [t.operand for t in launch.tensor_maps] == ["A", "B"]
    assert launch.tensor_maps[0].box == (64, 128) and launch.tensor_maps[1].box == (64, 64)
    assert launch.smem <= 232448


def test_split_k_workspace_limits_are_declared():
    fam = FAMILIES["hopper"]
    decl = parse_declaration(fam.render(dict(fam.default, SPLIT_K=8)))
    assert decl.supports(Shape(64, 64, 16384))
    assert not decl.supports(Shape(16384, 16384, 16384))  # tiles * BM * BN floats > the workspace


@pytest.mark.parametrize("shape", ODD)
def test_suggestions_are_valid_and_support_the_shape(shape):
    for fam in FAMILIES.values():
        picks = fam.suggest(shape.M, shape.N, shape.K)
        if fam.name == "skinny" and shape.M > 64:  # its heuristic covers small M only, with no fallback pick
            assert picks == []
            continue
        assert picks and all(fam.valid(p) for p in picks)


def test_suggestions_split_k_for_skinny_shapes():
    (first, *_) = FAMILIES["hopper"].suggest(64, 64, 16384)
    assert first["SPLIT_K"] >= 8
    (big, *_) = FAMILIES["hopper"].suggest(8192, 8192, 8192)
    assert big["SPLIT_K"] == 1 and big["BM"] * big["BN"] >= 128 * 256


def test_cluster_split_k_declares_one_cluster_per_tile():
    fam = FAMILIES["hopper"]
    params = dict(fam.default, BM=128, BN=128, SPLIT_K=4, SPLIT_CLUSTER=1, PERSISTENT=0)
    source = fam.render(params)
    assert "evo_splitk_ws" not in source  # no global workspace: partials meet in shared memory
    launch = parse_declaration(source).launch_for(Shape(256, 1024, 4096), num_sms=132)
    assert launch.cluster == (4, 1, 1) and launch.grid == (2 * 8 * 4, 1, 1)
    assert launch.smem >= 128 * (128 + 8) * 4  # the padded fp32 partial tile fits


@pytest.mark.parametrize("change, reason", [
    (dict(SPLIT_CLUSTER=1), "needs SPLIT_K > 1"),
    (dict(SPLIT_CLUSTER=1, SPLIT_K=16, PERSISTENT=0), "2, 4 or 8 splits"),
    (dict(SPLIT_CLUSTER=1, SPLIT_K=3, PERSISTENT=0), "2, 4 or 8 splits"),
    (dict(SPLIT_CLUSTER=1, SPLIT_K=4), "PERSISTENT=0"),
    (dict(CTAS_PER_SM=2), "one consumer warpgroup"),
    (dict(CLUSTER_M=2, SPLIT_K=2, SPLIT_CLUSTER=1, PERSISTENT=0), "need SPLIT_CLUSTER=0"),
    (dict(CLUSTER_M=2, TAIL_SPLIT=4), "CLUSTER_M=1"),
    (dict(CTAS_PER_SM=2, CONSUMERS=1, BM=64, STAGES=2), "too few for one wgmma"),
    (dict(CTAS_PER_SM=2, CONSUMERS=1, BN=128, STAGES=5), "2 CTA(s) per SM"),
    (dict(TAIL_SPLIT=4, SPLIT_K=2), "needs SPLIT_K=1"),
    (dict(TAIL_SPLIT=4, PERSISTENT=0), "PERSISTENT=1"),
    (dict(BM=136), "only with SWAP_AB=1"),
    (dict(SWAP_AB=1, BM=136, BN=256), "more than 128 fp32 accumulators"),
    (dict(SWAP_AB=1, BM=136, BN=192), "columns (BN)"),
    (dict(SWAP_AB=1, CLUSTER_M=2), "takes neither clusters"),
    (dict(STREAM_K=1, SPLIT_K=2), "STREAM_K shares out the last round"),
    (dict(STREAM_K=1, TAIL_SPLIT=4), "no TAIL_SPLIT"),
    (dict(STREAM_K=1, PERSISTENT=0), "PERSISTENT=1"),
])
def test_hopper_combinations_that_cannot_work_are_explained(change, reason):
    fam = FAMILIES["hopper"]
    assert reason in fam.problem(dict(fam.default, **change))


def test_two_ctas_per_sm_split_the_register_file():
    fam = FAMILIES["hopper"]
    one = fam.render(dict(fam.default, BM=64, BN=128, CONSUMERS=1, STAGES=4))
    two = fam.render(dict(fam.default, BM=64, BN=128, CONSUMERS=1, STAGES=4, CTAS_PER_SM=2))
    assert "setmaxnreg.inc.sync.aligned.u32 240" in one and "setmaxnreg.inc.sync.aligned.u32 216" in two
    launch = parse_declaration(two).launch_for(Shape(8192, 8192, 256), num_sms=132)
    assert launch.grid == (264, 1, 1) and 2 * (launch.smem + 1024) <= 233472


def test_suggestions_offer_cluster_split_k_for_long_k_and_few_tiles():
    picks = FAMILIES["hopper"].suggest(256, 1024, 4096, limit=6)
    assert any(p["SPLIT_CLUSTER"] == 1 for p in picks) and any(p["SPLIT_CLUSTER"] == 0 for p in picks)


def test_multicast_pairs_launch_two_ctas_per_cluster():
    fam = FAMILIES["hopper"]
    source = fam.render(dict(fam.default, CLUSTER_M=2))
    assert "multicast::cluster" in source
    decl = parse_declaration(source)
    big = decl.launch_for(Shape(8192, 8192, 8192), num_sms=132)
    assert big.cluster == (2, 1, 1) and big.grid == (132, 1, 1)
    small = decl.launch_for(Shape(77, 4096, 4096), num_sms=132)  # one M tile: its pair's second CTA idles
    assert small.cluster == (2, 1, 1) and small.grid == (2 * 16, 1, 1)


@pytest.mark.parametrize("change", [
    dict(BM=64, BN=64, CONSUMERS=1, SPLIT_K=8, STAGES=7), dict(BM=64, BN=128, CONSUMERS=1, SPLIT_K=4, STAGES=6, FIXUP=1),
    dict(BM=128, BN=128, SPLIT_K=4, STAGES=5, PERSISTENT=0)])
def test_multicast_pairs_split_k_over_l2_with_a_workspace_slot_for_each_tile_of_a_pair(change, compiler):
    """A pair (CLUSTER_M=2) walks items of two M tiles, each in SPLIT_K slices; its CTAs add their
    partials in slots of their own (pair_tile, which the schedule check runs on the host), and the
    workspace bounds count a pair's second tile even where it lies beyond M. cuBLASLt's pick on
    256x256x16384 is of this kind (64x64 tiles, split-K 8, 2x1 clusters; benchmarks/session28)."""
    params, source = _compiled_without_spills(dict(CLUSTER_M=2, **change), compiler, spills=0)
    assert "w.slot = w.slot * CLUSTER_M + m_rank; w.base = w.slot * w.parts;" in source
    assert f"// @evo requires = cdiv(cdiv(M, {params['BM']}), 2) * 2 * cdiv(N, {params['BN']})" in source
    decl = parse_declaration(source)
    launch = decl.launch_for(Shape(256, 256, 16384), num_sms=132)
    pair_items = -(-256 // params["BM"] // 2) * (256 // params["BN"]) * params["SPLIT_K"]
    assert launch.cluster == (2, 1, 1) and launch.grid == (2 * min(66, pair_items) if params["PERSISTENT"]
                                                           else 2 * pair_items, 1, 1)
    # 3 tile rows: 4 slots a column of tiles, the pair's second tile of the last row beyond M
    def cdiv(a: int, b: int) -> int:
        return -(-a // b)
    slots = cdiv(cdiv(333, params["BM"]), 2) * 2 * cdiv(11008, params["BN"])
    fits = slots * params["BM"] * params["BN"] * (params["SPLIT_K"] if params["FIXUP"] else 1) <= 8 * 1024 * 1024
    assert decl.supports(Shape(333, 11008, 4096)) == fits


def test_wave_split_fills_the_sms_that_powers_of_two_leave_idle():
    # 257 x 2048 in 64 x 256 tiles: 40 tiles; 3 splits fill 120 of 132 SMs (2 fill 80, 4 spill a second wave)
    assert wave_split(257, 2048, 64, 256, k_tiles=112, num_sms=132) == 3
    assert wave_split(8192, 8192, 128, 256, k_tiles=128, num_sms=132) == 1
    picks = FAMILIES["hopper"].suggest(257, 2048, 7168, limit=12)
    assert any(p["SPLIT_K"] == 3 for p in picks)


def test_skinny_covers_small_m_and_streams_b_over_every_sm():
    fam = FAMILIES["skinny"]
    for M in (1, 3, 17, 64):
        picks = fam.suggest(M, 4096, 14336)
        assert picks and all(p["MP"] >= M and p["MP"] < 2 * max(M, 8) for p in picks)
        launch = parse_declaration(fam.render(picks[0])).launch_for(Shape(M, 4096, 14336), num_sms=132)
        assert launch.grid[0] >= 132  # every SM gets a slice of B
    assert fam.suggest(65, 4096, 4096) == []


def test_skinny_is_correct_for_any_m_by_row_tiles():
    fam = FAMILIES["skinny"]
    decl = parse_declaration(fam.render(dict(fam.default, MP=8, SPLIT_K=1)))
    assert decl.launch_for(Shape(1000, 256, 64), num_sms=132).grid == (125 * 2, 1, 1)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_every_family_waits_for_the_grid_before_it_first_in_its_ptx(name, compiler):
    """Exported kernels are launched as programmatic dependents (evo.dispatch) where their compiled
    code waits for the previous grid before anything else: every family's must."""
    fam = FAMILIES[name]
    for params in [fam.default, fam.random(random.Random(1))]:
        assert waits_first_in_ptx(compiler.ptx(fam.render(params))), params


ENTRY = 'extern "C" __global__ void hgemm(const half* A, const half* B, half* C, int M, int N, int K) {'
WAIT = 'asm volatile("griddepcontrol.wait;" ::: "memory");'


BAR_INIT = ('__shared__ unsigned long long bar;\n  if (threadIdx.x == 0) asm volatile('
            '"mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"((unsigned)__cvta_generic_to_shared(&bar)));\n'
            '  __syncthreads();')


@pytest.mark.parametrize("body,waits", [
    (f"{WAIT}\n  C[threadIdx.x] = A[threadIdx.x];", True),
    (f"C[threadIdx.x] = A[threadIdx.x];\n  {WAIT}", False),  # reads before it waits
    (f"if (M > 1) {{ {WAIT} }}\n  C[threadIdx.x] = A[threadIdx.x];", False),  # waits only on a branch
    # a prologue on shared memory and barriers (as hopper's), on one thread, before the wait
    (f"{BAR_INIT}\n  {WAIT}\n  C[threadIdx.x] = A[threadIdx.x];", True),
    (f"if (M == 0) return;\n  {WAIT}\n  C[threadIdx.x] = A[threadIdx.x];", True),  # a path that leaves first
    # the same prologue reading global memory on one thread
    (f"__shared__ half s;\n  if (threadIdx.x == 0) s = A[0];\n  __syncthreads();\n  {WAIT}\n  C[threadIdx.x] = s;",
     False),
    (f'asm volatile("prefetch.global.L2 [%0];" :: "l"(A));\n  {WAIT}\n  C[threadIdx.x] = A[threadIdx.x];',
     False),  # prefetching data, not a tensor map
    # a load dressed as a label's statement
    (f'int v; asm volatile("lbl: ld.global.u32 %0, [%1];" : "=r"(v) : "l"(C));\n  {WAIT}\n  C[v] = A[0];', False),
    # a store or load behind an allowed instruction or a declaration on the same line of inline asm
    (f'asm volatile("mov.u32 %0, %0; st.global.u32 [%1], %0;" :: "r"(M), "l"(C) : "memory");\n  {WAIT}', False),
    (f'asm volatile(".reg .u32 t9; ld.global.u32 t9, [%0]; st.global.u32 [%1], t9;" :: "l"(A), "l"(C));\n  {WAIT}',
     False),
    # a jump over the wait
    (f'asm volatile("bra.uni SKIP;");\n  {WAIT}\n  asm volatile("SKIP:");\n  C[threadIdx.x] = A[threadIdx.x];', False),
    # one label name in two scopes: the branch takes its own block's, to the store
    ('asm volatile("{\\n bra.uni LX;\\n LX:\\n st.global.b16 [%0], %1;\\n}" :: "l"(C), "h"((unsigned short)7));\n'
     'asm volatile("{\\n LX:\\n griddepcontrol.wait;\\n}" ::: "memory");', False),
    # strings ptxas takes as a pragma: a comment's opening, or a wait, inside one
    ('asm volatile(".pragma \\"/*\\";\\n st.global.b16 [%0], %1;\\n .pragma \\"*/\\";" :: "l"(C), '
     f'"h"((unsigned short)7));\n  {WAIT}', False),
    ('asm volatile(".pragma \\"x;griddepcontrol.wait;\\";\\n st.global.b16 [%0], %1;" :: "l"(C), '
     f'"h"((unsigned short)7));\n  {WAIT}', False),
    (f"#pragma unroll 1\n  for (int i = 0; i < M; ++i) asm volatile(\"\");\n  {WAIT}\n  C[0] = A[0];", True),  # nvcc's own
])
def test_the_pdl_check_reads_the_compiled_code(body, waits, compiler):
    ptx = compiler.ptx(f"#include <cuda_fp16.h>\n{ENTRY}\n  {body}\n}}\n")
    assert waits_first_in_ptx(ptx) is waits


def test_text_that_only_looks_like_a_wait_first_is_not_taken_for_one(compiler):
    """Source text can say the wait comes first while the code does otherwise: a macro that puts a
    read before it, or an old entry point left in a comment. The check reads the PTX."""
    macro = f"#include <cuda_fp16.h>\n#define asm C[0] = A[0]; asm\n{ENTRY}\n  {WAIT}\n}}\n"
    commented = (f"#include <cuda_fp16.h>\n/* {ENTRY}\n  {WAIT}\n}} */\n"
                 f"{ENTRY}\n  C[threadIdx.x] = A[threadIdx.x];\n  {WAIT}\n}}\n")
    # inline asm can write anything into the PTX, a commented-out entry point that waits first included
    fake = 'asm volatile("// .entry hgemm(\\n{\\ngriddepcontrol.wait;\\n}");'
    injected = (f"#include <cuda_fp16.h>\n__device__ __noinline__ void note() {{ {fake} }}\n"
                f"{ENTRY}\n  C[threadIdx.x] = A[threadIdx.x];\n  note();\n  {WAIT}\n}}\n")
    for source in (macro, commented, injected):
        assert not waits_first_in_ptx(compiler.ptx(source))
    assert not waits_first_in_ptx("")  # no entry point at all


SCHEDULE_CHECK = r"""
#include <cstdio>
#include <vector>
%(defines)s
%(schedule)s
// Every (tile, k-step) is computed by exactly one item; every reduction slot gathers exactly `parts`
// (for stream-K at most STREAM_K_MAX_SHARES + 2, the partials one CTA adds up)
// items, all of one tile; a tail split's slots stay below the number of CTAs (the workspace's size)
// and its last round has at most one item per CTA. Stream-K: every item with k-steps takes part in
// its tile's fix-up, each partial in a workspace slot of its own that lies inside the workspace, and
// the parts of a slot are numbered 0 .. parts-1 once each (its slots: the last two rounds' tiles;
// with STREAM_K 2 the last round's alone). The same for the partials of FIXUP 1 (ordered split-K).
// A multicast pair (CLUSTER_M 2) takes each item as two tiles of M, one a CTA (pair_tile), the last
// pair's second tile possibly beyond M: its k-steps count once too, and its slot is its own.
int check(int M, int N, int K, int slots) {
    const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN, k_tiles = (K + BK - 1) / BK;
    const int pair_rows = (tiles_m + CLUSTER_M - 1) / CLUSTER_M, item_tiles = pair_rows * tiles_n;
    const int tiles = item_tiles * CLUSTER_M, items = count_items(item_tiles, slots, k_tiles);
    // FIXUP 1 gives every partial a workspace tile of its own; the declaration's requires lines keep
    // larger products (or rounds of CTAs) away from the kernel
    if (FIXUP && (long long)(TAIL_SPLIT > 1 ? slots : tiles * SPLIT_K) * BM * BN > EVO_WS_FLOATS) return 0;
    const int slot_limit = STREAM_K ? 2 * slots : TAIL_SPLIT > 1 ? slots : tiles;
    std::vector<int> seen(tiles * k_tiles, 0), slot_tile(slot_limit, -1), slot_items(slot_limit, 0);
    std::vector<int> slot_parts(slot_limit, 0);
    std::vector<std::vector<char>> slot_part_seen(slot_limit);
    std::vector<char> partial_used(EVO_WS_FLOATS / (BM * BN) + 1, 0);
    for (int item = 0; item < items; ++item) for (int rank = 0; rank < CLUSTER_M; ++rank) {
        Work w = pair_tile(work_item(item, pair_rows, tiles_n, k_tiles, slots), rank);
        if (w.m0 < 0 || w.m0 >= pair_rows * CLUSTER_M * BM || w.n0 < 0 || w.n0 >= tiles_n * BN) return 1;
        const int tile = (w.m0 / BM) * tiles_n + w.n0 / BN;
        for (int kt = w.kt_begin; kt < w.kt_end; ++kt) seen[tile * k_tiles + kt] += 1;
        // STREAM_K 2 shares out the last round alone: the full rounds before it take whole tiles
        if (STREAM_K == 2 && item < item_tiles / slots * slots && (w.kt_begin != 0 || w.kt_end != k_tiles)) return 9;
        if (STREAM_K && w.kt_begin >= w.kt_end) continue;  // an empty item: the kernel skips it
        if (w.parts == 1) continue;
        if (w.slot < 0 || w.slot >= slot_limit) return 2;
        if (slot_tile[w.slot] != -1 && (slot_tile[w.slot] != tile || slot_parts[w.slot] != w.parts)) return 3;
        slot_tile[w.slot] = tile; slot_parts[w.slot] = w.parts; slot_items[w.slot] += 1;
        if (STREAM_K || FIXUP) {
            const long long index = (long long)w.base + w.part;
            if (w.part < 0 || w.part >= w.parts || (STREAM_K && w.parts > STREAM_K_MAX_SHARES + 2) || index < 0
                || (index + 1) * BM * BN > EVO_WS_FLOATS || partial_used[index]) return 7;
            partial_used[index] = 1;
            slot_part_seen[w.slot].resize(w.parts, 0);
            if (slot_part_seen[w.slot][w.part]) return 8;
            slot_part_seen[w.slot][w.part] = 1;
        }
    }
    for (int v : seen) if (v != 1) return 4;
    if (TAIL_SPLIT > 1 && items - item_tiles / slots * slots > slots) return 6;  // the last round fits the CTAs
    for (int s = 0; s < slot_limit; ++s)
        if (slot_tile[s] >= 0 && slot_items[s] != slot_parts[s]) return 5;
    return 0;
}
int main() {
    const int shapes[][4] = {%(shapes)s};
    for (const auto& s : shapes) {
        const int bad = check(s[0], s[1], s[2], s[3]);
        if (bad) { std::printf("%%d %%d %%d %%d: check %%d failed\n", s[0], s[1], s[2], s[3], bad); return 1; }
    }
    std::printf("ok\n");
    return 0;
}
"""


@pytest.mark.parametrize("change", [dict(TAIL_SPLIT=4), dict(TAIL_SPLIT=16, BM=64, BN=64, CONSUMERS=1),
                                    dict(SPLIT_K=3, PERSISTENT=0), dict(GROUP_M=1), dict(STREAM_K=1),
                                    dict(STREAM_K=1, BM=64, BN=64, CONSUMERS=1, GROUP_M=1),
                                    dict(STREAM_K=2, BN=128), dict(STREAM_K=2, BM=64, BN=64, CONSUMERS=1),
                                    dict(TAIL_SPLIT=4, FIXUP=1), dict(SPLIT_K=3, PERSISTENT=0, FIXUP=1),
                                    dict(SPLIT_K=2, FIXUP=1, BM=64, BN=64, CONSUMERS=1),
                                    dict(TAIL_SPLIT=16, FIXUP=1, BM=64, BN=64, CONSUMERS=1),
                                    dict(CLUSTER_M=2), dict(CLUSTER_M=2, SPLIT_K=8, BM=64, BN=64, CONSUMERS=1),
                                    dict(CLUSTER_M=2, SPLIT_K=3, PERSISTENT=0),
                                    dict(CLUSTER_M=2, SPLIT_K=4, FIXUP=1, BM=64, BN=128, CONSUMERS=1)])
def test_the_kernels_own_schedule_covers_every_k_step_once(change, tmp_path):
    """The persistent schedule of hopper.cu itself (not a copy of it), compiled for the host by nvcc:
    whole tiles in full rounds, the last round's tiles split over K (a tail split) or shared out
    stream-K, plain split-K; multicast pairs, with split-K too (a workspace slot for each tile of a pair)."""
    import re
    import shutil
    import subprocess
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    if not os.path.exists(nvcc) and not shutil.which("nvcc"):
        pytest.skip("needs nvcc (CUDA 13) to compile the schedule for the host")
    fam = FAMILIES["hopper"]
    source = fam.render(dict(fam.default, STAGES=2, **change))
    names = ("BM|BN|BK|GROUP_M|SPLIT_K|TAIL_SPLIT|STREAM_K|FIXUP|STREAM_K_MIN_STEPS|STREAM_K_MAX_SHARES|EVO_WS_FLOATS|"
             "CLUSTER_M")
    defines = "\n".join(re.findall(rf"^#define (?:{names}) .*$", source, re.M))
    defines += "\n#ifndef EVO_WS_FLOATS\n#define EVO_WS_FLOATS (8 * 1024 * 1024)\n#endif"
    schedule = source[source.index("struct Work"):source.index('extern "C" __global__')]
    schedule = "#include <algorithm>\nusing std::min; using std::max;\n" + schedule.replace(
        "__device__ __forceinline__", "static inline")
    shapes = [(M, N, K, slots) for M in (1, 64, 257, 512, 1500, 4097) for N in (64, 2304, 10240)
              for K in (64, 640, 8192) for slots in (132, 264, 7)]
    shapes.append((2048, 2048, 640, 132))  # 64x64 tiles split 2 ways with FIXUP: the workspace exactly full
    (tmp_path / "check.cpp").write_text(SCHEDULE_CHECK % {
        "defines": defines, "schedule": schedule,
        "shapes": ", ".join("{{{}, {}, {}, {}}}".format(*s) for s in shapes)})
    subprocess.run([nvcc, "-x", "c++", "-std=c++17", "-o", str(tmp_path / "check"), str(tmp_path / "check.cpp")],
                   check=True, capture_output=True, text=True)
    assert subprocess.run([str(tmp_path / "check")], capture_output=True, text=True).stdout.strip() == "ok"


def test_parameters_archived_before_a_gene_existed_still_render_and_mutate():
    """Kernels archived before TAIL_SPLIT existed carry no value for it: they are the TAIL_SPLIT=1 kernels."""
    from mutators.structural import encode
    fam = FAMILIES["hopper"]
    old = {k: v for k, v in fam.default.items() if k != "TAIL_SPLIT"}
    assert fam.valid(old) and fam.render(old) == fam.render(fam.default)
    assert encode(fam, old) == encode(fam, fam.default)
    assert fam.repair(dict(old, STAGES=99), random.Random(0))["TAIL_SPLIT"] == 1


def test_shortlists_split_the_last_round_where_it_leaves_most_sms_idle():
    """512x10240 has 160 tiles of 128x256: a second round of 28 tiles on 132 SMs. The shortlist
    leads with stream-K (measured 2-4% ahead of the tail split there), then a tail split; where the
    tiles fill whole rounds it offers neither."""
    picks = FAMILIES["hopper"].suggest(512, 10240, 8192)
    assert picks[0]["STREAM_K"] == 1 and (picks[0]["BM"], picks[0]["BN"], picks[0]["CONSUMERS"]) == (128, 256, 2)
    tail = next(p for p in picks if p["TAIL_SPLIT"] > 1)
    assert tail["SPLIT_K"] == 1 and picks.index(tail) < 4
    launch = parse_declaration(FAMILIES["hopper"].render(tail)).launch_for(Shape(512, 10240, 8192), num_sms=132)
    assert launch.grid == (132, 1, 1)
    assert all(p["TAIL_SPLIT"] == 1 for p in FAMILIES["hopper"].suggest(1024, 8448, 4096)
               if (p["BM"], p["BN"]) == (128, 256))  # 264 tiles of 128x256: two whole rounds


def test_shortlists_offer_stream_k_only_where_it_was_measured_to_win():
    """Stream-K won with 128x256 or 256x128 tiles, two consumers, K >= 8192 and a last round of 15-33%
    of the SMs; it lost with one consumer, a long last round (3000x4096: 120 of 132 SMs busy), a very
    short one (1025x10240x8192: 4 tiles), few k-steps (4097x4104x136), a 128x128 tile that took the
    wider region (333x6144x4096, in run_b's compare) and fewer tiles than SMs (1024x256x4096)."""
    def offered(M: int, N: int, K: int) -> list[tuple[int, int, int]]:
        return [(p["BM"], p["BN"], p["CONSUMERS"]) for p in FAMILIES["hopper"].suggest(M, N, K, limit=64)
                if p["STREAM_K"]]
    assert (128, 256, 2) in offered(640, 8192, 8192)
    assert all(consumers == 2 for *_, consumers in offered(640, 8192, 8192))
    assert offered(3000, 4096, 4096) == [] and offered(4097, 4104, 136) == [] and offered(1024, 256, 4096) == []
    assert offered(1025, 10240, 8192) == [] and offered(333, 6144, 4096) == []
    assert offered(5000, 3584, 18944) != []


def test_shortlists_split_no_tail_into_parts_of_fewer_than_four_k_steps():
    """512x10240 has 160 tiles of 128x256 (a 28-tile last round), but with K = 64 there is one k-step:
    a split would only add a reduction. The kernel itself never makes more parts than k-steps."""
    assert all(p["TAIL_SPLIT"] == 1 for p in FAMILIES["hopper"].suggest(512, 10240, 64, limit=64))
    assert any(p["TAIL_SPLIT"] > 1 for p in FAMILIES["hopper"].suggest(512, 10240, 8192, limit=64))
    from evo.families.hopper import tail_parts
    assert tail_parts(160, 132, 16, k_tiles=1) == 1 and tail_parts(160, 132, 16, k_tiles=2) == 2


def test_every_gene_of_every_family_is_documented():
    """docs/families.md names every family and every gene: a gene added without its meaning fails."""
    from pathlib import Path
    text = (Path(__file__).resolve().parents[1] / "docs" / "families.md").read_text()
    for name, fam in FAMILIES.items():
        assert f"## {name}" in text, name
        for gene in fam.space:
            assert f"`{gene}`" in text, (name, gene)


def test_the_valid_genome_lies_in_the_subspaces_enumerated():
    """hopper's all_valid enumerates only the parts of its 6-million-combination genome that can hold
    valid configurations: random combinations of the whole genome that are valid must be among them."""
    from evo.families.hopper import PLAIN_BM
    fam, rng = FAMILIES["hopper"], random.Random(5)
    known = {tuple(p[k] for k in fam.space) for p in fam.all_valid}
    seen = 0
    for _ in range(80000):  # about 1 draw in 3000 is valid
        params = {k: rng.choice(v) for k, v in fam.space.items()}
        if rng.random() < 0.5:  # half the draws on the plain product's rows: few others are valid without SWAP_AB
            params["BM"] = rng.choice(PLAIN_BM)
        if rng.random() < 0.9:  # ping-pong consumers take none of the splits: most draws of them are invalid
            params["PINGPONG"] = 0
        if fam.valid(params):
            seen += 1
            assert tuple(params.values()) in known, params
    assert seen > 20 and any(p["SWAP_AB"] for p in fam.all_valid) and any(not p["SWAP_AB"] for p in fam.all_valid)


def test_transposed_products_take_tiles_of_any_multiple_of_8_rows_where_they_pad_less():
    """M = 257 in 128-row tiles computes 384 rows; transposed, two tiles of 136 rows. Where 64-row
    tiles already fit M, no transposed pick is offered."""
    from evo.families.hopper import _deep_beside, swapped_rows
    assert swapped_rows(257)[0] == 136 and swapped_rows(1) == [8] and swapped_rows(77)[0] == 80
    assert swapped_rows(4096) == [] and swapped_rows(1000) == []
    fam = FAMILIES["hopper"]
    picks = fam.suggest(257, 28672, 4096, limit=16)
    # each pick's deep-pipeline variant follows it (_deep_beside); among the picks themselves, the
    # transposed ones take every fourth place from the second
    picks = [p for i, p in enumerate(picks) if not (i and p == _deep_beside(picks[i - 1], 64))][:12]
    assert [i for i, p in enumerate(picks) if p["SWAP_AB"]] == [1, 5, 9]
    assert not any(p["SWAP_AB"] for p in fam.suggest(4096, 4096, 4096, limit=64))
    source = fam.render(dict(fam.default, SWAP_AB=1, BM=136, BN=128))
    assert "wgmma.mma_async.sync.aligned.m64n136k16" in source and "p, 1, 1, 1, 0;" in source
    decl = parse_declaration(source)
    assert decl.launch_for(Shape(257, 28672, 4096), num_sms=132).grid == (132, 1, 1)


@pytest.mark.parametrize("change", [
    dict(BM=136, BN=128), dict(BM=8, BN=128, SPLIT_K=4), dict(BM=88, BN=256, TAIL_SPLIT=4),
    dict(BM=200, BN=64, CONSUMERS=1), dict(BM=24, BN=64, CONSUMERS=1, CTAS_PER_SM=2), dict(BM=40, BN=128),
    dict(BM=32, BN=64, CONSUMERS=1, STAGES=13)])  # the shortlist's narrow tile (_narrow_beside)
def test_transposed_products_compile_without_spills(change, compiler):
    """Every kind of transposed tile compiles for sm_90a with no local-memory spills and no serialized
    wgmma (ptxas's report; 40-row tiles were serialized while the epilogue converted single values)."""
    fam = FAMILIES["hopper"]
    params = fam.complete({**fam.default, "SWAP_AB": 1, "STAGES": 4, **change})
    result = compiler.compile(fam.render(params))
    assert result.ok, result.log
    assert result.resources is not None and result.resources.spill_stores == 0 and result.resources.spill_loads == 0
    assert "C7514" not in result.log  # the epilogue reads no accumulator while a wgmma may still write it


def _compiled_without_spills(change: dict, compiler, spills: int) -> tuple[dict, str]:
    """The hopper default with `change`, valid, compiled for sm_90a with at most `spills` words spilled
    and no serialized wgmma: (params, source)."""
    fam = FAMILIES["hopper"]
    params = fam.complete(dict(fam.default, **change))
    assert fam.problem(params) is None
    source = fam.render(params)
    result = compiler.compile(source)
    assert result.ok, result.log
    assert result.resources is not None
    assert result.resources.spill_stores <= spills and result.resources.stack <= spills
    assert "C7514" not in result.log  # the epilogue reads no accumulator while a wgmma may still write it
    return params, source


@pytest.mark.parametrize("change", [
    dict(), dict(BM=128, BN=128, CONSUMERS=1, STAGES=6), dict(SWAP_AB=1, BM=136, BN=128, STAGES=5),
    dict(SWAP_AB=1, BM=24, BN=64, CONSUMERS=1, CTAS_PER_SM=2, STAGES=4)])
def test_stream_k_kernels_compile_without_spills_and_launch_a_round_at_most(change, compiler):
    """STREAM_K on plain and transposed tiles compiles for sm_90a with no serialized wgmma and at most
    a few words of spills (one consumer with 128 accumulators at its 240-register cap keeps 4 schedule
    values in local memory, reloaded once per item, outside the k loop); the grid is at most a round
    of CTAs, and no more CTAs than 4-k-step shares of the work."""
    params, source = _compiled_without_spills(dict(STREAM_K=1, **change), compiler, spills=16)
    assert "stream-K over every CTA" in source and "#define STREAM_K 1" in source
    decl = parse_declaration(source)
    assert decl.launch_for(Shape(512, 10240, 8192), num_sms=132).grid == (132 * params["CTAS_PER_SM"], 1, 1)
    tiles = -(-64 // params["BM"]) * -(-256 // params["BN"])
    assert decl.launch_for(Shape(64, 256, 512), num_sms=132).grid == (tiles * 2, 1, 1)  # 8 k-steps: 2 shares a tile


@pytest.mark.parametrize("change", [
    dict(TAIL_SPLIT=4), dict(BM=128, BN=128, CONSUMERS=1, STAGES=6, TAIL_SPLIT=8), dict(SPLIT_K=2, STAGES=4),
    dict(SWAP_AB=1, BM=8, BN=128, SPLIT_K=4, STAGES=4), dict(SWAP_AB=1, BM=88, BN=256, TAIL_SPLIT=4, STAGES=4)])
def test_ordered_fixup_kernels_compile_without_spills(change, compiler):
    """FIXUP=1 (split-K and tail-split partials in workspace tiles of their own, added in order) compiles
    for sm_90a with no serialized wgmma and no spills (ptxas's report)."""
    params, source = _compiled_without_spills(dict(FIXUP=1, **change), compiler, spills=0)
    assert "#define FIXUP 1" in source and "ordered partials" in source
    if params["SPLIT_K"] > 1:  # a partial tile for every item: the workspace bounds the product
        decl = parse_declaration(source)
        assert decl.supports(Shape(64, 512, 4096)) and not decl.supports(Shape(8192, 8192, 4096))


@pytest.mark.parametrize("change", [
    dict(TMA_STORE=2), dict(BM=64, BN=64, CONSUMERS=1, STAGES=8, TMA_STORE=2), dict(BM=256, BN=128, TMA_STORE=1),
    dict(BM=128, BN=128, CONSUMERS=1, CTAS_PER_SM=2, STAGES=3, TMA_STORE=1),
    dict(BM=128, BN=192, CLUSTER_M=2, PERSISTENT=0, TMA_STORE=2)])
def test_tma_store_kernels_compile_without_spills_and_declare_a_map_of_c(change, compiler):
    """TMA_STORE = 1 or 2 (the epilogue's 64x64 chunks staged swizzled in that many shared tiles a
    consumer and stored by TMA) compiles for sm_90a with no spills and no warnings; the kernel takes a
    third tensor map, over C, whose 64x64 box the TMA unit clips at M and N."""
    params, source = _compiled_without_spills(change, compiler, spills=0)
    assert f"#define TMA_BUFFERS {params['TMA_STORE']}" in source
    assert "const __grid_constant__ CUtensorMap tmB, const __grid_constant__ CUtensorMap tmC)" in source
    assert "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group" in source
    assert "store_chunk(stage_c, C, row0" not in source  # the plain product's 16-byte stores
    maps = parse_declaration(source).launch_for(Shape(129, 136, 8), num_sms=132).tensor_maps
    assert [(m.operand, m.dims, m.box, m.swizzle) for m in maps][2] == ("C", (136, 129), (64, 64), 128)
    assert "warning" not in compiler.compile(source).log.lower()


@pytest.mark.parametrize("change", [
    dict(BM=128, BN=128, STAGES=6, PINGPONG=1), dict(BM=64, BN=256, STAGES=4, PINGPONG=1, TMA_STORE=2),
    dict(BM=64, BN=64, STAGES=10, PINGPONG=1, TMA_STORE=1),
    dict(BM=128, BN=128, STAGES=6, PINGPONG=1, CLUSTER_M=2, TMA_STORE=2)])
def test_pingpong_kernels_compile_without_spills_each_consumer_owning_whole_tiles(change, compiler):
    """PINGPONG = 1: each consumer holds a whole tile's accumulators (BM x BN / 128 a thread) and
    takes every other item of its CTA; a stage has one reader (its consumer's four warps, in each CTA of a
    multicast pair); the consumers pass the tensor cores to each other through named barriers 4 and 5, and
    wait for the turn before they work out their item's first stage; the template refuses splits it cannot
    count."""
    params, source = _compiled_without_spills(change, compiler, spills=0)
    assert f"#define PINGPONG {params['PINGPONG']}" in source and "#define ROWS_PER_CONSUMER (SPLIT_DIM / 1)" in source
    assert "item = first_item + consumer * item_stride; item < items; item += item_stride * 2)" in source
    assert "mbar_init(&empty[s], 4 * CLUSTER_M);" in source  # each consumer's rows start at the tile's first:
    assert f"#define CLUSTER_M {params['CLUSTER_M']}" in source
    assert ("// @evo cluster  = 2, 1, 1" in source) == (params["CLUSTER_M"] == 2)
    assert "a_tiles + stage * A_STAGE_BYTES + 0 * ROWS_PER_CONSUMER * 128;" in source
    assert "row0 = w.m0 + 0 * ROWS_PER_CONSUMER + mt * 64;" in source
    turn, first, passes = (source.index(x) for x in ("wait_turn(consumer);  //", "const int first_step",
                                                     "pass_turn(consumer);  //"))
    assert turn < first < passes
    assert "static_assert(SPLIT_K == 1" in source and "one arrival per warp of the one consumer (in each CTA" in source
    assert "warning" not in compiler.compile(source).log.lower()


def test_pingpong_takes_two_consumers_of_whole_tiles_and_leaves_other_kernels_as_they_were():
    fam = FAMILIES["hopper"]
    pp = dict(fam.default, BM=128, BN=128, PINGPONG=1)
    assert fam.problem(pp) is None
    for change in (dict(CONSUMERS=1), dict(SPLIT_K=2), dict(TAIL_SPLIT=4), dict(STREAM_K=1),
                   dict(PERSISTENT=0), dict(CTAS_PER_SM=2), dict(SWAP_AB=1, BM=136)):
        assert "PINGPONG=1" in fam.problem(dict(pp, **change)), change
    # a multicast pair: both CTAs walk the same items (tests/test_pingpong_protocol.py models it)
    assert fam.problem(dict(pp, CLUSTER_M=2)) is None
    # a consumer holds a whole tile: 128 x 256 is 256 accumulators a thread, too many
    assert "accumulators" in fam.problem(dict(pp, BN=256)) and "64 or 128" in fam.problem(dict(pp, BM=256))
    found = [p for p in fam.all_valid if p["PINGPONG"]]
    assert found and all(p["CONSUMERS"] == 2 and p["BM"] * p["BN"] <= 128 * 128 for p in found)
    assert any(p["CLUSTER_M"] == 2 for p in found)
    # without the gene, the source is the one rendered before it existed
    plain = fam.render(fam.default)
    assert "PINGPONG" not in plain and "wait_turn" not in plain and "first_step" not in plain
    assert "mbar_init(&empty[s], CONSUMERS * 4 * CLUSTER_M);" in plain
    older = {k: v for k, v in fam.default.items() if k != "PINGPONG"}
    assert fam.complete(older)["PINGPONG"] == 0 and fam.render(older) == plain


def test_tma_store_takes_whole_plain_tiles_only_and_leaves_other_kernels_as_they_were():
    fam = FAMILIES["hopper"]
    for change in (dict(SPLIT_K=2), dict(TAIL_SPLIT=4), dict(STREAM_K=1), dict(SWAP_AB=1, BM=136, BN=128)):
        assert "TMA_STORE (1 or 2)" in fam.problem(dict(fam.default, TMA_STORE=1, **change)), change
    assert any(p["TMA_STORE"] for p in fam.all_valid)
    assert all(p["SPLIT_K"] == p["TAIL_SPLIT"] == 1 and not p["STREAM_K"] and not p["SWAP_AB"]
               for p in fam.all_valid if p["TMA_STORE"])
    # one staging tile leaves room for a stage more: the K = 256 winners' 128x128 tiles at 2 CTAs per SM
    k256 = dict(fam.default, BM=128, BN=128, CONSUMERS=1, CTAS_PER_SM=2, STAGES=3)
    assert fam.problem(dict(k256, TMA_STORE=1)) is None and fam.problem(dict(k256, TMA_STORE=2)) is not None
    # without the gene, the source is the one rendered before it existed: the 16-byte stores of every
    # thread, two tensor maps, no bulk stores (the epilogue now comes from hopper_epilogue_stores.cuh)
    plain = fam.render(fam.default)
    assert "store_chunk(stage_c, C, row0, w.n0 + chunk * 64, 64, M, N, consumer, tid_in_wg);\n                }\n" \
        "            }\n#endif" in plain
    assert "CUtensorMap tmC" not in plain and "bulk_group" not in plain and "nv_diag_suppress" not in plain
    assert "= C box" not in plain
    # a configuration stored before the gene existed (no TMA_STORE) renders as it did
    older = {k: v for k, v in fam.default.items() if k != "TMA_STORE"}
    assert fam.complete(older)["TMA_STORE"] == 0 and fam.render(older) == plain


def test_the_shortlist_stores_through_tma_only_short_loops_over_more_tiles_than_sms():
    """TMA_STORE=2 replaces a pick's own stores where its work items run at most 4 k-steps, its tiles
    outnumber the SMs and one CTA runs an SM (the H200 pairs: 1.071x there, mixed elsewhere)."""
    from evo.families.hopper import _tma_store_where_it_pays
    fam = FAMILIES["hopper"]
    for shape in ((16384, 16384, 256), (4096, 1024, 256), (256, 256, 256), (8192, 8192, 8192), (64, 16384, 64),
                  (16384, 4096, 320)):
        M, N, K = shape
        picks = fam.suggest(*shape, limit=24)
        for i, p in enumerate(picks):
            if p == fam.default and i == len(picks) - 1:  # the family's fallback, appended as it is
                continue
            tiles = -(-M // p["BM"]) * -(-N // p["BN"])
            pays = -(-K // 64) <= 4 and tiles > 132 and p["CTAS_PER_SM"] == 1
            assert p["TMA_STORE"] in ((0, 2) if pays else (0,)), (shape, p)
            assert not pays or p["TMA_STORE"] or fam.problem(dict(p, TMA_STORE=2)), (shape, p)
        assert (sum(p["TMA_STORE"] for p in picks) > 0) == (shape in ((16384, 16384, 256), (4096, 1024, 256),
                                                                        (64, 16384, 64))), shape
    base = dict(fam.default, BM=128, BN=256, STAGES=4)
    assert _tma_store_where_it_pays(base, 16384, 16384, 4, 132) == dict(base, TMA_STORE=2)  # same stages
    assert _tma_store_where_it_pays(base, 16384, 16384, 5, 132) == base  # 5 k-steps
    assert _tma_store_where_it_pays(base, 1024, 2048, 4, 132) == base  # 64 tiles
    assert _tma_store_where_it_pays(base, 128 * 12, 256 * 11, 4, 132) == base  # 132 tiles: one each
    assert _tma_store_where_it_pays(base, 128 * 12, 256 * 11 + 1, 4, 132)["TMA_STORE"] == 2  # 144
    # two staging tiles that do not fit beside the pick's stages: the pick as it was, not fewer stages
    wide = dict(base, BN=192, STAGES=5)
    assert fam.problem(dict(wide, TMA_STORE=2)) and _tma_store_where_it_pays(wide, 16384, 16384, 4, 132) == wide
    # two CTAs an SM: left alone even where two staging tiles fit (one tile there gained nothing)
    pair = dict(base, BM=64, BN=64, CONSUMERS=1, CTAS_PER_SM=2, STAGES=2)
    assert fam.problem(dict(pair, TMA_STORE=2)) is None and _tma_store_where_it_pays(pair, 16384, 16384, 4, 132) == pair
    # the top pick's twin without it stays on the list as the family's fallback, last
    top = fam.suggest(16384, 16384, 256, limit=64)
    assert top[0] == dict(base, TMA_STORE=2) and top[-1] == fam.default


def test_the_shortlist_orders_the_fixup_of_few_parts_only():
    """FIXUP=1 where the H200 measured it faster (split-K over L2 and tail splits of at most 4 parts),
    fp32 atomics for more parts and never on a cluster split or a kernel without partials."""
    fam = FAMILIES["hopper"]
    picks = {shape: fam.suggest(*shape, limit=24)
             for shape in ((1, 6144, 4096), (100, 6144, 4096), (257, 28672, 4096), (1500, 3584, 3584))}
    kinds = {(p["SPLIT_K"] if not p["SPLIT_CLUSTER"] else 0, p["TAIL_SPLIT"], p["FIXUP"])
             for shape_picks in picks.values() for p in shape_picks}
    assert {(2, 1, 1), (1, 2, 1), (1, 16, 0), (3, 1, 0)} <= kinds  # (3, 1, 0): 1500x3584, workspace too small
    for shape, shape_picks in picks.items():
        for p in shape_picks:
            parts = p["SPLIT_K"] if p["SPLIT_K"] > 1 and not p["SPLIT_CLUSTER"] else p["TAIL_SPLIT"]
            tiles = -(-shape[0] // p["BM"]) * -(-shape[1] // p["BN"])
            fits = p["SPLIT_K"] == 1 or tiles * p["SPLIT_K"] * p["BM"] * p["BN"] <= 8388608  # a partial per item
            assert p["FIXUP"] == (1 < parts <= 4 and fits), (shape, p)
            assert parse_declaration(fam.render(p)).supports(Shape(*shape))


def test_the_compile_log_keeps_ptxas_performance_warnings():
    """ptxas prints its wgmma serialization warning as an "info" line; the trimmed log keeps it (a repair
    prompt and the tests read it) and drops the resource lines."""
    from evo.evaluation.compiler import trim_log
    log = ("ptxas info    : Used 168 registers, used 16 barriers\n"
           "ptxas info    : (C7514) Potential Performance Loss: wgmma.mma_async instructions are serialized\n"
           "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n")
    assert trim_log(log, "k.cu").splitlines() == [
        "ptxas info    : (C7514) Potential Performance Loss: wgmma.mma_async instructions are serialized"]


def test_mutating_tile_rows_steps_among_the_values_the_tile_kind_takes():
    """BM holds every multiple of 8 for transposed tiles but only 64, 128, 256 for plain ones: a plain
    tile's BM step reaches 64 or 256 (a step to 120 or 136 was mostly repaired back to the parent),
    a transposed tile's steps by 8."""
    from evo.mutators.structural import OPERATORS
    fam, rng = FAMILIES["hopper"], random.Random(2)
    plain = fam.candidate(dict(fam.default, BM=64, BN=128, CONSUMERS=1, STAGES=5))
    rows = {(c.params["BM"], c.params["SWAP_AB"]) for c in (OPERATORS["mutate_one"].apply([plain], rng)
                                                              for _ in range(300))}
    assert (128, 0) in rows and all(bm in (64, 128, 256) for bm, swap in rows if not swap)
    assert fam.values_for("BM", dict(fam.default, SWAP_AB=1))[:3] == (8, 16, 24)
    assert fam.values_for("BM", fam.default) == (64, 128, 256) and fam.values_for("BN", fam.default) == fam.space["BN"]


def test_a_single_step_mutation_rarely_gives_back_its_parent_and_stays_local():
    """mutate_one moves one gene to a neighbouring value that exists (a 0/1 gene at one end steps
    inwards) and the repair keeps that value where it costs at most one more gene: 52% of its children
    on these parents were their parent again before, now under 15%, and none changes more than 3 genes."""
    from evo.mutators.structural import OPERATORS
    fam, rng = FAMILIES["hopper"], random.Random(3)
    parents = [fam.candidate(p) for M, N, K in ((77, 4096, 14336), (512, 10240, 8192), (255, 2816, 2048))
               for p in fam.suggest(M, N, K, limit=6)]
    children = [(parent, OPERATORS["mutate_one"].apply([parent], rng)) for parent in parents for _ in range(40)]
    assert all(fam.valid(child.params) for _, child in children)
    changed = [sum(child.params[g] != parent.params[g] for g in parent.params) for parent, child in children]
    assert sum(d == 0 for d in changed) < 0.15 * len(changed) and max(changed) <= 3
    # from a tail split, turning stream-K on takes the tail split off (its constraint), not the step back
    tail = fam.candidate(dict(fam.default, TAIL_SPLIT=4))
    flips = [c.params for c in (OPERATORS["mutate_one"].apply([tail], rng) for _ in range(400))
             if c.params["STREAM_K"] == 1]
    assert flips and all(p["TAIL_SPLIT"] == 1 for p in flips)
    assert fam.repair(dict(fam.default, STREAM_K=1, TAIL_SPLIT=4), rng, keep=("STREAM_K",))["STREAM_K"] == 1


def test_the_valid_genomes_are_enumerated_once_whichever_threads_ask(tmp_path, monkeypatch):
    """A search builds the valid-genome tables in a background thread while its seeds run; a repair
    asking meanwhile waits for that enumeration and gets the same table, not a second one. (Without
    evo's lock, Python 3.12 enumerates five times here: functools.cached_property lost its lock.)"""
    import threading
    import time
    monkeypatch.setenv("EVO_CACHE_DIR", str(tmp_path))  # an empty genome cache: the threads must enumerate

    from evo.families._family import Family
    fam = FAMILIES["ampere"]
    fresh = Family(**{f.name: getattr(fam, f.name) for f in dataclasses.fields(fam)})  # nothing cached yet
    calls = []
    original = fresh._enumerate_valid

    def counted():  # slow enough that every thread asks while the first enumerates
        calls.append(1)
        time.sleep(0.2)
        return original()
    object.__setattr__(fresh, "_enumerate_valid", counted)
    results = []
    threads = [threading.Thread(target=lambda: results.append(fresh.all_valid)) for _ in range(4)]
    for t in threads:
        t.start()
    fresh.prepare()
    for t in threads:
        t.join()
    assert len(calls) == 1 and all(r is fresh.all_valid for r in results) and len(results) == 4
    assert fresh.all_valid == fam.all_valid


def test_the_shortlist_deepens_only_split_k_over_l2_with_small_stages():
    """Split-K over L2 takes up to 7 stages where a stage is at most 20 KB (BM + BN <= 160: the H200 pairs
    ran 4.5% faster than with 5), 6 with 24 KB stages (64x128, 128x64) where K >= 8192 (1.3% faster than
    5), 5 with other larger stages or over a cluster; no split takes up to 7.
    Deeper pipelines (up to 16) come only as a variant right after a pick with small stages and work
    items of at least 64 k-steps (16 without a cluster split), never in its place."""
    from evo.families.hopper import _deep_beside, _transposed_beside
    fam = FAMILIES["hopper"]
    seen, variants, short_items = set(), 0, 0
    for shape in ((64, 4096, 4096), (256, 1024, 16384), (197, 768, 3072), (77, 4096, 4096), (4096, 4096, 4096)):
        k_tiles = -(-shape[2] // 64)
        picks = fam.suggest(*shape, limit=64)
        base = None  # the last pick that is not a variant of the one before it
        for p in picks:
            if base is not None and p in _transposed_beside(base, shape[0]):
                continue  # at p's stages, as measured (test_the_shortlist_offers_transposed_tiles_where_none_are)
            if base is not None and p == _deep_beside(base, k_tiles):
                assert p["STAGES"] > 7 and base["BM"] + base["BN"] <= 160, (shape, p)
                steps = k_tiles // max(1, base["SPLIT_K"])
                assert steps >= 64 or (steps >= 16 and not base["SPLIT_CLUSTER"]), (shape, base)
                assert fam.problem(dict(p, STAGES=p["STAGES"] + 1))
                short_items += steps < 64
                variants += 1
                continue
            base = p
            assert p["STAGES"] <= 7, (shape, p)  # deeper only as a variant
            over_l2 = p["SPLIT_K"] > 1 and not p["SPLIT_CLUSTER"]
            small = p["BM"] + p["BN"] <= 160
            cap = 7 if p["SPLIT_K"] == 1 or (over_l2 and small) else 5
            if over_l2 and p["BM"] + p["BN"] == 192 and shape[2] >= 8192:
                cap = 6
            assert p["STAGES"] <= cap, (shape, p)
            deeper = dict(p, STAGES=p["STAGES"] + 1)
            assert p["STAGES"] == cap or fam.problem(deeper) is not None, (shape, p)  # the deepest that fits
            seen.add((over_l2, small, p["SPLIT_CLUSTER"], p["STAGES"]))
    assert (True, True, 0, 7) in seen and (True, False, 0, 5) in seen and (False, True, 1, 5) in seen
    assert (True, False, 0, 6) in seen  # 64x128 split-K over L2 on 256x1024x16384
    assert variants >= 3
    assert _deep_beside(dict(fam.default, BM=128, BN=128, STAGES=5, SPLIT_K=1), 64) is None  # 32 KB stages
    assert short_items >= 1  # a variant beside a pick of 16-63 k-steps an item
    small = dict(fam.default, BM=64, BN=64, CONSUMERS=1, STAGES=5)
    assert _deep_beside(dict(small, SPLIT_K=2), 64)["STAGES"] > 7  # 32 k-steps an item
    assert _deep_beside(dict(small, SPLIT_K=8), 64) is None  # 8 k-steps an item
    assert _deep_beside(dict(small, SPLIT_K=2, SPLIT_CLUSTER=1, PERSISTENT=0), 64) is None  # over a cluster


def test_the_shortlist_offers_ping_pong_right_after_128x128_picks_of_short_loops():
    """Where a CTA gets more than one 128x128 tile and a tile's loop is at most 16 k-steps, each plain
    128x128 two-consumer pick that splits nothing is followed by itself as ping-pong consumers (its own
    epilogue, the deepest pipeline up to 8); nowhere else, and only as that variant."""
    from evo.families.hopper import _pingpong_beside
    fam = FAMILIES["hopper"]
    for shape, offered in (((4096, 1024, 256), True), ((7777, 2304, 768), True), ((4096, 4096, 1024), True),
                           ((4096, 4096, 4096), False), ((1024, 1024, 256), False), ((64, 4096, 256), False)):
        picks = fam.suggest(*shape, limit=24)
        found = [i for i, p in enumerate(picks) if p["PINGPONG"]]
        assert bool(found) == offered, shape
        k_tiles = -(-shape[2] // 64)
        for i in found:
            base = picks[i - 1]
            assert picks[i] == _pingpong_beside(base, shape[0], shape[1], k_tiles, 132), shape
            assert picks[i] == dict(base, PINGPONG=1, STAGES=picks[i]["STAGES"]) and picks[i]["STAGES"] <= 8
            assert fam.problem(picks[i]) is None and fam.problem(dict(picks[i], STAGES=picks[i]["STAGES"] + 1))
            assert (base["BM"], base["BN"], base["CONSUMERS"], base["SPLIT_K"], base["TAIL_SPLIT"]) == (128, 128, 2, 1, 1)
    short = fam.suggest(4096, 1024, 256, limit=24)
    assert any(p["PINGPONG"] and p["TMA_STORE"] == 2 for p in short)  # the pick's TMA store at 4 k-steps
    base = dict(fam.default, BM=128, BN=128, CONSUMERS=2, CTAS_PER_SM=1, PERSISTENT=1, SPLIT_K=1, STAGES=5)
    assert _pingpong_beside(base, 4096, 1024, 4, 132) is not None
    assert _pingpong_beside(dict(base, SPLIT_K=2), 4096, 1024, 4, 132) is None
    assert _pingpong_beside(dict(base, BN=256), 4096, 1024, 4, 132) is None
    assert _pingpong_beside(base, 4096, 1024, 17, 132) is None


def test_the_shortlist_offers_narrow_transposed_tiles_where_they_make_one_wave_of_k_1024_to_4096():
    """Above M = 64, a plain 64x64 pick is followed by a transposed 32x64 tile with K unsplit and the
    deepest pipeline up to 13 stages where those tiles make 90-100% of a wave and a tile runs 16-64
    k-steps (the four shapes session 29 measured it winning on an H100); not at K = 16384, M <= 64, or
    where the narrow tiles make far more or far fewer than one wave (measured losing there)."""
    from evo.families.hopper import _narrow_beside
    fam = FAMILIES["hopper"]
    for shape, offered in (((1024, 256, 4096), True), ((1024, 256, 1024), True), ((256, 1024, 1024), True),
                           ((4096, 64, 1024), True), ((1024, 256, 16384), False), ((64, 4096, 4096), False),
                           ((1024, 1024, 1024), False), ((256, 256, 1024), False), ((4096, 256, 1024), False)):
        picks = fam.suggest(*shape, limit=24)
        found = [i for i, p in enumerate(picks) if p["SWAP_AB"] and p["BM"] == 32 and p["SPLIT_K"] == 1
                 and p["STAGES"] == 13 and shape[0] > 64]
        assert bool(found) == offered, shape
        for i in found:
            base = picks[i - 1]
            assert (base["BM"], base["BN"], base["SWAP_AB"]) == (64, 64, 0), shape
            assert picks[i] == _narrow_beside(base, shape[0], shape[1], -(-shape[2] // 64), 132)
            assert picks[i]["BN"] == 64 and picks[i]["CTAS_PER_SM"] == 1 and fam.problem(picks[i]) is None
    base = fam.complete(dict(fam.default, BM=64, BN=64, CONSUMERS=1, SPLIT_K=2, FIXUP=1, GROUP_M=4))
    assert _narrow_beside(base, 1024, 256, 64, 132)["GROUP_M"] == 8  # a transposed product takes 1 or 8
    assert _narrow_beside(dict(base, BN=128), 1024, 256, 64, 132) is None
    assert _narrow_beside(base, 1024, 256, 65, 132) is None and _narrow_beside(base, 1024, 256, 15, 132) is None


def test_the_shortlist_offers_transposed_tiles_where_none_are():
    """At M = 57 to 64 (where 64-row tiles pad less than any transposed tile would save, so `swapped_rows`
    offers none), each plain 64-row pick is followed by itself as a transposed product of 32- and of
    48-row tiles, other genes unchanged where valid; at other M, no such variants."""
    from evo.families.hopper import _transposed_beside, swapped_rows
    fam = FAMILIES["hopper"]
    picks = fam.suggest(64, 1024, 1024, limit=64)
    swapped = [j for j, b in enumerate(picks) if b["SWAP_AB"]]
    assert swapped and {picks[j]["BM"] for j in swapped} == {32, 48}
    for j in swapped:  # within three places after its pick (the pick, its deep variant, 32 rows, 48 rows)
        b = picks[j]
        assert any(a["BM"] == 64 and not a["SWAP_AB"] and b == dict(a, SWAP_AB=1, BM=b["BM"])
                   for a in picks[max(0, j - 3):j]), b
    plain = dict(fam.default, BM=64, BN=128, CONSUMERS=1)
    assert [M for M in range(1, 300) if _transposed_beside(plain, M)] == list(range(57, 65))
    assert not swapped_rows(57) and swapped_rows(56)  # the boundary is swapped_rows' own
    assert swapped_rows(48) and not any(p["SWAP_AB"] for p in fam.suggest(128, 1024, 1024, limit=64))
    assert _transposed_beside(dict(fam.default, BM=128, BN=128), 64) == []  # only 64-row picks


def test_enumerating_with_a_growing_gene_gives_the_full_products_configurations():
    """Hopper's valid genomes, enumerated with STAGES stopping at its first invalid value, are those of
    the whole product, in the same order (on a part of the space small enough to filter whole here)."""
    import dataclasses
    fam = FAMILIES["hopper"]
    space = dict(fam.space, BM=(8, 40, 64, 128, 256), SPLIT_K=(1, 2, 3, 8), TAIL_SPLIT=(1, 4), GROUP_M=(1, 8))
    fast = dataclasses.replace(fam, space=space)
    full = dataclasses.replace(fast, growing=None)
    found = fast._enumerate_valid()
    assert found == full._enumerate_valid()
    assert max(p["STAGES"] for p in found) == 16 and any(p["STAGES"] < 16 for p in found if p["BM"] == 8)


def test_pipelines_of_sixteen_stages_compile_without_spills(compiler):
    """The search space takes up to 16 stages where they fit (the libraries run 13-16 on small tiles):
    a 64x64 tile with 13 stages and a transposed 16x64 tile with 16 compile for sm_90a without spills."""
    for change in (dict(BM=64, BN=64, CONSUMERS=1, STAGES=13, SPLIT_K=2, FIXUP=1),
                   dict(SWAP_AB=1, BM=16, BN=64, CONSUMERS=1, STAGES=16)):
        params, source = _compiled_without_spills(change, compiler, spills=0)
        assert f"#define STAGES {params['STAGES']}" in source


def test_a_later_process_reads_the_valid_genomes_from_the_genome_cache(tmp_path, monkeypatch):
    """hopper's enumeration takes seconds of CPU in every process that repairs or draws a genome: the first
    process stores it (genomes/ in EVO_CACHE_DIR), later ones read the same configurations in the same
    order. A file that is empty, not numpy, of another dtype or holding values the genes do not allow is
    enumerated again and replaced; other family code (its digest) or other genes name another file."""
    import numpy as np

    from evo.families import _family
    from evo.families._family import Family, genome_cache_dir
    monkeypatch.setenv("EVO_CACHE_DIR", str(tmp_path))
    fam = FAMILIES["skinny"]

    def fresh(enumerations: list, **changes) -> Family:  # a new process's family: nothing cached in memory
        f = Family(**{f.name: getattr(fam, f.name) for f in dataclasses.fields(fam)} | changes)
        original = f._enumerate_valid
        object.__setattr__(f, "_enumerate_valid", lambda: enumerations.append(1) or original())
        return f

    first, later = [], []
    assert fresh(first).all_valid == fam.all_valid and first == [1]
    stored = list(genome_cache_dir().glob("skinny-*.npy"))
    assert len(stored) == 1 and not list(genome_cache_dir().glob("*.tmp"))
    reader = fresh(later)
    read = reader.all_valid
    assert later == [] and read == fam.all_valid and list(read) == list(fam.all_valid)  # order too
    assert "_valid_table" in reader.__dict__ and (reader._valid_table == fam._valid_table).all()  # repair's matrix
    assert all(type(v) is int for p in read[:50] for v in p.values())
    good = stored[0].read_bytes()
    table = np.load(stored[0])
    outside = table.copy()
    outside[0, 0] = max(fam.space[list(fam.space)[0]]) + 1
    for bad in (b"", b"not a numpy file", good[: len(good) // 2], table.astype(np.float64), outside):
        if isinstance(bad, bytes):
            stored[0].write_bytes(bad)
        else:
            np.save(stored[0], bad)
        again, reread = [], []
        assert fresh(again).all_valid == fam.all_valid and again == [1]  # enumerated again ...
        assert fresh(reread).all_valid == fam.all_valid and reread == []  # ... and stored again
        assert stored[0].read_bytes() == good
    monkeypatch.setattr(_family, "_families_digest", lambda: "another-digest")
    changed = []
    assert fresh(changed).all_valid == fam.all_valid and changed == [1]
    reordered = []
    genes = dict(reversed(list(fam.space.items())))
    same = {tuple(sorted(p.items())) for p in fam.all_valid}  # (the genes' order is the product's order)
    assert {tuple(sorted(p.items())) for p in fresh(reordered, space=genes).all_valid} == same and reordered == [1]
    assert len(list(genome_cache_dir().glob("skinny-*.npy"))) == 3 and not list(genome_cache_dir().glob("*.tmp"))

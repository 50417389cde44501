// evo seed family "hopper" (sm_90a): TMA loads into a multi-stage mbarrier pipeline, wgmma with fp32
// accumulators, one producer warpgroup and ${CONSUMERS} consumer warpgroup(s) with register reallocation,
// and a persistent tile scheduler with grouped rasterization.
// Tile ${BM}x${BN}x64, ${STAGES} stages, raster group ${GROUP_M}, split-K ${SPLIT_K} (${SPLIT_HOW}),
// last-round tiles: ${TAIL_HOW},
// ${CTAS_PER_SM} CTA(s) per SM, ${CLUSTER_M} CTA(s) per cluster along M sharing B by TMA multicast,
// operands ${SWAP_HOW}.
#include <cuda.h>
#include <cuda_fp16.h>
#include <stdint.h>
// @evo grid     = ${GRID}
// @evo block    = ${THREADS}
// @evo smem     = ${SMEM}${CLUSTER_DECL}
// @evo requires = K % 8 == 0 and N % 8 == 0
// @evo tma      = A box(64, ${BM}) swizzle(128)
// @evo tma      = B box(64, 64) swizzle(128)${TMA_C_DECL}${SPLITK_REQUIRES}

#define BM ${BM}
#define BN ${BN}
#define BK 64
#define STAGES ${STAGES}
#define CONSUMERS ${CONSUMERS}
#define GROUP_M ${GROUP_M}
#define SPLIT_K ${SPLIT_K}
// TAIL_SPLIT > 1: the tiles left for the last, partial round split K to fill idle SMs
#define TAIL_SPLIT ${TAIL_SPLIT}
// STREAM_K 1: the k-steps of the last round's tiles (and of a full round before it, where the
// workspace holds its partials) are shared out evenly over every CTA (stream-K); 2: the last round's alone
#define STREAM_K ${STREAM_K}
// FIXUP (split-K over L2 and the tail split) 0: partial tiles are added with fp32 atomics into one
// workspace tile; 1: each partial is stored in a workspace tile of its own and the CTA that arrives
// last adds them in order, as stream-K does (no contended atomics; the sum does not depend on arrival)
#define FIXUP ${FIXUP}
// at least this many k-steps a CTA: a share of one k-step would cost more in its partial tile's
// store and the fix-up's reads than it saves
#define STREAM_K_MIN_STEPS 4
// at most this many CTAs per stream-K tile on average: one CTA adds up all of a tile's partials, so
// their number is kept small (where the shares are less than a tile: few tiles, or the last round alone)
#define STREAM_K_MAX_SHARES 4
#define SPLIT_CLUSTER ${SPLIT_CLUSTER}  // 1: the split-K CTAs of a tile form a cluster and add over DSMEM
#define CTAS_PER_SM ${CTAS_PER_SM}
#define CLUSTER_M ${CLUSTER_M}  // 2: CTA pairs on neighbouring M tiles; each loads its share of B's 64-column boxes for both (BN = 64: the first CTA all of it)
// SWAP_AB 1: the product runs transposed on the tensor cores (C^T = B^T A^T), so the tile's M side (tokens)
// is the wgmma's N, any multiple of 8 up to 256, and the consumers split the tile's N side in 64-row
// wgmma blocks: no tensor-core rows are spent on the padding of a small or uneven M. Shared-memory
// tiles and loads are the same either way; only the operands' roles (and the epilogue) change.
#define SWAP_AB ${SWAP_AB}${PINGPONG_DEFINE}
#if SWAP_AB
#define WG_N BM       // wgmma N: the tile's rows of C
#define SPLIT_DIM BN  // the side the consumers split: the tile's columns of C
#else
#define WG_N BN
#define SPLIT_DIM BM
#endif
#define P_STRIDE (BN + 8)  // floats per row of the partial tile: the padding spreads rows over banks
#define ROWS_PER_CONSUMER (SPLIT_DIM / ${TILE_OWNERS})
#define MMA_M_TILES (ROWS_PER_CONSUMER / 64)
#define A_STAGE_BYTES (BM * BK * 2)
#define B_STAGE_BYTES (BK * BN * 2)
#define ACC_PER_THREAD (MMA_M_TILES * WG_N / 2)
#define PIPE_BYTES (STAGES * (A_STAGE_BYTES + B_STAGE_BYTES))
#if SPLIT_K > 1 && SPLIT_CLUSTER
#define PARTIAL_BYTES (BM * P_STRIDE * 4)
#else
#define PARTIAL_BYTES 0
#endif
// pipeline stages, reused by cluster split-K for the fp32 partial tile; barriers follow
#define REGION_BYTES (((PIPE_BYTES > PARTIAL_BYTES ? PIPE_BYTES : PARTIAL_BYTES) + 1023) / 1024 * 1024)
#define C_STRIDE 72  // halves per row of the epilogue tile: 64 + 8 of padding against bank conflicts
// split-K partials are combined among the consumer threads only
#define SPLITK_SYNC() asm volatile("bar.sync 1, %0;" :: "n"(CONSUMERS * 128) : "memory")

${WGMMA}
${SPLITK}

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// ---- mbarrier: the pipeline's full/empty handshakes --------------------------------------------
__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(smem_u32(bar)), "r"(count));
}
__device__ __forceinline__ void mbar_expect_tx(uint64_t* bar, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(smem_u32(bar)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(smem_u32(bar)) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
    asm volatile(
        "{\n.reg .pred done;\n"
        "WAIT_%=:\n"
        "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
        "@!done bra WAIT_%=;\n}\n" :: "r"(smem_u32(bar)), "r"(parity) : "memory");
}

// ---- TMA: one 2D box from global memory into shared memory, completing on an mbarrier ----------
__device__ __forceinline__ void tma_load_2d(void* dst, const CUtensorMap* map, uint64_t* bar, int x, int y) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];"
        :: "r"(smem_u32(dst)), "l"(map), "r"(smem_u32(bar)), "r"(x), "r"(y) : "memory");
}

#if CLUSTER_M > 1
// The same box into the same shared-memory offset of every CTA in `mask`, completing on each one's
// mbarrier at `bar`'s offset.
__device__ __forceinline__ void tma_load_2d_multicast(void* dst, const CUtensorMap* map, uint64_t* bar, int x, int y,
                                                      uint16_t mask) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
        " [%0], [%1, {%3, %4}], [%2], %5;"
        :: "r"(smem_u32(dst)), "l"(map), "r"(smem_u32(bar)), "r"(x), "r"(y), "h"(mask) : "memory");
}
// Arrive on the mbarrier at `bar`'s offset in CTA `cta` of the cluster. The default semantics suffice
// (the stage's readers, wgmma, completed at wgmma.wait_group); `.release.cluster` here made the whole
// kernel 1.5x slower on the H200 (benchmarks/seeds/multicast/).
__device__ __forceinline__ void mbar_arrive_in(uint64_t* bar, uint32_t cta) {
    uint32_t remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(smem_u32(bar)), "r"(cta));
    asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];" :: "r"(remote) : "memory");
}
#endif

// A consumer warp is done with a stage. With multicast the stage is refilled by both CTAs' loads,
// so both producers wait for it: arrive in every CTA of the cluster.
__device__ __forceinline__ void release_stage(uint64_t* bar) {
#if CLUSTER_M > 1
    #pragma unroll
    for (uint32_t cta = 0; cta < CLUSTER_M; ++cta) mbar_arrive_in(bar, cta);
#else
    mbar_arrive(bar);
#endif
}

// ---- wgmma shared-memory descriptors (128-byte swizzle) ----------------------------------------
// A tile: BM rows of 64 halves (128 B), K contiguous ("K-major"): 8-row core groups 1024 B apart.
__device__ __forceinline__ uint64_t desc_a(const void* p) {
    uint64_t addr = smem_u32(p);
    return ((addr & 0x3FFFF) >> 4) | (1ull << 16) | ((1024ull >> 4) << 32) | (1ull << 62);
}
// B tile: stored as BN/64 column blocks, each 64 k-rows of 64 halves (128 B), N contiguous
// ("MN-major", transposed in the instruction): next 64-column block LBO = 64*128 B away,
// next 8 k-rows SBO = 1024 B away.
__device__ __forceinline__ uint64_t desc_b(const void* p) {
    uint64_t addr = smem_u32(p);
    return ((addr & 0x3FFFF) >> 4) | ((uint64_t)((BK * 128) >> 4) << 16) | ((1024ull >> 4) << 32) | (1ull << 62);
}

// A barrier over the 128 threads of one consumer warpgroup (ids 2.. ; 1 is split-K's).
__device__ __forceinline__ void consumer_sync(int consumer) {
    asm volatile("bar.sync %0, 128;" :: "r"(2 + consumer) : "memory");
}

// The epilogue's second half: once a consumer has written a 64x64 chunk of C into its padded tile,
// its 128 threads store the chunk's first `rows` rows (fewer only in a transposed tile's last chunk)
// at (row0, col0) of C as 16-byte row pieces; the barriers keep the tile from being rewritten early.
__device__ __forceinline__ void store_chunk(const half* stage_c, half* C, int row0, int col0, int rows, int M, int N,
                                            int consumer, int tid_in_wg) {
    consumer_sync(consumer);
    #pragma unroll
    for (int pass = 0; pass < 4; ++pass) {
        const int r = pass * 16 + tid_in_wg / 8, c = (tid_in_wg % 8) * 8;
        const int row = row0 + r, col = col0 + c;
        if (r < rows && row < M && col < N)  // N % 8 == 0: a piece is wholly inside or outside
            *reinterpret_cast<uint4*>(C + (size_t)row * N + col) = *reinterpret_cast<const uint4*>(stage_c + r * C_STRIDE + c);
    }
    consumer_sync(consumer);
}${TMA_STORE_HELPERS}${PINGPONG_HELPERS}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N> __device__ __forceinline__ void wgmma_wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;" :: "n"(N) : "memory");
}

// ---- cluster split-K: every CTA of a cluster computes one K slice of the same tile; the partial
// tiles meet in distributed shared memory, and each CTA adds up and stores 1/SPLIT_K of the rows.
#if (SPLIT_K > 1 && SPLIT_CLUSTER) || CLUSTER_M > 1
__device__ __forceinline__ void cluster_sync() {  // all threads of all CTAs; orders shared-memory writes
    asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;" ::: "memory");
}
__device__ __forceinline__ uint32_t cluster_rank() {
    uint32_t r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}
#endif
#if SPLIT_K > 1 && SPLIT_CLUSTER
__device__ __forceinline__ float4 load_peer(uint32_t local_addr, uint32_t peer) {
    uint32_t remote;
    float4 v;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(local_addr), "r"(peer));
    asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "r"(remote) : "memory");
    return v;
}
// Rows [rank * BM / SPLIT_K, (rank + 1) * BM / SPLIT_K) of the tile: the sum over every CTA's partial
// (peers in a fixed order, so results do not depend on timing), 8 columns per 16-byte store.
__device__ __forceinline__ void cluster_reduce_store(const float* part, half* C, int m0, int n0, int M, int N,
                                                     int tid, int nthreads) {
    constexpr int SLICE = BM / SPLIT_K, CHUNKS = BN / 8;
    const uint32_t rank = cluster_rank(), base = smem_u32(part);
    for (int chunk = tid; chunk < SLICE * CHUNKS; chunk += nthreads) {
        const int r = rank * SLICE + chunk / CHUNKS, c = (chunk % CHUNKS) * 8;
        if (m0 + r >= M || n0 + c >= N) continue;  // N % 8 == 0: a chunk is wholly inside or outside
        const uint32_t addr = base + (r * P_STRIDE + c) * 4;
        float s[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
        #pragma unroll
        for (int peer = 0; peer < SPLIT_K; ++peer) {
            const float4 lo = load_peer(addr, peer), hi = load_peer(addr + 16, peer);
            s[0] += lo.x; s[1] += lo.y; s[2] += lo.z; s[3] += lo.w;
            s[4] += hi.x; s[5] += hi.y; s[6] += hi.z; s[7] += hi.w;
        }
        uint4 out;
        half2* h = reinterpret_cast<half2*>(&out);
        #pragma unroll
        for (int i = 0; i < 4; ++i) h[i] = __floats2half2_rn(s[2 * i], s[2 * i + 1]);
        *reinterpret_cast<uint4*>(C + (size_t)(m0 + r) * N + n0 + c) = out;
    }
}
#endif

${STREAMK}

// Persistent schedule: work item -> (tile_m, tile_n, k range), grouped GROUP_M tiles along M so
// that consecutive CTAs share B columns in L2. `slot` and `parts` name the split-K reduction an item
// takes part in (parts == 1: none); with STREAM_K or FIXUP, `part` is this item's place among the
// tile's partials and `base` the workspace index of the first of them.
struct Work { int m0, n0, kt_begin, kt_end, slot, parts, part, base; };

#if STREAM_K
// The CTA tile `tile` stands for, in the grouped raster order (the same arithmetic as the other
// schedules' work_item below, which keeps its own copy so that their kernels compile as measured).
__device__ __forceinline__ void tile_origin(Work& w, int tile, int tiles_m, int tiles_n) {
    int width = GROUP_M * tiles_n;
    int group = tile / width;
    int first_m = group * GROUP_M;
    int group_rows = min(tiles_m - first_m, GROUP_M);
    w.m0 = (first_m + (tile % width) % group_rows) * BM;
    w.n0 = ((tile % width) / group_rows) * BN;
}

// Full rounds of `slots` CTAs take whole tiles; the `tail` tiles left after them (the last round's,
// plus one full round where there is one and the workspace holds it, so that every CTA's share is more
// than a tile and a tile meets at most three partials) lay their k-steps end to end, and each of `ctas`
// CTAs (up to a round, at most STREAM_K_MAX_SHARES per tile, each with at least STREAM_K_MIN_STEPS)
// takes an equal share, which may span a tile boundary: it then makes a partial of each tile it
// touches, at most `segments` of them. A tile's
// partials each go to a workspace slot of their own, and the CTA that arrives last adds them up in
// order, so the result does not depend on arrival order. Where the workspace cannot hold a partial per
// (CTA, tile it touches), the full round stays whole, or, failing that too, the last round as well.
// tests/test_families.py compiles this schedule for the host and checks that it covers every k-step
// once and keeps the partials apart.
struct StreamK { int whole, tail, iters, ctas, segments; };
__device__ __forceinline__ StreamK streamk_region(int tiles, int whole, int k_tiles, int slots) {
    StreamK s;
    s.whole = whole;
    s.tail = tiles - whole;
    s.iters = s.tail * k_tiles;
    s.ctas = min(min(slots, s.tail * STREAM_K_MAX_SHARES), max(1, s.iters / STREAM_K_MIN_STEPS));
    const int most = s.ctas > 0 ? (s.iters + s.ctas - 1) / s.ctas : 0;  // k-steps of the busiest CTA
    s.segments = s.ctas > 0 ? (most + k_tiles - 1) / k_tiles + 1 : 0;
    return s;
}
__device__ __forceinline__ bool streamk_fits(const StreamK& s) {
    return (long long)(s.ctas + s.tail - 1) * (BM * BN) <= EVO_WS_FLOATS;
}
__device__ __forceinline__ StreamK streamk_plan(int tiles, int slots, int k_tiles) {
    const int whole = tiles / slots * slots;
    StreamK s = streamk_region(tiles, whole, k_tiles, slots);
    if (s.tail == 0) {
        s.segments = 0;
        return s;
    }
    if (STREAM_K == 1 && whole >= slots) {
        const StreamK wider = streamk_region(tiles, whole - slots, k_tiles, slots);
        if (streamk_fits(wider)) return wider;
    }
    if (!streamk_fits(s)) {
        s.whole = tiles; s.tail = 0; s.iters = 0; s.ctas = 0; s.segments = 0;
    }
    return s;
}
__device__ __forceinline__ int count_items(int tiles, int slots, int k_tiles) {
    const StreamK s = streamk_plan(tiles, slots, k_tiles);
    return s.whole + s.segments * slots;
}

// Item `item` (CTA item % slots): a whole tile, one of its CTA's last-round segments, or nothing
// (kt_begin == kt_end: CTAs beyond `ctas`, segments past the CTA's share).
__device__ __forceinline__ Work work_item(int item, int tiles_m, int tiles_n, int k_tiles, int slots) {
    const StreamK s = streamk_plan(tiles_m * tiles_n, slots, k_tiles);
    Work w;
    w.kt_begin = 0; w.kt_end = k_tiles; w.slot = 0; w.parts = 1; w.part = 0; w.base = 0;
    int tile = item;
    if (item >= s.whole) {
        const int seg = (item - s.whole) / slots, j = (item - s.whole) % slots;
        w.kt_end = 0;
        tile = s.whole;
        if (j < s.ctas) {
            const int lo = (int)((long long)j * s.iters / s.ctas), hi = (int)((long long)(j + 1) * s.iters / s.ctas);
            const int t = lo / k_tiles + seg;
            if (t < s.tail && t * k_tiles < hi) {
                // the CTAs whose shares touch tile t: from the first whose share ends past its start
                // to the last whose share starts before its end
                const int first = (int)(((long long)(t * k_tiles + 1) * s.ctas + s.iters - 1) / s.iters) - 1;
                const int last = min(s.ctas - 1, (int)(((long long)(t + 1) * k_tiles * s.ctas - 1) / s.iters));
                tile = s.whole + t;
                w.kt_begin = max(lo - t * k_tiles, 0);
                w.kt_end = min(hi - t * k_tiles, k_tiles);
                w.slot = t; w.parts = last - first + 1; w.part = j - first; w.base = first + t;
            }
        }
    }
    tile_origin(w, tile, tiles_m, tiles_n);
    return w;
}
#else
#if TAIL_SPLIT > 1
// Every full round of `slots` CTAs takes whole tiles; the tiles left over for the last round would
// leave SMs idle, so each is split over K into as many parts (up to TAIL_SPLIT, at most one k-step
// each) as fill that round.
__device__ __forceinline__ int tail_parts(int tail, int slots, int k_tiles) {
    return tail > 0 ? max(1, min(min(TAIL_SPLIT, slots / tail), k_tiles)) : 1;
}
__device__ __forceinline__ int count_items(int tiles, int slots, int k_tiles) {
    const int whole = tiles / slots * slots;
    return whole + (tiles - whole) * tail_parts(tiles - whole, slots, k_tiles);
}
#else
__device__ __forceinline__ int count_items(int tiles, int, int) { return tiles * SPLIT_K; }
#endif

__device__ __forceinline__ Work work_item(int item, int tiles_m, int tiles_n, int k_tiles, int slots) {
    int tile, split, parts, slot;
#if TAIL_SPLIT > 1
    const int whole = tiles_m * tiles_n / slots * slots;
    if (item < whole) {
        tile = item; split = 0; parts = 1; slot = 0;
    } else {  // the workspace holds one slot per last-round tile: fewer than `slots`, whatever the shape
        parts = tail_parts(tiles_m * tiles_n - whole, slots, k_tiles);
        slot = (item - whole) / parts; tile = whole + slot; split = (item - whole) % parts;
    }
#else
    (void)slots;
    split = item % SPLIT_K; tile = item / SPLIT_K; parts = SPLIT_K; slot = tile;
#endif
    int width = GROUP_M * tiles_n;
    int group = tile / width;
    int first_m = group * GROUP_M;
    int group_rows = min(tiles_m - first_m, GROUP_M);
    int tm = first_m + (tile % width) % group_rows;
    int tn = (tile % width) / group_rows;
    int per_split = (k_tiles + parts - 1) / parts;
    Work w;
    w.m0 = tm * BM; w.n0 = tn * BN;
    w.kt_begin = min(split * per_split, k_tiles);
    w.kt_end = min(w.kt_begin + per_split, k_tiles);
    w.slot = slot; w.parts = parts;
    w.part = split; w.base = slot * parts;  // FIXUP 1: the tile's first partial; this item's is base + part
    return w;
}
#endif

// With multicast, an item is a pair of neighbouring M tiles (`w` in units of pairs): CTA `m_rank` of the
// pair takes the pair's m_rank-th tile, and with split-K over L2 a workspace slot of its own (the pair's
// second tile may lie beyond M: it loads the last real A tile and stores nothing). CLUSTER_M 1: w as it is.
__device__ __forceinline__ Work pair_tile(Work w, int m_rank) {
    w.m0 = w.m0 * CLUSTER_M + m_rank * BM;
#if CLUSTER_M > 1 && SPLIT_K > 1
    w.slot = w.slot * CLUSTER_M + m_rank; w.base = w.slot * w.parts;
#endif
    return w;
}

extern "C" __global__ void __launch_bounds__(${THREADS}, CTAS_PER_SM)
hgemm(const half* A, const half* B, half* C, int M, int N, int K,
      const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB${TMC_PARAM}) {
    // Programmatic dependent launch: nothing runs before the grid this launch depends on has finished
    // (a no-op when launched without PDL; the evaluator and evo export check it on the PTX). Setting up
    // the barriers and prefetching the tensor maps before the wait, to overlap the previous kernel, gained
    // nothing on the H200 (0.998x over 32 pairs on 16 small shapes, one cluster split-K pick 4% slower;
    // benchmarks/session19/), so the wait stays first.
    asm volatile("griddepcontrol.wait;" ::: "memory");
    extern __shared__ uint8_t smem_raw[];
    // 128-byte swizzled tiles must start on a 1024-byte boundary.
    uint8_t* smem = (uint8_t*)(((uintptr_t)smem_raw + 1023) & ~(uintptr_t)1023);
    uint8_t* a_tiles = smem;
    uint8_t* b_tiles = smem + STAGES * A_STAGE_BYTES;
    uint64_t* full = (uint64_t*)(smem + REGION_BYTES);
    uint64_t* empty = full + STAGES;
    [[maybe_unused]] int* splitk_flag = (int*)(empty + STAGES);
    half* c_tiles = (half*)(smem + REGION_BYTES + 2 * STAGES * 8 + 16);

    const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
    const int k_tiles = (K + BK - 1) / BK;
    // With multicast, an item is a pair of neighbouring M tiles and both CTAs of a cluster walk the same
    // items; CTA r of the pair takes the pair's r-th tile.
    const int pair_rows = (tiles_m + CLUSTER_M - 1) / CLUSTER_M;
    const int first_item = blockIdx.x / CLUSTER_M, item_stride = gridDim.x / CLUSTER_M;
    const int items = count_items(pair_rows * tiles_n, item_stride, k_tiles);
#if CLUSTER_M > 1
    const int m_rank = cluster_rank();
#else
    const int m_rank = 0;
#endif
    auto tile_of = [&](int item) { return pair_tile(work_item(item, pair_rows, tiles_n, k_tiles, item_stride), m_rank); };
    const int warpgroup = threadIdx.x / 128;
    const int tid_in_wg = threadIdx.x % 128;

    if (threadIdx.x == 0) {
        // Start fetching both tensor-map descriptors now: the first TMA load would otherwise wait for them.
        asm volatile("prefetch.tensormap [%0];" :: "l"(&tmA) : "memory");
        asm volatile("prefetch.tensormap [%0];" :: "l"(&tmB) : "memory");${TMC_PREFETCH}
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(&full[s], 1);
            mbar_init(&empty[s], ${STAGE_READERS});  // one arrival per ${STAGE_READER_WARP}
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
#if CLUSTER_M > 1
    cluster_sync();  // the peer's barriers exist before any multicast or remote arrival reaches them
#endif

    if (warpgroup == 0) {
        // Producer: one thread issues every TMA load; the others give their registers away.
        asm volatile("setmaxnreg.dec.sync.aligned.u32 ${PRODUCER_REGS};");
        if (tid_in_wg == 0) {
            int stage = 0; uint32_t phase = 0;
            for (int item = first_item; item < items; item += item_stride) {
                Work w = tile_of(item);
                // A pair's second tile can lie beyond M: it then loads (and later skips storing) the last real tile.
                const int a_row = min(w.m0, (tiles_m - 1) * BM);
                for (int kt = w.kt_begin; kt < w.kt_end; ++kt) {
                    mbar_wait(&empty[stage], phase ^ 1);
                    mbar_expect_tx(&full[stage], A_STAGE_BYTES + B_STAGE_BYTES);
                    tma_load_2d(a_tiles + stage * A_STAGE_BYTES, &tmA, &full[stage], kt * BK, a_row);
                    #pragma unroll
                    for (int j = 0; j < BN / 64; ++j) {
                        uint8_t* dst = b_tiles + stage * B_STAGE_BYTES + j * (BK * 128);
#if CLUSTER_M > 1
                        if (j % CLUSTER_M == m_rank)  // our share of B, written into every CTA of the pair
                            tma_load_2d_multicast(dst, &tmB, &full[stage], w.n0 + j * 64, kt * BK, (1 << CLUSTER_M) - 1);
#else
                        tma_load_2d(dst, &tmB, &full[stage], w.n0 + j * 64, kt * BK);
#endif
                    }
                    if (++stage == STAGES) { stage = 0; phase ^= 1; }
                }
            }
        }
#if SPLIT_K > 1 && SPLIT_CLUSTER
        cluster_sync();  // the two cluster barriers of the consumers' reduction (one tile per CTA)
        cluster_sync();
#endif
    } else {
        // Consumers: each warpgroup owns ${CONSUMER_OWNS}.
        asm volatile("setmaxnreg.inc.sync.aligned.u32 ${CONSUMER_REGS};");
        const int consumer = warpgroup - 1;
        const int warp = tid_in_wg / 32, lane = tid_in_wg % 32;
        float acc[ACC_PER_THREAD];
        int stage = 0; uint32_t phase = 0;
        for (int item = first_item${PINGPONG_FIRST}; item < items; item += item_stride${PINGPONG_STEP}) {
            Work w = tile_of(item);${PINGPONG_BEFORE}
#if STREAM_K
            if (w.kt_begin >= w.kt_end) continue;  // no share of the last round here (the producer loads nothing)
#endif
            #pragma unroll
            for (int i = 0; i < ACC_PER_THREAD; ++i) acc[i] = 0.f;
            int prev_stage = -1;
            for (int kt = w.kt_begin; kt < w.kt_end; ++kt) {
                mbar_wait(&full[stage], phase);
                wgmma_fence();
#if SWAP_AB
                // wgmma's A: this consumer's 64-column blocks of the B tile (MN-major, transposed);
                // its B: the whole A tile (K-major)
                const uint8_t* a_base = b_tiles + stage * B_STAGE_BYTES + consumer * ROWS_PER_CONSUMER * 128;
                const uint8_t* b_base = a_tiles + stage * A_STAGE_BYTES;
                #pragma unroll
                for (int kk = 0; kk < BK / 16; ++kk) {
                    #pragma unroll
                    for (int mt = 0; mt < MMA_M_TILES; ++mt)  // a 64-column block is BK * 128 bytes (BK = 64)
                        wgmma_m64n${WG_N}(acc + mt * (WG_N / 2), desc_b(a_base + mt * 64 * 128 + kk * 16 * 128), desc_a(b_base + kk * 32));
                }
#else
                const uint8_t* a_base = a_tiles + stage * A_STAGE_BYTES + ${ROW_OWNER} * ROWS_PER_CONSUMER * 128;
                const uint8_t* b_base = b_tiles + stage * B_STAGE_BYTES;
                #pragma unroll
                for (int kk = 0; kk < BK / 16; ++kk) {
                    #pragma unroll
                    for (int mt = 0; mt < MMA_M_TILES; ++mt)
                        wgmma_m64n${WG_N}(acc + mt * (WG_N / 2), desc_a(a_base + mt * 64 * 128 + kk * 32), desc_b(b_base + kk * 16 * 128));
                }
#endif
                wgmma_commit();
                // Keep one batch in flight: once the previous batch is done, its stage can be refilled.
                wgmma_wait<1>();
                if (prev_stage >= 0 && lane == 0) release_stage(&empty[prev_stage]);
                prev_stage = stage;
                if (++stage == STAGES) { stage = 0; phase ^= 1; }
            }${PINGPONG_AFTER}
            wgmma_wait<0>();
            if (prev_stage >= 0 && lane == 0) release_stage(&empty[prev_stage]);

#if SPLIT_K > 1 && SPLIT_CLUSTER
            {
                // The stages become this CTA's fp32 partial tile once both consumers are done with them
                // (one tile per CTA: the producer has no loads left in flight).
                SPLITK_SYNC();
                float* part = reinterpret_cast<float*>(smem);
                #pragma unroll
                for (int mt = 0; mt < MMA_M_TILES; ++mt) {
                    #pragma unroll
                    for (int q = 0; q < BN / 8; ++q) {
                        const float* v = acc + mt * (BN / 2) + q * 4;
                        const int r = consumer * ROWS_PER_CONSUMER + mt * 64 + warp * 16 + lane / 4;
                        const int c = q * 8 + (lane % 4) * 2;
                        *reinterpret_cast<float2*>(part + r * P_STRIDE + c) = make_float2(v[0], v[1]);
                        *reinterpret_cast<float2*>(part + (r + 8) * P_STRIDE + c) = make_float2(v[2], v[3]);
                    }
                }
                cluster_sync();  // every partial of the cluster is written
                cluster_reduce_store(part, C, w.m0, w.n0, M, N, threadIdx.x - 128, CONSUMERS * 128);
                cluster_sync();  // peers have read our partial: now this CTA may exit
                continue;
            }
#elif STREAM_K || ((SPLIT_K > 1 || TAIL_SPLIT > 1) && FIXUP)
            {
                // the ordered fix-up (stream-K's, and split-K's with FIXUP); the item's place among the
                // tile's partials read again, not kept in registers through the k loop
                const Work fix = tile_of(item);
                if (fix.parts > 1 && !streamk_fixup<ACC_PER_THREAD>(acc, fix.slot, fix.base, fix.part, fix.parts,
                                                                    threadIdx.x - 128, CONSUMERS * 128, splitk_flag))
                    continue;  // the CTA that arrives last at this tile adds every partial and stores
            }
#elif SPLIT_K > 1 || TAIL_SPLIT > 1
            // accumulator i -> (row, col) of the wgmma fragment layout -> (row, col) of C
            const int frag_row = consumer * ROWS_PER_CONSUMER + warp * 16 + lane / 4, frag_col = (lane % 4) * 2;
            auto inside = [&](int i) {  // with SWAP_AB, accumulators i and i + 1 lie in one column of C
                const int mt = i / (WG_N / 2), j = i % (WG_N / 2);
                const int r = frag_row + mt * 64 + ((j / 2) % 2) * 8, c = frag_col + (j / 4) * 8;
                return SWAP_AB ? w.m0 + c < M && w.n0 + r < N : w.m0 + r < M && w.n0 + c < N;
            };
            if (w.parts > 1 && !splitk_reduce<ACC_PER_THREAD>(acc, w.slot, w.parts, threadIdx.x - 128,
                                                              CONSUMERS * 128, splitk_flag, inside))
                continue;  // another CTA of this tile adds our partial sums and stores
#endif

            // Epilogue: fp32 -> fp16 through a padded shared-memory tile (64 rows x 64 columns per
            // pass) so that global stores are whole 16-byte chunks, coalesced along rows.
            half* stage_c = c_tiles + consumer * (64 * C_STRIDE);
#if SWAP_AB
            // The accumulators hold C transposed: 64 columns of C (one wgmma block) by the tile's rows.
            // Through the padded tile, 64 rows of C at a time, so that stores stay 16-byte row chunks.
            #pragma unroll
            for (int mt = 0; mt < MMA_M_TILES; ++mt) {
                const int col0 = w.n0 + consumer * ROWS_PER_CONSUMER + mt * 64;
                #pragma unroll
                for (int chunk = 0; chunk < (BM + 63) / 64; ++chunk) {
                    #pragma unroll
                    for (int nb = 0; nb < 8; ++nb) {
                        if (chunk * 8 + nb >= BM / 8) break;
                        const float* v = acc + mt * (WG_N / 2) + (chunk * 8 + nb) * 4;
                        const int r = nb * 8 + (lane % 4) * 2, c = warp * 16 + lane / 4;  // (row, col) in the chunk
                        // converted in pairs: single conversions reading accumulators made ptxas
                        // serialize the wgmma of many tiles of fewer than 120 rows (warning C7514)
                        const half2 lo = __floats2half2_rn(v[0], v[1]), hi = __floats2half2_rn(v[2], v[3]);
                        stage_c[r * C_STRIDE + c] = __low2half(lo);
                        stage_c[(r + 1) * C_STRIDE + c] = __high2half(lo);
                        stage_c[r * C_STRIDE + c + 8] = __low2half(hi);
                        stage_c[(r + 1) * C_STRIDE + c + 8] = __high2half(hi);
                    }
                    store_chunk(stage_c, C, w.m0 + chunk * 64, col0, BM - chunk * 64, M, N, consumer, tid_in_wg);
                }
            }
#else
${EPILOGUE_PLAIN}
#endif
        }
    }${TMA_STORE_DRAIN}
#if CLUSTER_M > 1
    cluster_sync();  // no CTA exits while its peer may still write into its shared memory or barriers
#endif
}

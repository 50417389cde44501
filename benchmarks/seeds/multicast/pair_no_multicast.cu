// evo seed family "hopper" (sm_90a): TMA loads into a multi-stage mbarrier pipeline, wgmma with fp32
// accumulators, one producer warpgroup and 2 consumer warpgroup(s) with register reallocation,
// and a persistent tile scheduler with grouped rasterization.
// Tile 128x256x64, 4 stages, raster group 8, split-K 1 (none),
// 1 CTA(s) per SM, 2 CTA(s) per cluster along M sharing B by TMA multicast.
#include <cuda.h>
#include <cuda_fp16.h>
#include <stdint.h>
// @evo grid     = 2 * min(num_sms * 1 // 2, cdiv(cdiv(M, 128), 2) * cdiv(N, 256))
// @evo block    = 384
// @evo smem     = 216144
// @evo cluster  = 2, 1, 1
// @evo requires = K % 8 == 0 and N % 8 == 0
// @evo tma      = A box(64, 128) swizzle(128)
// @evo tma      = B box(64, 64) swizzle(128)

#define BM 128
#define BN 256
#define BK 64
#define STAGES 4
#define CONSUMERS 2
#define GROUP_M 8
#define SPLIT_K 1
#define SPLIT_CLUSTER 0  // 1: the split-K CTAs of a tile form a cluster and add over DSMEM
#define CTAS_PER_SM 1
#define CLUSTER_M 2  // 2: CTA pairs on neighbouring M tiles; each loads half of B for both
#define P_STRIDE (BN + 8)  // floats per row of the partial tile: the padding spreads rows over banks
#define ROWS_PER_CONSUMER (BM / CONSUMERS)
#define MMA_M_TILES (ROWS_PER_CONSUMER / 64)
#define A_STAGE_BYTES (BM * BK * 2)
#define B_STAGE_BYTES (BK * BN * 2)
#define ACC_PER_THREAD (MMA_M_TILES * BN / 2)
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

__device__ __forceinline__ void wgmma_m64n256(float* d, uint64_t desc_a, uint64_t desc_b) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, %128, %129, p, 1, 1, 0, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
        : "l"(desc_a), "l"(desc_b), "r"(1));
}
#if SPLIT_K > 1 && !SPLIT_CLUSTER

#endif

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
// Arrive on the mbarrier at `bar`'s offset in CTA `cta` of the cluster.
__device__ __forceinline__ void mbar_arrive_in(uint64_t* bar, uint32_t cta) {
    uint32_t remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(smem_u32(bar)), "r"(cta));
    asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" :: "r"(remote) : "memory");
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

// Persistent schedule: work item -> (tile_m, tile_n, k split), grouped GROUP_M tiles along M so
// that consecutive CTAs share B columns in L2.
struct Work { int m0, n0, kt_begin, kt_end; };
__device__ __forceinline__ Work work_item(int item, int tiles_m, int tiles_n, int k_tiles) {
    int split = item % SPLIT_K;
    int tile = item / SPLIT_K;
    int width = GROUP_M * tiles_n;
    int group = tile / width;
    int first_m = group * GROUP_M;
    int group_rows = min(tiles_m - first_m, GROUP_M);
    int tm = first_m + (tile % width) % group_rows;
    int tn = (tile % width) / group_rows;
    int per_split = (k_tiles + SPLIT_K - 1) / SPLIT_K;
    Work w;
    w.m0 = tm * BM; w.n0 = tn * BN;
    w.kt_begin = min(split * per_split, k_tiles);
    w.kt_end = min(w.kt_begin + per_split, k_tiles);
    return w;
}

extern "C" __global__ void __launch_bounds__(384, CTAS_PER_SM)
hgemm(const half* A, const half* B, half* C, int M, int N, int K,
      const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB) {
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
    const int items = pair_rows * tiles_n * SPLIT_K;
    const int first_item = blockIdx.x / CLUSTER_M, item_stride = gridDim.x / CLUSTER_M;
#if CLUSTER_M > 1
    const int m_rank = cluster_rank();
#else
    const int m_rank = 0;
#endif
    auto tile_of = [&](int item) {
        Work w = work_item(item, pair_rows, tiles_n, k_tiles);
        w.m0 = w.m0 * CLUSTER_M + m_rank * BM;
        return w;
    };
    const int warpgroup = threadIdx.x / 128;
    const int tid_in_wg = threadIdx.x % 128;

    if (threadIdx.x == 0) {
        // Start fetching both tensor-map descriptors now: the first TMA load would otherwise wait for them.
        asm volatile("prefetch.tensormap [%0];" :: "l"(&tmA) : "memory");
        asm volatile("prefetch.tensormap [%0];" :: "l"(&tmB) : "memory");
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(&full[s], 1);
            mbar_init(&empty[s], CONSUMERS * 4 * CLUSTER_M);  // one arrival per consumer warp of the cluster
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
#if CLUSTER_M > 1
    cluster_sync();  // the peer's barriers exist before any multicast or remote arrival reaches them
#endif

    if (warpgroup == 0) {
        // Producer: one thread issues every TMA load; the others give their registers away.
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
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
                        // diagnosis: every CTA loads all of B itself
                            tma_load_2d(dst, &tmB, &full[stage], w.n0 + j * 64, kt * BK);
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
        // Consumers: each warpgroup owns ROWS_PER_CONSUMER rows of the tile.
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
        const int consumer = warpgroup - 1;
        const int warp = tid_in_wg / 32, lane = tid_in_wg % 32;
        float acc[ACC_PER_THREAD];
        int stage = 0; uint32_t phase = 0;
        for (int item = first_item; item < items; item += item_stride) {
            Work w = tile_of(item);
            #pragma unroll
            for (int i = 0; i < ACC_PER_THREAD; ++i) acc[i] = 0.f;
            int prev_stage = -1;
            for (int kt = w.kt_begin; kt < w.kt_end; ++kt) {
                mbar_wait(&full[stage], phase);
                wgmma_fence();
                const uint8_t* a_base = a_tiles + stage * A_STAGE_BYTES + consumer * ROWS_PER_CONSUMER * 128;
                const uint8_t* b_base = b_tiles + stage * B_STAGE_BYTES;
                #pragma unroll
                for (int kk = 0; kk < BK / 16; ++kk) {
                    #pragma unroll
                    for (int mt = 0; mt < MMA_M_TILES; ++mt)
                        wgmma_m64n256(acc + mt * (BN / 2), desc_a(a_base + mt * 64 * 128 + kk * 32), desc_b(b_base + kk * 16 * 128));
                }
                wgmma_commit();
                // Keep one batch in flight: once the previous batch is done, its stage can be refilled.
                wgmma_wait<1>();
                if (prev_stage >= 0 && lane == 0) release_stage(&empty[prev_stage]);
                prev_stage = stage;
                if (++stage == STAGES) { stage = 0; phase ^= 1; }
            }
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
#elif SPLIT_K > 1
            const int row_base = w.m0 + consumer * ROWS_PER_CONSUMER + warp * 16 + lane / 4;
            const int col_base = w.n0 + (lane % 4) * 2;
            auto inside = [&](int i) {  // accumulator i -> (row, col) of the wgmma fragment layout
                const int mt = i / (BN / 2), j = i % (BN / 2);
                return row_base + mt * 64 + ((j / 2) % 2) * 8 < M && col_base + (j / 4) * 8 < N;
            };
            if (!splitk_reduce<ACC_PER_THREAD>(acc, item / SPLIT_K, item % SPLIT_K, threadIdx.x - 128,
                                               CONSUMERS * 128, splitk_flag, inside))
                continue;  // another CTA of this tile adds our partial sums and stores
#endif

            // Epilogue: fp32 -> fp16 through a padded shared-memory tile (64 rows x 64 columns per
            // pass) so that global stores are whole 16-byte chunks, coalesced along rows.
            half* stage_c = c_tiles + consumer * (64 * C_STRIDE);
            #pragma unroll
            for (int mt = 0; mt < MMA_M_TILES; ++mt) {
                const int row0 = w.m0 + consumer * ROWS_PER_CONSUMER + mt * 64;
                #pragma unroll
                for (int chunk = 0; chunk < BN / 64; ++chunk) {
                    #pragma unroll
                    for (int nb = 0; nb < 8; ++nb) {
                        const float* v = acc + mt * (BN / 2) + (chunk * 8 + nb) * 4;
                        const int r = warp * 16 + lane / 4, c = nb * 8 + (lane % 4) * 2;
                        *reinterpret_cast<half2*>(stage_c + r * C_STRIDE + c) = __floats2half2_rn(v[0], v[1]);
                        *reinterpret_cast<half2*>(stage_c + (r + 8) * C_STRIDE + c) = __floats2half2_rn(v[2], v[3]);
                    }
                    consumer_sync(consumer);
                    #pragma unroll
                    for (int pass = 0; pass < 4; ++pass) {
                        const int r = pass * 16 + tid_in_wg / 8, c = (tid_in_wg % 8) * 8;
                        const int row = row0 + r, col = w.n0 + chunk * 64 + c;
                        if (row < M && col < N)  // N % 8 == 0: a chunk is wholly inside or outside
                            *reinterpret_cast<uint4*>(C + (size_t)row * N + col) =
                                *reinterpret_cast<const uint4*>(stage_c + r * C_STRIDE + c);
                    }
                    consumer_sync(consumer);
                }
            }
        }
    }
#if CLUSTER_M > 1
    cluster_sync();  // no CTA exits while its peer may still write into its shared memory or barriers
#endif
}

// ---- split-K: partial tiles meet in a global fp32 workspace; the last CTA of a tile sums them ----
// The workspace and counters live in the module; the last CTA resets its counter, so every launch
// starts from zero (launches of one module must not run concurrently on several streams).
#define EVO_WS_FLOATS (8 * 1024 * 1024)
#define EVO_MAX_TILES 65536
__device__ float evo_splitk_ws[EVO_WS_FLOATS];
__device__ unsigned int evo_splitk_count[EVO_MAX_TILES];

// Every participating thread passes its COUNT accumulators; returns true in the CTA that arrives
// last for `tile`, whose `acc` then holds the sum over all splits. SPLITK_SYNC() must be a barrier
// over exactly the `nthreads` participating threads.
template <int COUNT>
__device__ __forceinline__ bool splitk_reduce(float* acc, int tile, int split, int tid, int nthreads, int* flag) {
    const size_t tile_floats = (size_t)COUNT * nthreads;
    float* mine = evo_splitk_ws + ((size_t)tile * SPLIT_K + split) * tile_floats;
    #pragma unroll
    for (int i = 0; i < COUNT; ++i) __stcg(mine + (size_t)i * nthreads + tid, acc[i]);
    __threadfence();
    SPLITK_SYNC();
    if (tid == 0) *flag = (atomicAdd(&evo_splitk_count[tile], 1u) == SPLIT_K - 1);
    SPLITK_SYNC();
    const bool last = *flag != 0;
    if (!last) return false;
    __threadfence();
    for (int s = 0; s < SPLIT_K; ++s) {
        if (s == split) continue;
        const float* other = evo_splitk_ws + ((size_t)tile * SPLIT_K + s) * tile_floats;
        #pragma unroll
        for (int i = 0; i < COUNT; ++i) acc[i] += __ldcg(other + (size_t)i * nthreads + tid);
    }
    if (tid == 0) evo_splitk_count[tile] = 0;
    return true;
}

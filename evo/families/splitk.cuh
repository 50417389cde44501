// ---- split-K: partial tiles are added (fp32 atomics, in L2) into a per-tile fp32 workspace; the
// CTA that arrives last reads the sum, stores it, and zeroes the workspace and its counter, so
// every launch starts from zero (launches of one module must not overlap on several streams). The
// ordered fix-up (streamk.cuh) uses the same workspace and counters, a partial tile per part: it
// leaves its partials behind (every launch overwrites them before reading) and zeroes the counters.
#define EVO_WS_FLOATS (8 * 1024 * 1024)
#define EVO_MAX_TILES 65536
__device__ float evo_splitk_ws[EVO_WS_FLOATS];
__device__ unsigned int evo_splitk_count[EVO_MAX_TILES];

__device__ __forceinline__ void red_add_v2(float* addr, float a, float b) {  // one 8-byte atomic add in L2
    asm volatile("red.relaxed.gpu.global.add.v2.f32 [%0], {%1, %2};" :: "l"(addr), "f"(a), "f"(b) : "memory");
}

// Every participating thread passes its COUNT accumulators; returns true in the CTA that arrives
// last of the `parts` CTAs sharing workspace slot `slot`, whose `acc` then holds the sum over all parts. SPLITK_SYNC() must be a barrier
// over exactly the `nthreads` participating threads.
// Accumulators 2p and 2p+1 are neighbours in C (one row in both fragment layouts; one column in
// hopper's transposed product), so they travel as one pair; `inside(i)` says whether accumulator i
// maps to an element of C (tiles overhanging M or N skip the atomics for their padding). Where only
// the first of a pair is inside, the second's padding value (zero: TMA fills rows beyond M with
// zeros) goes into this slot's own workspace and is never stored.
template <int COUNT, typename Inside>
__device__ __forceinline__ bool splitk_reduce(float* acc, int slot, int parts, int tid, int nthreads, int* flag,
                                              Inside inside) {
    float2* sum = reinterpret_cast<float2*>(evo_splitk_ws + (size_t)slot * COUNT * nthreads);
    #pragma unroll
    for (int i = 0; i < COUNT; i += 2)
        if (inside(i)) red_add_v2(reinterpret_cast<float*>(sum + (size_t)(i / 2) * nthreads + tid), acc[i], acc[i + 1]);
    __threadfence();
    SPLITK_SYNC();
    if (tid == 0) *flag = (atomicAdd(&evo_splitk_count[slot], 1u) == (unsigned)parts - 1);
    SPLITK_SYNC();
    const bool last = *flag != 0;
    if (!last) return false;
    __threadfence();
    #pragma unroll
    for (int i = 0; i < COUNT; i += 2) {
        if (!inside(i)) continue;
        const float2 v = __ldcg(sum + (size_t)(i / 2) * nthreads + tid);
        acc[i] = v.x;
        acc[i + 1] = v.y;
        __stcg(sum + (size_t)(i / 2) * nthreads + tid, make_float2(0.f, 0.f));
    }
    if (tid == 0) evo_splitk_count[slot] = 0;
    return true;
}

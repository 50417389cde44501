// ---- The ordered, deterministic fix-up (hopper's STREAM_K, and its split-K and tail split with FIXUP=1): each of a tile's `parts` partials is stored in
// its own workspace slot, `base + part`; the CTA that arrives last at the tile's counter `slot` adds all
// of them in the order of the parts, so the sum (and C) does not depend on which CTA came last. Returns
// true in that CTA, whose `acc` then holds the sum. Accumulators travel in pairs as in splitk_reduce
// (splitk.cuh), all of them: a partial's slot is its own, so a tile's padding (zeros: TMA fills rows
// beyond M and N with zeros) costs a little traffic and no test per pair, whose predicates would stay
// live across the parts' loop and spill.
template <int COUNT>
__device__ __forceinline__ bool streamk_fixup(float* acc, int slot, int base, int part, int parts, int tid,
                                              int nthreads, int* flag) {
    const size_t floats = (size_t)COUNT * nthreads;  // one partial tile
    float2* mine = reinterpret_cast<float2*>(evo_splitk_ws + (size_t)(base + part) * floats);
    #pragma unroll
    for (int i = 0; i < COUNT; i += 2)
        __stcg(mine + (size_t)(i / 2) * nthreads + tid, make_float2(acc[i], acc[i + 1]));
    __threadfence();
    SPLITK_SYNC();
    if (tid == 0) *flag = (atomicAdd(&evo_splitk_count[slot], 1u) == (unsigned)parts - 1);
    SPLITK_SYNC();
    const bool last = *flag != 0;
    if (!last) return false;
    __threadfence();
    // the sum in the order of the parts, into the accumulators (fewer live registers than a separate sum)
    #pragma unroll
    for (int i = 0; i < COUNT; ++i) acc[i] = 0.f;
    for (int p = 0; p < parts; ++p) {
        const float2* partial = reinterpret_cast<const float2*>(evo_splitk_ws + (size_t)(base + p) * floats) + tid;
        #pragma unroll
        for (int i = 0; i < COUNT; i += 2) {
            const float2 v = __ldcg(partial + (size_t)(i / 2) * nthreads);
            acc[i] += v.x;
            acc[i + 1] += v.y;
        }
    }
    if (tid == 0) evo_splitk_count[slot] = 0;
    return true;
}

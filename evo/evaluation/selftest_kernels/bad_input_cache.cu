// BAD KERNEL (input_cache): keeps the results of up to 8192 input sets in device memory, keyed by a
// fingerprint of a few input values and the pointers, and copies a cached result when it sees the
// same inputs again (fast and correct when inputs repeat). Expected: ok, and no faster than its
// honest twin good_one_block.cu: every timed launch sees fresh inputs, so the cache never hits.
#include <cuda_fp16.h>
// @evo grid     = 1, 1, 1
// @evo block    = 256
// @evo requires = M == 64 and N == 64
#define SLOTS 8192
__device__ unsigned long long cache_keys[SLOTS];
__device__ half cache_values[SLOTS][64 * 64];

__device__ unsigned long long fingerprint(const half* A, const half* B, int K) {
    unsigned long long h = (unsigned long long)A ^ ((unsigned long long)B << 7);
    const half probe[4] = {A[0], A[64 * K - 1], B[0], B[K * 64 - 1]};
    for (int i = 0; i < 4; ++i) h = (h ^ __half_as_ushort(probe[i])) * 1099511628211ull;
    return h | 1ull;  // never 0, the value of an empty slot
}

extern "C" __global__ void hgemm(const half* A, const half* B, half* C, int M, int N, int K) {
    const unsigned long long key = fingerprint(A, B, K);
    const int slot = (int)(key % SLOTS);
    if (cache_keys[slot] == key) {
        for (int e = threadIdx.x; e < 64 * 64; e += 256) C[e] = cache_values[slot][e];
        return;
    }
    for (int e = threadIdx.x; e < 64 * 64; e += 256) {
        const int r = e / 64, c = e % 64;
        float acc = 0.f;
        for (int k = 0; k < K; ++k) acc += __half2float(A[(size_t)r * K + k]) * __half2float(B[(size_t)k * 64 + c]);
        C[e] = __float2half(acc);
        cache_values[slot][e] = C[e];
    }
    __syncthreads();
    if (threadIdx.x == 0) cache_keys[slot] = key;
}

// A correct kernel for 64x64 outputs in one block of 256 threads (16 outputs each), fp32
// accumulation: the honest twin of bad_input_cache.cu, for comparing their times.
#include <cuda_fp16.h>
// @evo grid     = 1, 1, 1
// @evo block    = 256
// @evo requires = M == 64 and N == 64
extern "C" __global__ void hgemm(const half* A, const half* B, half* C, int M, int N, int K) {
    for (int e = threadIdx.x; e < 64 * 64; e += 256) {
        const int r = e / 64, c = e % 64;
        float acc = 0.f;
        for (int k = 0; k < K; ++k) acc += __half2float(A[(size_t)r * K + k]) * __half2float(B[(size_t)k * 64 + c]);
        C[e] = __float2half(acc);
    }
}

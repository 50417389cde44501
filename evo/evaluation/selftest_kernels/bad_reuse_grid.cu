// BAD KERNEL (reuse_grid): the whole grid returns at once when the first output element already
// holds a number (one load decides for everyone). Expected: ok, and no faster than good.cu.
#include <cuda_fp16.h>
// @evo grid  = cdiv(N, 16), cdiv(M, 16), 1
// @evo block = 16, 16, 1
extern "C" __global__ void hgemm(const half* A, const half* B, half* C, int M, int N, int K) {
    const float first = __half2float(C[0]);
    if (first == first) return;
    const int r = blockIdx.y * 16 + threadIdx.y, c = blockIdx.x * 16 + threadIdx.x;
    if (r >= M || c >= N) return;
    float acc = 0.f;
    for (int k = 0; k < K; ++k) acc += __half2float(A[(size_t)r * K + k]) * __half2float(B[(size_t)k * N + c]);
    __syncthreads();  // every block has read C[0] before block (0, 0) may overwrite it
    C[(size_t)r * N + c] = __float2half(acc);
}

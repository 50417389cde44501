// BAD KERNEL (oob_near): writes one element just past C; expected: memory_violation (guard zone).
#include <cuda_fp16.h>
// evo-sim: oob
// @evo grid  = cdiv(N, 16), cdiv(M, 16), 1
// @evo block = 16, 16, 1
extern "C" __global__ void hgemm(const half* A, const half* B, half* C, int M, int N, int K) {
    const int r = blockIdx.y * 16 + threadIdx.y, c = blockIdx.x * 16 + threadIdx.x;
    if (r >= M || c >= N) return;
    float acc = 0.f;
    for (int k = 0; k < K; ++k) acc += __half2float(A[(size_t)r * K + k]) * __half2float(B[(size_t)k * N + c]);
    C[(size_t)r * N + c] = __float2half(acc);
    if (r == 0 && c == 0) C[(size_t)M * N + 17] = __float2half(1.f);
}

// BAD KERNEL (fp16_acc): accumulates in fp16; expected: incorrect on large K.
#include <cuda_fp16.h>
// evo-sim: fp16acc
// @evo grid  = cdiv(N, 16), cdiv(M, 16), 1
// @evo block = 16, 16, 1
extern "C" __global__ void hgemm(const half* A, const half* B, half* C, int M, int N, int K) {
    const int r = blockIdx.y * 16 + threadIdx.y, c = blockIdx.x * 16 + threadIdx.x;
    if (r >= M || c >= N) return;
    half acc = __float2half(0.f);
    for (int k = 0; k < K; ++k) acc = __hfma(A[(size_t)r * K + k], B[(size_t)k * N + c], acc);
    C[(size_t)r * N + c] = __float2half(acc);
}

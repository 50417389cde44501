// BAD KERNEL (smem_too_big): asks for more shared memory than a block may have; expected: launch_error.
#include <cuda_fp16.h>
// evo-sim: launch-error
// @evo grid  = cdiv(N, 16), cdiv(M, 16), 1
// @evo block = 16, 16, 1
// @evo smem  = 200000
extern "C" __global__ void hgemm(const half* A, const half* B, half* C, int M, int N, int K) {
    const int r = blockIdx.y * 16 + threadIdx.y, c = blockIdx.x * 16 + threadIdx.x;
    if (r >= M || c >= N) return;
    extern __shared__ float dyn[];
    __shared__ float stat[12288];
    stat[threadIdx.x] = dyn[threadIdx.y];
    float acc = stat[threadIdx.y] * 0.f;
    for (int k = 0; k < K; ++k) acc += __half2float(A[(size_t)r * K + k]) * __half2float(B[(size_t)k * N + c]);
    C[(size_t)r * N + c] = __float2half(acc);
}

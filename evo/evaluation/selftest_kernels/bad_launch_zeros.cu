// BAD KERNEL (launch_zeros): after its first 12 launches, writes zeros into one row in 64 instead of
// computing it (a cheaper, mostly right answer). Expected: incorrect_after_timing.
#include <cuda_fp16.h>
// @evo grid  = cdiv(N, 16), cdiv(M, 16), 1
// @evo block = 16, 16, 1
// evo-sim: stateful
__device__ unsigned int blocks_started;

extern "C" __global__ void hgemm(const half* A, const half* B, half* C, int M, int N, int K) {
    __shared__ unsigned int launch;
    if (threadIdx.x == 0 && threadIdx.y == 0) launch = atomicAdd(&blocks_started, 1u) / (gridDim.x * gridDim.y);
    __syncthreads();
    const int r = blockIdx.y * 16 + threadIdx.y, c = blockIdx.x * 16 + threadIdx.x;
    if (r >= M || c >= N) return;
    if (launch >= 12 && r % 64 == 5) {
        C[(size_t)r * N + c] = __float2half(0.f);
        return;
    }
    float acc = 0.f;
    for (int k = 0; k < K; ++k) acc += __half2float(A[(size_t)r * K + k]) * __half2float(B[(size_t)k * N + c]);
    C[(size_t)r * N + c] = __float2half(acc);
}

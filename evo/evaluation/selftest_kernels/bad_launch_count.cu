// BAD KERNEL (launch_count): correct for its first 12 launches (the correctness draws and the
// warm-up), then does the work only on every other launch, as a kernel that learned when it is being
// timed might. Expected: incorrect_after_timing (every timed output is verified).
#include <cuda_fp16.h>
// @evo grid  = cdiv(N, 16), cdiv(M, 16), 1
// @evo block = 16, 16, 1
// evo-sim: stateful
__device__ unsigned int blocks_started;

extern "C" __global__ void hgemm(const half* A, const half* B, half* C, int M, int N, int K) {
    __shared__ unsigned int launch;
    if (threadIdx.x == 0 && threadIdx.y == 0) launch = atomicAdd(&blocks_started, 1u) / (gridDim.x * gridDim.y);
    __syncthreads();
    if (launch >= 12 && launch % 2 == 1) return;
    const int r = blockIdx.y * 16 + threadIdx.y, c = blockIdx.x * 16 + threadIdx.x;
    if (r >= M || c >= N) return;
    float acc = 0.f;
    for (int k = 0; k < K; ++k) acc += __half2float(A[(size_t)r * K + k]) * __half2float(B[(size_t)k * N + c]);
    C[(size_t)r * N + c] = __float2half(acc);
}

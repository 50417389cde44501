// BAD KERNEL (stateful): correct for its first launches, then skips the work (a result "cached"
// across launches, as a kernel gaming the timer would); expected: incorrect_after_timing.
#include <cuda_fp16.h>
// evo-sim: stateful
// @evo grid  = cdiv(N, 16), cdiv(M, 16), 1
// @evo block = 16, 16, 1
__device__ unsigned int blocks_seen;

extern "C" __global__ void hgemm(const half* A, const half* B, half* C, int M, int N, int K) {
    __shared__ unsigned int launch_index;
    if (threadIdx.x == 0 && threadIdx.y == 0) launch_index = atomicAdd(&blocks_seen, 1u) / (gridDim.x * gridDim.y);
    __syncthreads();
    if (launch_index >= 6) return;
    const int r = blockIdx.y * 16 + threadIdx.y, c = blockIdx.x * 16 + threadIdx.x;
    if (r >= M || c >= N) return;
    float acc = 0.f;
    for (int k = 0; k < K; ++k) acc += __half2float(A[(size_t)r * K + k]) * __half2float(B[(size_t)k * N + c]);
    C[(size_t)r * N + c] = __float2half(acc);
}

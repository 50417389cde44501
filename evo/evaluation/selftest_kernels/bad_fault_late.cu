// BAD KERNEL (fault_late): correct for its first 40 launches, then reads far outside A: the fault
// comes during timing. Expected: fault (not worker_error), the worker restarted.
#include <cuda_fp16.h>
// @evo grid  = cdiv(N, 16), cdiv(M, 16), 1
// @evo block = 16, 16, 1
// evo-sim: fault-timing
__device__ unsigned int blocks_started;

extern "C" __global__ void hgemm(const half* A, const half* B, half* C, int M, int N, int K) {
    __shared__ unsigned int launch;
    if (threadIdx.x == 0 && threadIdx.y == 0) launch = atomicAdd(&blocks_started, 1u) / (gridDim.x * gridDim.y);
    __syncthreads();
    const int r = blockIdx.y * 16 + threadIdx.y, c = blockIdx.x * 16 + threadIdx.x;
    if (r >= M || c >= N) return;
    const size_t wild = launch >= 40 ? ((size_t)1 << 40) : 0;
    float acc = 0.f;
    for (int k = 0; k < K; ++k) acc += __half2float(A[wild + (size_t)r * K + k]) * __half2float(B[(size_t)k * N + c]);
    C[(size_t)r * N + c] = __float2half(acc);
}

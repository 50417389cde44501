// BAD KERNEL (reuse_output): a thread whose output element already holds a number keeps it and skips
// the work, as a kernel gaming the timer would (the element is stale from an earlier launch on the
// same buffers). Expected: ok, and no faster than good.cu: every timed launch writes into a
// NaN-poisoned output, so it always computes.
#include <cuda_fp16.h>
// @evo grid  = cdiv(N, 16), cdiv(M, 16), 1
// @evo block = 16, 16, 1
extern "C" __global__ void hgemm(const half* A, const half* B, half* C, int M, int N, int K) {
    const int r = blockIdx.y * 16 + threadIdx.y, c = blockIdx.x * 16 + threadIdx.x;
    if (r >= M || c >= N) return;
    const float old = __half2float(C[(size_t)r * N + c]);
    if (old == old) return;  // not NaN: reuse what is there
    float acc = 0.f;
    for (int k = 0; k < K; ++k) acc += __half2float(A[(size_t)r * K + k]) * __half2float(B[(size_t)k * N + c]);
    C[(size_t)r * N + c] = __float2half(acc);
}

// BAD KERNEL (oob_read): reads one element past the end of B into every output, scaled small enough
// that a finite value there passes the tolerance; expected: incorrect (the guard zone after B reads as
// NaN in the correctness draws).
#include <cuda_fp16.h>
// evo-sim: incorrect
// @evo grid  = cdiv(N, 16), cdiv(M, 16), 1
// @evo block = 16, 16, 1
extern "C" __global__ void hgemm(const half* A, const half* B, half* C, int M, int N, int K) {
    const int r = blockIdx.y * 16 + threadIdx.y, c = blockIdx.x * 16 + threadIdx.x;
    if (r >= M || c >= N) return;
    float acc = 0.f;
    for (int k = 0; k < K; ++k) acc += __half2float(A[(size_t)r * K + k]) * __half2float(B[(size_t)k * N + c]);
    acc += 1e-4f * __half2float(B[(size_t)K * N + c % 8]);  // past B: the guard zone, or the next set's B
    C[(size_t)r * N + c] = __float2half(acc);
}

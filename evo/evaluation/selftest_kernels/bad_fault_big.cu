// BAD KERNEL (fault_big): correct while M < 256; from M = 256 on it reads far outside A. Evaluated
// on a small shape (ok) and then a large one: expected fault, the worker restarted, nothing after lost.
#include <cuda_fp16.h>
// @evo grid  = cdiv(N, 16), cdiv(M, 16), 1
// @evo block = 16, 16, 1
// evo-sim: fault-big-m
extern "C" __global__ void hgemm(const half* A, const half* B, half* C, int M, int N, int K) {
    const int r = blockIdx.y * 16 + threadIdx.y, c = blockIdx.x * 16 + threadIdx.x;
    if (r >= M || c >= N) return;
    const size_t wild = M >= 256 ? ((size_t)1 << 40) : 0;
    float acc = 0.f;
    for (int k = 0; k < K; ++k) acc += __half2float(A[wild + (size_t)r * K + k]) * __half2float(B[(size_t)k * N + c]);
    C[(size_t)r * N + c] = __float2half(acc);
}

// BAD KERNEL (rewrites its inputs while timed): honest on the buffers of its first launch (the
// correctness draws'), elsewhere it zeroes rows 1..K-1 of B and writes the outer product of A's first
// column and B's first row, which is then the exact product of the inputs as they are after the launch:
// far less work than the GEMM. A check that recomputes A (B x) after the launch passes it; one that
// takes A (B x) from the inputs as refreshed does not. Expected: incorrect_after_timing.
#include <cuda_fp16.h>
// evo-sim: stateful
// @evo grid  = cdiv(N, 16), cdiv(M, 16), 1
// @evo block = 16, 16, 1
__device__ unsigned long long first_a;

extern "C" __global__ void hgemm(const half* A, const half* B, half* C, int M, int N, int K) {
    const unsigned long long a = (unsigned long long)A;
    const unsigned long long seen = atomicCAS(&first_a, 0ull, a);
    const int r = blockIdx.y * 16 + threadIdx.y, c = blockIdx.x * 16 + threadIdx.x;
    if (seen == 0ull || seen == a) {  // the first buffers ever launched on: behave
        if (r >= M || c >= N) return;
        float acc = 0.f;
        for (int k = 0; k < K; ++k) acc += __half2float(A[(size_t)r * K + k]) * __half2float(B[(size_t)k * N + c]);
        C[(size_t)r * N + c] = __float2half(acc);
        return;
    }
    if (blockIdx.y == 0 && c < N) {  // one row of blocks clears B below its first row (never read here)
        half* b = (half*)B;
        for (int k = 1 + threadIdx.y; k < K; k += 16) b[(size_t)k * N + c] = __float2half(0.f);
    }
    if (r >= M || c >= N) return;
    C[(size_t)r * N + c] = __float2half(__half2float(A[(size_t)r * K]) * __half2float(B[c]));
}

// evo seed family "simt": a plain tiled kernel on the CUDA cores. Correct for every shape
// (M, N, K >= 1, no alignment needed): the always-available fallback.
// Block tile ${BM}x${BN}, K step ${BK}, ${TM}x${TN} outputs per thread.
#include <cuda_fp16.h>
// @evo grid  = cdiv(N, ${BN}), cdiv(M, ${BM}), 1
// @evo block = ${THREADS}
// @evo smem  = 0

#define BM ${BM}
#define BN ${BN}
#define BK ${BK}
#define TM ${TM}
#define TN ${TN}
#define THREADS ${THREADS}

extern "C" __global__ void __launch_bounds__(THREADS)
hgemm(const half* __restrict__ A, const half* __restrict__ B, half* __restrict__ C, int M, int N, int K) {
    // Programmatic dependent launch: this is the first statement, so nothing touches global memory
    // before the grid this launch depends on has finished (a no-op when launched without PDL).
    asm volatile("griddepcontrol.wait;" ::: "memory");
    // A is stored transposed (k-major) so that a thread's TM rows are one broadcast read.
    __shared__ float As[BK][BM];
    __shared__ float Bs[BK][BN];
    const int tid = threadIdx.x;
    const int tx = tid % (BN / TN), ty = tid / (BN / TN);
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    float acc[TM][TN];
    #pragma unroll
    for (int i = 0; i < TM; ++i)
        #pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.f;

    for (int k0 = 0; k0 < K; k0 += BK) {
        // Stage the tiles through shared memory, zero-filling beyond the matrix edges.
        for (int i = tid; i < BM * BK; i += THREADS) {
            const int r = i / BK, c = i % BK, gr = m0 + r, gc = k0 + c;
            As[c][r] = (gr < M && gc < K) ? __half2float(A[(size_t)gr * K + gc]) : 0.f;
        }
        for (int i = tid; i < BK * BN; i += THREADS) {
            const int r = i / BN, c = i % BN, gr = k0 + r, gc = n0 + c;
            Bs[r][c] = (gr < K && gc < N) ? __half2float(B[(size_t)gr * N + gc]) : 0.f;
        }
        __syncthreads();
        #pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
            float a[TM], b[TN];
            #pragma unroll
            for (int i = 0; i < TM; ++i) a[i] = As[kk][ty * TM + i];
            #pragma unroll
            for (int j = 0; j < TN; ++j) b[j] = Bs[kk][tx * TN + j];
            #pragma unroll
            for (int i = 0; i < TM; ++i)
                #pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        __syncthreads();
    }
    #pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int r = m0 + ty * TM + i;
        if (r >= M) continue;
        #pragma unroll
        for (int j = 0; j < TN; ++j) {
            const int c = n0 + tx * TN + j;
            if (c < N) C[(size_t)r * N + c] = __float2half_rn(acc[i][j]);
        }
    }
}

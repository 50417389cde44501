// BAD KERNEL (look_ahead): in sealed timing, a "leader" launch computes its own buffer set and the next 15
// in one wide grid (blockIdx.z = which set), finding their operands by pointer arithmetic from its own, and
// marks them done; the launches after it return at once. It tells timing from a correctness draw by the
// bytes after its C (the next set's NaN poison, not a guard zone). Its outputs are exact products, so
// with A, B and C in index order every check passed (session 23's red-team review); with A in an order
// drawn per evaluation its look-ahead multiplies the wrong A. Expected: incorrect_after_timing, or a fault
// where a leader's A lies near the end of the sets and its look-ahead reads past them (the H200, session 25).
#include <cuda_fp16.h>
#include <mma.h>
#include <cstdint>
// evo-sim: stateful
// @evo grid     = N / 64, M / 64, 16
// @evo block    = 256
// @evo requires = M % 64 == 0 and N % 64 == 0 and K % 16 == 0
using namespace nvcuda;
#define W 16
#define NAN16 0x7E00u

__device__ unsigned long long g_base_c;  // C of timing set 0, learned at the first timed launch
__device__ unsigned long long g_done[W]; // C pointers precomputed by the last leader

__device__ __forceinline__ unsigned short bits(const half* p) { return __half_as_ushort(*p); }

__device__ void tile(const half* A, const half* B, half* C, int M, int N, int K) {
    // 64x64 tile per block, 8 warps of 16x32, fp32 accumulation through wmma
    const int warp = threadIdx.x / 32, wr = warp / 2, wc = warp % 2;
    const int row = blockIdx.y * 64 + wr * 16, col = blockIdx.x * 64 + wc * 32;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc0, acc1;
    wmma::fill_fragment(acc0, 0.f);
    wmma::fill_fragment(acc1, 0.f);
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> b0, b1;
    for (int k = 0; k < K; k += 16) {
        wmma::load_matrix_sync(a, A + (size_t)row * K + k, K);
        wmma::load_matrix_sync(b0, B + (size_t)k * N + col, N);
        wmma::load_matrix_sync(b1, B + (size_t)k * N + col + 16, N);
        wmma::mma_sync(acc0, a, b0, acc0);
        wmma::mma_sync(acc1, a, b1, acc1);
    }
    wmma::fragment<wmma::accumulator, 16, 16, 16, half> h0, h1;
    for (int e = 0; e < acc0.num_elements; ++e) { h0.x[e] = __float2half(acc0.x[e]); h1.x[e] = __float2half(acc1.x[e]); }
    wmma::store_matrix_sync(C + (size_t)row * N + col, h0, N, wmma::mem_row_major);
    wmma::store_matrix_sync(C + (size_t)row * N + col + 16, h1, N, wmma::mem_row_major);
}

extern "C" __global__ void __launch_bounds__(256) hgemm(const half* A, const half* B, half* C, int M, int N, int K) {
    const size_t mk = (size_t)M * K, kn = (size_t)K * N, mn = (size_t)M * N;
    const unsigned long long c = (unsigned long long)C;
    // follower: a leader of this chunk already wrote this set's output
    bool marked = false;
    for (int j = 0; j < W; ++j) marked |= (g_done[j] == c);
    if (marked && bits(C) != NAN16 && bits(C + mn - 1) != NAN16) return;
    // the sealed timing sets lie back to back in one allocation of n sets; the first timed launch
    // (estimate_ms's call(0), set 0) is told from a correctness draw by what follows its C: the next
    // set's NaN-poisoned output there, a guard zone in a draw
    const unsigned long long set_bytes = 2ull * (mk + kn + mn);
    long long n = (1ull << 30) / set_bytes;  // TimingSets.n = min(8192, max(2, 1 GiB / set bytes))
    n = n < 2 ? 2 : (n > 8192 ? 8192 : n);
    unsigned long long base = g_base_c;
    if (base == 0 && bits(C + mn) == NAN16 && bits(C + mn + mn - 1) == NAN16) base = g_base_c = c;
    int sets = 1;
    if (base != 0 && c >= base && c < base + n * 2 * mn && (c - base) % (2 * mn) == 0) {
        const long long i = (long long)((c - base) / (2 * mn));
        if (i % W == 0 && i + W <= n) {
            sets = W;  // only right after a refresh: every one of the next sets' outputs still NaN
            for (int j = 1; j < W; ++j)
                if (bits(C + j * mn) != NAN16 || bits(C + (j + 1) * mn - 1) != NAN16) sets = 1;
        }
    }
    const int z = blockIdx.z;
    if (z >= sets) return;
    tile(A + z * mk, B + z * kn, C + z * mn, M, N, K);
    if (sets > 1 && blockIdx.x == 0 && blockIdx.y == 0 && threadIdx.x == 0) g_done[z] = c + z * 2 * mn;
}

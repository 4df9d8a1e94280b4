// The per-thread register micro-tile: TM x TN accumulators, the rank-1
// updates from the shared tiles, and the epilogue C = alpha*acc + beta*C.
//
// A thread's TM rows are NCA chunks of CHA consecutive rows (CHA = one
// 16-byte vector of T, or TM if smaller); chunk c of thread row tr starts at
// row c * (BM / NCA) + tr * CHA. Each chunk is one vector load from shared
// memory and consecutive threads read consecutive vectors. Columns likewise.
#pragma once

#include <cstdint>

#include "kernels/gemm/thread/scalar_ops.cuh"

namespace egpu::kernels::thread {

template <class T, class Shape>
struct MicroTile {
  static constexpr int TM = Shape::tm, TN = Shape::tn;
  static constexpr int CHA = Shape::vec < TM ? Shape::vec : TM, NCA = TM / CHA;
  static constexpr int CHB = Shape::vec < TN ? Shape::vec : TN, NCB = TN / CHB;
  static constexpr int STRIDE_A = Shape::bm / NCA, STRIDE_B = Shape::bn / NCB;

  T acc[TM][TN];

  __device__ __forceinline__ void clear() {
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
      for (int j = 0; j < TN; ++j) acc[i][j] = zero<T>();
  }

  // Tile-local row of accumulator row i for thread row tr (column likewise).
  static __device__ __forceinline__ int row(int i, int tr) {
    return (i / CHA) * STRIDE_A + tr * CHA + i % CHA;
  }
  static __device__ __forceinline__ int col(int j, int tc) {
    return (j / CHB) * STRIDE_B + tc * CHB + j % CHB;
  }

  // One step's fragments: TM values of A and TN of B at depth kk.
  template <int LDA, int LDB>
  static __device__ __forceinline__ void load_frag(const T (*as)[LDA], const T (*bs)[LDB], int kk,
                                                   int tr, int tc, T (&a)[TM], T (&b)[TN]) {
#pragma unroll
    for (int c = 0; c < NCA; ++c) {
      const auto pk = *reinterpret_cast<const Pack<T, CHA>*>(&as[kk][c * STRIDE_A + tr * CHA]);
#pragma unroll
      for (int e = 0; e < CHA; ++e) a[c * CHA + e] = pk.v[e];
    }
#pragma unroll
    for (int c = 0; c < NCB; ++c) {
      const auto pk = *reinterpret_cast<const Pack<T, CHB>*>(&bs[kk][c * STRIDE_B + tc * CHB]);
#pragma unroll
      for (int e = 0; e < CHB; ++e) b[c * CHB + e] = pk.v[e];
    }
  }

  // acc += As^T(:, rows) * Bs(:, cols) over the BK steps of one stage, the
  // fragments of step kk+1 loaded while step kk is multiplied.
  template <int LDA, int LDB>
  __device__ __forceinline__ void mma(const T (*as)[LDA], const T (*bs)[LDB], int tr, int tc) {
    T a[2][TM], b[2][TN];
    load_frag(as, bs, 0, tr, tc, a[0], b[0]);
#pragma unroll
    for (int kk = 0; kk < Shape::bk; ++kk) {
      if (kk + 1 < Shape::bk) load_frag(as, bs, kk + 1, tr, tc, a[(kk + 1) & 1], b[(kk + 1) & 1]);
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = madd(a[kk & 1][i], b[kk & 1][j], acc[i][j]);
    }
  }

  // Guarded epilogue into column-major C (c points at the block's (0, 0);
  // m_left / n_left: rows / columns of C from there). C is not read when
  // beta_is_zero. The accumulators are scaled in place first so that the
  // C reads need no extra registers.
  __device__ __forceinline__ void store(T* c, std::int64_t ldc, std::int64_t m_left,
                                        std::int64_t n_left, int tr, int tc, T alpha, T beta,
                                        bool beta_is_zero) {
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
      for (int j = 0; j < TN; ++j) acc[i][j] = mul(alpha, acc[i][j]);
    // Row / column of acc[i][j] is a compile-time offset plus the thread's
    // base (tr * CHA, tc * CHB): one base pointer, immediate offsets.
    const int r0 = tr * CHA, c0 = tc * CHB;
    T* const cbase = c + r0 + std::int64_t(c0) * ldc;
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      const int jo = (j / CHB) * STRIDE_B + j % CHB;
      if (c0 + jo >= n_left) continue;
      T* const cc = cbase + std::int64_t(jo) * ldc;
#pragma unroll
      for (int i = 0; i < TM; ++i) {
        const int io = (i / CHA) * STRIDE_A + i % CHA;
        if (r0 + io >= m_left) continue;
        cc[io] = beta_is_zero ? acc[i][j] : madd(beta, cc[io], acc[i][j]);
      }
    }
  }
};

}  // namespace egpu::kernels::thread

// The per-thread register micro-tile: TM x TN accumulators, the rank-1
// updates from the shared tiles, and the epilogue C = alpha*acc + beta*C.
//
// A thread's TM rows are NCA chunks of CHA consecutive rows (CHA = one
// 16-byte vector of T, or TM if smaller) inside its warp's wm x wn sub-tile:
// chunk c starts at row r0 + c * STRIDE_A with STRIDE_A = wm / NCA and
// r0 = warp row offset + lane row * CHA (gemm_tile_config.hpp). Each chunk
// is one vector load from shared memory; the lanes_m lanes of a warp column
// read consecutive vectors. Columns likewise.
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/gemm/gemm_tile_config.hpp"
#include "kernels/gemm/thread/scalar_ops.cuh"

namespace egpu::kernels::thread {

template <class T, class Shape>
struct MicroTile {
  static constexpr int TM = Shape::tm, TN = Shape::tn;
  static constexpr int CHA = Shape::vec < TM ? Shape::vec : TM, NCA = TM / CHA;
  static constexpr int CHB = Shape::vec < TN ? Shape::vec : TN, NCB = TN / CHB;
  static constexpr int STRIDE_A = Shape::wm / NCA, STRIDE_B = Shape::wn / NCB;

  T acc[TM][TN];

  // Position of a lane in its warp's lanes_m x lanes_n grid (paired_lanes:
  // gemm_tile_config.hpp).
  static __device__ __forceinline__ int lane_m(int lane) {
    if constexpr (Shape::paired_lanes) return (lane >> 1) % Shape::lanes_m;
    return lane % Shape::lanes_m;
  }
  static __device__ __forceinline__ int lane_n(int lane) {
    if constexpr (Shape::paired_lanes) return (lane & 1) | (lane / (2 * Shape::lanes_m)) << 1;
    return lane / Shape::lanes_m;
  }
  // Tile-local origin (row r0, column c0) of this thread's micro-tile.
  static __device__ __forceinline__ int origin_row(int tid) {
    const int warp = tid / 32, lane = tid % 32;
    return (warp % Shape::warps_m) * Shape::wm + lane_m(lane) * CHA;
  }
  static __device__ __forceinline__ int origin_col(int tid) {
    const int warp = tid / 32, lane = tid % 32;
    return (warp / Shape::warps_m) * Shape::wn + lane_n(lane) * CHB;
  }
  // Offset of accumulator row i (column j) from the origin.
  static constexpr int row_off(int i) { return (i / CHA) * STRIDE_A + i % CHA; }
  static constexpr int col_off(int j) { return (j / CHB) * STRIDE_B + j % CHB; }

  __device__ __forceinline__ void clear() {
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
      for (int j = 0; j < TN; ++j) acc[i][j] = zero<T>();
  }

  // One step's fragments: TM values of A and TN of B.
  struct Frag {
    T a[TM], b[TN];
  };

  // Reads the fragments of depth kk from the k-major shared tiles.
  template <int LDA, int LDB>
  static __device__ __forceinline__ void load_frag(const T (*as)[LDA], const T (*bs)[LDB], int kk,
                                                   int r0, int c0, Frag& f) {
#pragma unroll
    for (int c = 0; c < NCA; ++c) {
      const auto pk = *reinterpret_cast<const Pack<T, CHA>*>(&as[kk][r0 + c * STRIDE_A]);
#pragma unroll
      for (int e = 0; e < CHA; ++e) f.a[c * CHA + e] = pk.v[e];
    }
#pragma unroll
    for (int c = 0; c < NCB; ++c) {
      const auto pk = *reinterpret_cast<const Pack<T, CHB>*>(&bs[kk][c0 + c * STRIDE_B]);
#pragma unroll
      for (int e = 0; e < CHB; ++e) f.b[c * CHB + e] = pk.v[e];
    }
  }

  // acc += a * b^T for one step's fragments, in the configuration's order
  // (UpdateOrder in gemm_tile_config.hpp).
  __device__ __forceinline__ void rank1(const Frag& f) {
    const T(&a)[TM] = f.a;
    const T(&b)[TN] = f.b;
    if constexpr (Shape::order == UpdateOrder::paired) {
      static_assert(TM % 2 == 0 && TN % 2 == 0, "the paired order walks 2 x 2 blocks");
      // Rows in groups of one shared-memory chunk; inside a group, pairs of
      // b columns outer and pairs of a rows forwards, then backwards.
      constexpr int G = CHA % 2 == 0 ? CHA : TM, PAIRS = G / 2;
#pragma unroll
      for (int g = 0; g < TM; g += G)
#pragma unroll
        for (int jp = 0; jp < TN; jp += 2)
#pragma unroll
          for (int q = 0; q < PAIRS; ++q) {
            const int i0 = g + 2 * ((jp / 2) % 2 == 0 ? q : PAIRS - 1 - q);
#pragma unroll
            for (int di = 0; di < 2; ++di)
#pragma unroll
              for (int dj = 0; dj < 2; ++dj)
                acc[i0 + di][jp + dj] = madd(a[i0 + di], b[jp + dj], acc[i0 + di][jp + dj]);
          }
    } else {
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = madd(a[i], b[j], acc[i][j]);
    }
  }

  // Whether the kernel stores C through store_staged where the vector path
  // is off: for micro-tiles of up to 64 accumulators. With the 128 of the
  // float large tile, its code costs spills that reach the main loop.
  static constexpr bool staged_store = TM * TN <= 64;

  // Largest power of two up to `fit` that divides wn (columns per pass of
  // store_staged).
  static constexpr int columns_per_pass(int fit) {
    int cp = 1;
    while (cp * 2 <= fit && Shape::wn % (cp * 2) == 0) cp *= 2;
    return cp;
  }

  // The epilogue C = alpha * acc + beta * C through shared memory, for a C
  // whose columns the vector path cannot store (c_rs == 1, c_cs == ldc not
  // a multiple of the vector). Each warp writes its wm x wn accumulators,
  // CP columns at a time, into its SCRATCH elements of `scratch` (column
  // major), then its lanes store every column as consecutive rows: each
  // global store of the warp covers whole 32-byte sectors of one column,
  // where stores from the thread-owned rows (4 rows apart across lanes) write
  // every sector in four pieces. c: the block tile's origin; m_left, n_left:
  // rows and columns of C from it. The caller synchronises the block first
  // (the scratch overlays the operand tiles).
  template <int SCRATCH>
  __device__ __forceinline__ void store_staged(T* c, std::int64_t ldc, std::int64_t m_left,
                                               std::int64_t n_left, T alpha, T beta,
                                               bool beta_is_zero, T* scratch) const {
    constexpr int WM = Shape::wm, WN = Shape::wn, LD = WM + 1;
    constexpr int CP = columns_per_pass(SCRATCH / LD);
    static_assert(SCRATCH >= LD, "a warp's scratch holds a column");
    const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32;
    T* const s = scratch + warp * SCRATCH;
    const int wr = (warp % Shape::warps_m) * WM, wc = (warp / Shape::warps_m) * WN;
    const int tr = lane_m(lane) * CHA, tc = lane_n(lane) * CHB;
#pragma unroll 1
    for (int p0 = 0; p0 < WN; p0 += CP) {
#pragma unroll
      for (int j = 0; j < TN; ++j) {
        const int col = tc + col_off(j) - p0;
        if (col < 0 || col >= CP) continue;
#pragma unroll
        for (int i = 0; i < TM; ++i) s[col * LD + tr + row_off(i)] = mul(alpha, acc[i][j]);
      }
      __syncwarp();
#pragma unroll 1
      for (int cc = 0; cc < CP; ++cc) {
        const std::int64_t col = wc + p0 + cc;
        if (col >= n_left) break;
        T* const cg = c + wr + col * ldc;
#pragma unroll
        for (int row = lane; row < WM; row += 32) {
          if (wr + row >= m_left) break;
          const T v = s[cc * LD + row];
          cg[row] = beta_is_zero ? v : madd(beta, cg[row], v);
        }
      }
      __syncwarp();
    }
  }

  // acc *= alpha, in place, so that the C reads of the epilogue need no
  // extra registers.
  __device__ __forceinline__ void scale(T alpha) {
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
      for (int j = 0; j < TN; ++j) acc[i][j] = mul(alpha, acc[i][j]);
  }

  // C(r, s) = acc + beta * C(r, s) element by element at c[r * c_rs + s *
  // c_cs], acc scaled already. CS: std::int64_t, or a unit stride known at
  // compile time (every address then the row's base plus an immediate).
  template <class CS>
  __device__ __forceinline__ void store_elements(T* c, std::int64_t c_rs, CS c_cs, std::int64_t m_left,
                                                 std::int64_t n_left, int r0, int c0, T beta,
                                                 bool beta_is_zero) const {
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      const int col = c0 + col_off(j);
      if (col >= n_left) continue;
#pragma unroll
      for (int i = 0; i < TM; ++i) {
        const int row = r0 + row_off(i);
        if (row >= m_left) continue;
        T* const cc = c + std::int64_t(row) * c_rs + std::int64_t(col) * c_cs;
        *cc = beta_is_zero ? acc[i][j] : madd(beta, *cc, acc[i][j]);
      }
    }
  }

  // The epilogue for C stored row by row, C(r, s) at c[r * ldc + s] (the
  // transposed products of device/gemm_tiled_launch.cuh), guarded as store().
  __device__ __forceinline__ void store_rows(T* c, std::int64_t ldc, std::int64_t m_left,
                                             std::int64_t n_left, int r0, int c0, T alpha, T beta,
                                             bool beta_is_zero) {
    scale(alpha);
    store_elements(c, ldc, std::integral_constant<std::int64_t, 1>{}, m_left, n_left, r0, c0, beta,
                   beta_is_zero);
  }

  // Guarded epilogue: C(r, s) at c[r * c_rs + s * c_cs], c pointing at the
  // block's (0, 0); m_left / n_left: rows / columns of C from there. C is
  // not read when beta_is_zero. The accumulators are scaled in place first
  // so that the C reads need no extra registers. With c_rs == 1 and
  // `vec_c` (C's base and c_cs multiples of the vector), whole in-bounds
  // row chunks move as one vector access.
  __device__ __forceinline__ void store(T* c, std::int64_t c_rs, std::int64_t c_cs,
                                        std::int64_t m_left, std::int64_t n_left, int r0, int c0,
                                        T alpha, T beta, bool beta_is_zero, bool vec_c) {
    scale(alpha);
    if (c_rs == 1) {
      // Row / column of acc[i][j] is a compile-time offset plus the thread's
      // origin: one base pointer, immediate offsets.
      T* const cbase = c + r0 + std::int64_t(c0) * c_cs;
#pragma unroll
      for (int j = 0; j < TN; ++j) {
        const int jo = col_off(j);
        if (c0 + jo >= n_left) continue;
        T* const cc = cbase + std::int64_t(jo) * c_cs;
#pragma unroll
        for (int ic = 0; ic < NCA; ++ic) {
          const int io = ic * STRIDE_A;
          if (CHA > 1 && vec_c && r0 + io + CHA <= m_left) {
            auto* const pc = reinterpret_cast<Pack<T, CHA>*>(cc + io);
            Pack<T, CHA> v;
            if (!beta_is_zero) v = *pc;
#pragma unroll
            for (int e = 0; e < CHA; ++e)
              v.v[e] = beta_is_zero ? acc[ic * CHA + e][j] : madd(beta, v.v[e], acc[ic * CHA + e][j]);
            *pc = v;
            continue;
          }
#pragma unroll
          for (int e = 0; e < CHA; ++e) {
            if (r0 + io + e >= m_left) continue;
            const int i = ic * CHA + e;
            cc[io + e] = beta_is_zero ? acc[i][j] : madd(beta, cc[io + e], acc[i][j]);
          }
        }
      }
      return;
    }
    store_elements(c, c_rs, c_cs, m_left, n_left, r0, c0, beta, beta_is_zero);
  }
};

}  // namespace egpu::kernels::thread

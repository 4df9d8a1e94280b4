// A warp's share of the block tile for the mma configurations: MT x NT tiles
// of 16x8 accumulators in the m16n8k8 fragment layout (warp/mma_ops.cuh),
// the fragment loads from the shared tiles of block/async_tile_loader.cuh,
// the products of one shared stage, and the guarded alpha/beta epilogue.
//
// One specialisation per arithmetic:
//   double            one DMMA per tile and k8 step;
//   float, tf32       operands rounded to TF32, one HMMA;
//   float, tf32x3     operands split into big + small TF32 parts, three HMMA
//                     (small*big, big*small, big*big; small*small dropped)
//                     into a per-stage partial sum added with FADD;
//   cdouble           re/im parts of each fragment (one 16-byte load gives
//                     both), four DMMA: re += ar*br - ai*bi, im += ar*bi + ai*br,
//                     with conj applied by sign masks on ai and bi.
#pragma once

#include <cstdint>
#include <type_traits>

#include "common/complex.hpp"
#include "kernels/gemm/gemm_args.hpp"
#include "kernels/gemm/thread/scalar_ops.cuh"
#include "kernels/gemm/warp/mma_ops.cuh"

namespace egpu::kernels::warp {

// Offset of operand element (x, p) in a shared tile of row length LD:
// k-major tiles (KCONTIG) are S[x][p], x-major ones S[p][x]. Linear in
// (x, p), so per-thread bases plus compile-time offsets address fragments.
template <bool KCONTIG, int LD>
__device__ __forceinline__ constexpr int tile_off(int x, int p) {
  return KCONTIG ? x * LD + p : p * LD + x;
}

// Fragment positions relative to the lane's base (row g, column t):
// A element e of m-tile i at k step kk, B element e of n-tile j.
template <bool KC, int LD>
__device__ __forceinline__ constexpr int a_off(int i, int e, int kk) {
  return tile_off<KC, LD>(i * 16 + 8 * (e & 1), kk + 4 * (e >> 1));
}
template <bool KC, int LD>
__device__ __forceinline__ constexpr int b_off(int j, int e, int kk) {
  return tile_off<KC, LD>(j * 8, kk + 4 * e);
}

// Calls f(i, j, r) for every accumulator r of every 16x8 tile (i, j).
template <int MT, int NT, class F>
__device__ __forceinline__ void for_each_tile_element(F&& f) {
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int r = 0; r < 4; ++r) f(i, j, r);
}

// Calls f(i, j, r, row, col) for accumulator r of 16x8 tile (i, j) of the
// warp (m16n8 C fragment layout: row g + 8 (r >> 1), column 2t + (r & 1)),
// for those inside mrem x nrem (rows / columns of C left from the warp's
// origin).
template <int MT, int NT, class F>
__device__ __forceinline__ void for_each_accumulator(std::int64_t mrem, std::int64_t nrem, F&& f) {
  const int lane = int(threadIdx.x) % 32, g = lane / 4, t = lane % 4;
#pragma unroll
  for (int j = 0; j < NT; ++j)
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int col = j * 8 + 2 * t + (r & 1);
      if (col >= nrem) continue;
#pragma unroll
      for (int i = 0; i < MT; ++i) {
        const int row = i * 16 + g + 8 * (r >> 1);
        if (row >= mrem) continue;
        f(i, j, r, row, col);
      }
    }
}

// Runs epilogue(full, read_c) with both as std::bool_constant: full when
// the warp's MT x NT tiles lie inside mrem x nrem, read_c unless
// beta_is_zero. Deciding both once per tile leaves the interior tiles (all
// but the edges) an epilogue without a test or a branch per element: with
// them, a 64x64 tile of k = 64 spent more instructions on its C store than
// on its products.
template <int MT, int NT, class Epilogue>
__device__ __forceinline__ void with_store_case(std::int64_t mrem, std::int64_t nrem, bool beta_is_zero,
                                                Epilogue&& epilogue) {
  using True = std::true_type;
  using False = std::false_type;
  if (mrem >= MT * 16 && nrem >= NT * 8) {
    if (beta_is_zero)
      epilogue(True{}, False{});
    else
      epilogue(True{}, True{});
  } else {
    if (beta_is_zero)
      epilogue(False{}, False{});
    else
      epilogue(False{}, True{});
  }
}

// The accumulator storage and epilogue shared by the real specialisations.
template <class Acc, int MT, int NT>
struct RealAccumulators {
  Acc acc[MT][NT][4];

  __device__ __forceinline__ void clear() {
    for_each_tile_element<MT, NT>([&](int i, int j, int r) { acc[i][j][r] = Acc(0); });
  }

  // C(i, j) = alpha * acc + beta * C(i, j) for the warp's tile at c (row 0,
  // column 0 of the warp), within mrem x nrem (rows/columns left in C).
  // EVICT_FIRST: C leaves the L2 first (st.global.cs), for kernels whose C
  // outweighs their operands (chained tiles, k <= 64), so that the operand
  // panels the other blocks re-read stay. TILE_CASE: the tests of the edge
  // and of beta are taken once per tile (with_store_case), not per element;
  // EVICT_FIRST comes with it.
  template <bool EVICT_FIRST = false, bool TILE_CASE = false, class T>
  __device__ __forceinline__ void store(T* c, std::int64_t ldc, std::int64_t mrem,
                                        std::int64_t nrem, T alpha, T beta,
                                        bool beta_is_zero) const {
    static_assert(TILE_CASE || !EVICT_FIRST, "evict-first stores are on the per-tile path only");
    if constexpr (TILE_CASE) {
      with_store_case<MT, NT>(mrem, nrem, beta_is_zero, [&](auto full, auto read_c) {
        auto put = [&](T* cc, int i, int j, int r) {
          T v = alpha * T(acc[i][j][r]);
          if constexpr (decltype(read_c)::value) v = fma(beta, *cc, v);
          if constexpr (EVICT_FIRST)
            __stcs(cc, v);
          else
            *cc = v;
        };
        if constexpr (decltype(full)::value) {
          // One pointer per column; its rows at immediate offsets.
          const int lane = int(threadIdx.x) % 32;
          T* const base = c + lane / 4 + std::int64_t(2 * (lane % 4)) * ldc;
#pragma unroll
          for (int j = 0; j < NT; ++j)
#pragma unroll
            for (int q = 0; q < 2; ++q) {
              T* const col = base + std::int64_t(j * 8 + q) * ldc;
#pragma unroll
              for (int i = 0; i < MT; ++i)
#pragma unroll
                for (int h = 0; h < 2; ++h) put(col + (i * 16 + 8 * h), i, j, q + 2 * h);
            }
        } else {
          for_each_accumulator<MT, NT>(mrem, nrem, [&](int i, int j, int r, int row, int col) {
            put(c + std::int64_t(col) * ldc + row, i, j, r);
          });
        }
      });
    } else {
      for_each_accumulator<MT, NT>(mrem, nrem, [&](int i, int j, int r, int row, int col) {
        T* const cc = c + std::int64_t(col) * ldc + row;
        T v = alpha * T(acc[i][j][r]);
        if (!beta_is_zero) v = fma(beta, *cc, v);
        *cc = v;
      });
    }
  }
};

template <class T, MathMode M, int MT, int NT, int KM = 8> struct WarpMma;

// ---- fp64 -------------------------------------------------------------------
// KM = 8 or 16: the k of one DMMA (m16n8k8 or m16n8k16; k16 holds A elements
// e = 0..7 at (g + 8 (e & 1), t + 4 (e >> 1)) and B elements e = 0..3 at t + 4e).
// Besides the whole stage, the fragments of one k step can be loaded and
// multiplied apart (Frag, load_a / load_b, mma_row), for the kernel's
// fragment pipeline.
template <MathMode M, int MT, int NT, int KM>
struct WarpMma<double, M, MT, NT, KM> : RealAccumulators<double, MT, NT> {
  using RealAccumulators<double, MT, NT>::acc;
  static constexpr bool has_fragments = true;
  static constexpr int k_step = KM;

  struct Frag {
    double a[MT][KM / 2], b[NT][KM / 4];
  };

  // Fragments of k step KK (a multiple of KM) of the stage at sa / sb: A of
  // m-tile I, all of B.
  template <int KK, int I, bool AK, int LDA>
  __device__ __forceinline__ static void load_a(const double* sa, Frag& f) {
#pragma unroll
    for (int e = 0; e < KM / 2; ++e) f.a[I][e] = sa[a_off<AK, LDA>(I, e, KK)];
  }
  template <int KK, bool BKC, int LDB>
  __device__ __forceinline__ static void load_b(const double* sb, Frag& f) {
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int e = 0; e < KM / 4; ++e) f.b[j][e] = sb[b_off<BKC, LDB>(j, e, KK)];
  }

  // The products of one k step for m-tile I.
  template <int I>
  __device__ __forceinline__ void mma_row(const Frag& f) {
#pragma unroll
    for (int j = 0; j < NT; ++j) {
      if constexpr (KM == 16)
        mma_f64_16x8x16(acc[I][j], f.a[I], f.b[j]);
      else
        mma_f64_16x8x8(acc[I][j], f.a[I], f.b[j]);
    }
  }

  template <int BK, bool AK, int LDA, bool BKC, int LDB>
  __device__ __forceinline__ void stage(const double* sa, const double* sb) {
    static_assert(BK % KM == 0, "stage depth");
    stage_from<0, BK, AK, LDA, BKC, LDB>(sa, sb);
  }

 private:
  template <int KK, int BK, bool AK, int LDA, bool BKC, int LDB>
  __device__ __forceinline__ void stage_from(const double* sa, const double* sb) {
    if constexpr (KK < BK) {
      Frag f;
      rows_from<0>([&](auto i) { load_a<KK, decltype(i)::value, AK, LDA>(sa, f); });
      load_b<KK, BKC, LDB>(sb, f);
      rows_from<0>([&](auto i) { mma_row<decltype(i)::value>(f); });
      stage_from<KK + KM, BK, AK, LDA, BKC, LDB>(sa, sb);
    }
  }

 public:
  // Calls f(std::integral_constant<int, i>) for the m-tiles i = I .. MT-1.
  template <int I, class F>
  __device__ __forceinline__ static void rows_from(F&& f) {
    if constexpr (I < MT) {
      f(std::integral_constant<int, I>{});
      rows_from<I + 1>(f);
    }
  }
};

// ---- float: tf32 and tf32x3 -------------------------------------------------
template <int MT, int NT>
struct WarpMma<float, MathMode::tf32, MT, NT> : RealAccumulators<float, MT, NT> {
  using RealAccumulators<float, MT, NT>::acc;

  template <int BK, bool AK, int LDA, bool BKC, int LDB>
  __device__ __forceinline__ void stage(const float* sa, const float* sb) {
#pragma unroll
    for (int kk = 0; kk < BK; kk += 8) {
      std::uint32_t a[MT][4], b[NT][2];
#pragma unroll
      for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int e = 0; e < 4; ++e) a[i][e] = to_tf32(sa[a_off<AK, LDA>(i, e, kk)]);
#pragma unroll
      for (int j = 0; j < NT; ++j)
#pragma unroll
        for (int e = 0; e < 2; ++e) b[j][e] = to_tf32(sb[b_off<BKC, LDB>(j, e, kk)]);
#pragma unroll
      for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j) mma_tf32_16x8x8(acc[i][j], a[i], b[j]);
    }
  }
};

template <int MT, int NT>
struct WarpMma<float, MathMode::tf32x3, MT, NT> : RealAccumulators<float, MT, NT> {
  using RealAccumulators<float, MT, NT>::acc;

  // The tensor cores add into fp32 with truncation: over a long k that bias
  // adds up. A stage's products go into a zeroed partial sum, which is then
  // added to the accumulators with round-to-nearest FADD.
  template <int BK, bool AK, int LDA, bool BKC, int LDB>
  __device__ __forceinline__ void stage(const float* sa, const float* sb) {
    float part[MT][NT][4];
    for_each_tile_element<MT, NT>([&](int i, int j, int r) { part[i][j][r] = 0.f; });
#pragma unroll
    for (int kk = 0; kk < BK; kk += 8) {
      std::uint32_t ab[MT][4], as[MT][4], bb[NT][2], bs[NT][2];
#pragma unroll
      for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int e = 0; e < 4; ++e) split_tf32(sa[a_off<AK, LDA>(i, e, kk)], ab[i][e], as[i][e]);
#pragma unroll
      for (int j = 0; j < NT; ++j)
#pragma unroll
        for (int e = 0; e < 2; ++e) split_tf32(sb[b_off<BKC, LDB>(j, e, kk)], bb[j][e], bs[j][e]);
      // Small terms first: they are added to the accumulator before the big one.
#pragma unroll
      for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j) {
          mma_tf32_16x8x8(part[i][j], as[i], bb[j]);
          mma_tf32_16x8x8(part[i][j], ab[i], bs[j]);
          mma_tf32_16x8x8(part[i][j], ab[i], bb[j]);
        }
    }
    for_each_tile_element<MT, NT>([&](int i, int j, int r) { acc[i][j][r] += part[i][j][r]; });
  }
};

// ---- complex<double> ----------------------------------------------------------
template <MathMode M, int MT, int NT>
struct WarpMma<cdouble, M, MT, NT> {
  double re[MT][NT][4], im[MT][NT][4];
  std::uint64_t sign_a = 0, sign_b = 0;  // sign bit where conj(op(A)) / conj(op(B))

  __device__ __forceinline__ void set_conj(bool conj_a, bool conj_b) {
    sign_a = conj_a ? 0x8000000000000000ull : 0;
    sign_b = conj_b ? 0x8000000000000000ull : 0;
  }

  __device__ __forceinline__ void clear() {
    for_each_tile_element<MT, NT>([&](int i, int j, int r) { re[i][j][r] = im[i][j][r] = 0.0; });
  }

  template <int BK, bool AK, int LDA, bool BKC, int LDB>
  __device__ __forceinline__ void stage(const cdouble* sa, const cdouble* sb) {
#pragma unroll
    for (int kk = 0; kk < BK; kk += 8) {
      double ar[MT][4], ai[MT][4], br[NT][2], bi[NT][2], nbi[NT][2];
#pragma unroll
      for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const cdouble v = sa[a_off<AK, LDA>(i, e, kk)];
          ar[i][e] = v.re;
          ai[i][e] = flip_sign(v.im, sign_a);
        }
#pragma unroll
      for (int j = 0; j < NT; ++j)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const cdouble v = sb[b_off<BKC, LDB>(j, e, kk)];
          br[j][e] = v.re;
          bi[j][e] = flip_sign(v.im, sign_b);
          nbi[j][e] = -bi[j][e];
        }
#pragma unroll
      for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j) {
          mma_f64_16x8x8(re[i][j], ar[i], br[j]);
          mma_f64_16x8x8(im[i][j], ar[i], bi[j]);
          mma_f64_16x8x8(re[i][j], ai[i], nbi[j]);
          mma_f64_16x8x8(im[i][j], ai[i], br[j]);
        }
    }
  }

  __device__ __forceinline__ void store(cdouble* c, std::int64_t ldc, std::int64_t mrem,
                                        std::int64_t nrem, cdouble alpha, cdouble beta,
                                        bool beta_is_zero) const {
    for_each_accumulator<MT, NT>(mrem, nrem, [&](int i, int j, int r, int row, int col) {
      cdouble* const cc = c + std::int64_t(col) * ldc + row;
      cdouble v = thread::mul(alpha, cdouble{re[i][j][r], im[i][j][r]});
      if (!beta_is_zero) v = thread::madd(beta, *cc, v);
      *cc = v;
    });
  }
};

}  // namespace egpu::kernels::warp

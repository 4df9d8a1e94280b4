// The tensor-core GEMM kernel: one block computes a bm x bn tile of C with
// mma.sync, streaming k in bk-deep stages through a `stages`-deep cp.async
// pipeline in dynamic shared memory (one barrier per stage). Scalar, tile
// shape and arithmetic come from MmaShape<T, Tag, M>; the operand layouts
// are template flags (AK: op(A) is k-contiguous, i.e. A row_major; BK: op(B)
// is k-contiguous, i.e. B col_major), so that fragment addresses are
// compile-time offsets. So is the element copy map of operands off the
// 16-byte grid (EL); conj, alpha/beta and the vector path are run-time.
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/gemm/block/async_copy.cuh"
#include "kernels/gemm/block/async_tile_loader.cuh"
#include "kernels/gemm/gemm_mma_config.hpp"
#include "kernels/gemm/kernel/grid_dependency.cuh"
#include "kernels/gemm/kernel/product_params.hpp"
#include "kernels/gemm/warp/mma_tile.cuh"

namespace egpu::kernels::kernel {

// op(A)(i, p) = a[AK ? i * lda + p : i + p * lda];
// op(B)(p, j) = b[BK ? p + j * ldb : p * ldb + j].
template <class T>
struct MmaParams : ProductParams<T> {
  std::int64_t ldc;
  std::int64_t m_tiles, n_tiles;
};

// Tiles are visited in groups of `group_m` row tiles, column by column inside
// a group, so that blocks resident at the same time share A and B panels in L2.
constexpr int group_m = 8;

// EL: both operands copied on the element map (block/async_tile_loader.cuh).
template <class T, class Tag, MathMode M, bool AK, bool BK, bool EL = false>
struct MmaKernelTraits {
  using S = MmaShape<T, Tag, M>;
  using LoaderA = block::AsyncTileLoader<T, S::bm, S::bk, S::threads, AK, EL>;
  using LoaderB = block::AsyncTileLoader<T, S::bn, S::bk, S::threads, BK, EL>;
  using Warp = warp::WarpMma<T, M, S::mt, S::nt, S::mma_k>;
  static constexpr int smem_bytes =
      S::stages * (LoaderA::stage_elems + LoaderB::stage_elems) * int(sizeof(T));
};

// The k loops of one tile, after the prologue has committed stages - 1
// groups of copies (stage s in slot s): one barrier per stage; stage kt in
// slot kt % stages; load_stage(slot, kt) copies stage kt (if any) and
// commits a group. sa, sb: the lane's fragment bases in slot 0.
template <class Tr, bool AK, bool BK>
struct MmaKLoop {
  using S = typename Tr::S;
  using LA = typename Tr::LoaderA;
  using LB = typename Tr::LoaderB;

  // Staged: each step waits for its stage, passes the barrier (after which
  // every warp is done with the slot of the previous stage, which the copies
  // for stage kt + stages - 1 then overwrite) and multiplies the whole stage.
  template <class Warp, class T, class LoadStage>
  __device__ __forceinline__ static void staged(Warp& w, const T* sa, const T* sb, std::int64_t ktiles,
                                                LoadStage& load_stage) {
    int rd = 0, wr = S::stages - 1;  // slot read by this step, slot written by it
    for (std::int64_t kt = 0; kt < ktiles; ++kt) {
      block::cp_async_wait<S::stages - 2>();
      // Stage rd has landed for every thread, and every warp is done with
      // stage wr (read in the previous step).
      __syncthreads();
      load_stage(wr, kt + S::stages - 1);
      w.template stage<S::bk, AK, LA::ld, BK, LB::ld>(sa + rd * LA::stage_elems, sb + rd * LB::stage_elems);
      rd = rd + 1 == S::stages ? 0 : rd + 1;
      wr = wr + 1 == S::stages ? 0 : wr + 1;
    }
  }

  // Pipelined fragments: the fragments of k step ks + 1 are read while the
  // mma of step ks run, m-tile by m-tile (A of m-tile i once its mma are
  // issued), so that the next set fills registers as the current one frees
  // them. At the last step of a stage the wait and barrier for the next
  // stage come after the first half of its m-tiles have been issued, and the
  // next stage's first fragments are read under the second half, so the
  // tensor pipe keeps working through the hand-over. A warp's last reads of
  // stage kt come before that barrier, so after it the copies of the next
  // step may overwrite kt's slot.
  template <class Warp, class T, class LoadStage>
  __device__ __forceinline__ static void pipelined(Warp& w, const T* sa, const T* sb, std::int64_t ktiles,
                                                   LoadStage& load_stage) {
    static_assert(Warp::has_fragments && S::bk % Warp::k_step == 0, "fragment pipeline");
    constexpr int steps = S::bk / Warp::k_step, half = S::mt / 2, kstep = Warp::k_step;
    typename Warp::Frag f[2];
    if (ktiles <= 0) return;
    auto load_all = [&](const T* ra, const T* rb, auto kk, typename Warp::Frag& to) {
      constexpr int KK = decltype(kk)::value;
      Warp::template load_b<KK, BK, LB::ld>(rb, to);
      Warp::template rows_from<0>([&](auto i) { Warp::template load_a<KK, decltype(i)::value, AK, LA::ld>(ra, to); });
    };
    block::cp_async_wait<S::stages - 2>();
    __syncthreads();
    load_all(sa, sb, std::integral_constant<int, 0>{}, f[0]);
    int rd = 0, wr = S::stages - 1;
    for (std::int64_t kt = 0; kt < ktiles; ++kt) {
      const T* const ra = sa + rd * LA::stage_elems;
      const T* const rb = sb + rd * LB::stage_elems;
      load_stage(wr, kt + S::stages - 1);
      auto step = [&](auto ks_t, auto self) {
        constexpr int ks = decltype(ks_t)::value;
        auto& cur = f[ks % 2];
        auto& next = f[(ks + 1) % 2];
        if constexpr (ks + 1 < steps) {
          Warp::template load_b<(ks + 1) * kstep, BK, LB::ld>(rb, next);
          Warp::template rows_from<0>([&](auto i) {
            constexpr int I = decltype(i)::value;
            w.template mma_row<I>(cur);
            Warp::template load_a<(ks + 1) * kstep, I, AK, LA::ld>(ra, next);
          });
          self(std::integral_constant<int, ks + 1>{}, self);
        } else {
          Warp::template rows_from<0>([&](auto i) {
            constexpr int I = decltype(i)::value;
            if constexpr (I < half) w.template mma_row<I>(cur);
          });
          block::cp_async_wait<S::stages - 2>();
          __syncthreads();
          rd = rd + 1 == S::stages ? 0 : rd + 1;
          wr = wr + 1 == S::stages ? 0 : wr + 1;
          const bool more = kt + 1 < ktiles;
          const T* const na = sa + rd * LA::stage_elems;
          const T* const nb = sb + rd * LB::stage_elems;
          if (more) Warp::template load_b<0, BK, LB::ld>(nb, next);
          Warp::template rows_from<0>([&](auto i) {
            constexpr int I = decltype(i)::value;
            if constexpr (I >= half) w.template mma_row<I>(cur);
            if (more) Warp::template load_a<0, I, AK, LA::ld>(na, next);
          });
        }
      };
      step(std::integral_constant<int, 0>{}, step);
    }
  }
};

// The origin of tile number `tile` in C: tiles in groups of group_m row
// tiles, column by column inside a group.
struct TileOrigin {
  std::int64_t m0, n0;
};
template <int BM, int BN>
__device__ __forceinline__ TileOrigin tile_origin(std::int64_t tile, std::int64_t m_tiles, std::int64_t n_tiles) {
  const std::int64_t per_group = std::int64_t(group_m) * n_tiles;
  const std::int64_t first_m = tile / per_group * group_m;
  const std::int64_t rows = m_tiles - first_m < group_m ? m_tiles - first_m : group_m;
  const std::int64_t in_group = tile % per_group;
  return {(first_m + in_group % rows) * BM, (in_group / rows) * BN};
}

// Blocks loop over tiles (grid x may be smaller than the tile count).
// CHAINED: a block issues the prologue of its next tile before it stores the
// C of the current one, so that the copies of that prologue are in flight
// while the stores drain; the launch sizes the grid to the resident blocks.
template <class T, class Tag, MathMode M, bool AK, bool BK, bool EL = false, bool CHAINED = false>
__global__ void __launch_bounds__(MmaShape<T, Tag, M>::threads, MmaShape<T, Tag, M>::min_blocks)
    gemm_mma_kernel(const MmaParams<T> p) {
  using Tr = MmaKernelTraits<T, Tag, M, AK, BK, EL>;
  using S = typename Tr::S;
  using LA = typename Tr::LoaderA;
  using LB = typename Tr::LoaderB;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  grid_dependency_wait();  // launched as a dependent of the kernel before it
  T* const sa = reinterpret_cast<T*>(smem_raw);
  T* const sb = sa + S::stages * LA::stage_elems;

  const int warp_id = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32;
  const int wm0 = (warp_id % S::warps_m) * S::wm, wn0 = (warp_id / S::warps_m) * S::wn;
  const int g = lane / 4, t = lane % 4;
  // The lane's fragment bases inside a stage (row g, column t of its warp tile).
  const int a_lane = warp::tile_off<AK, LA::ld>(wm0 + g, t);
  const int b_lane = warp::tile_off<BK, LB::ld>(wn0 + g, t);

  const std::int64_t k0 = std::int64_t(blockIdx.y) * p.k_slice;
  const std::int64_t kz = p.k - k0 < p.k_slice ? p.k - k0 : p.k_slice;  // this slice's k
  const T* const a = p.a + (AK ? k0 : k0 * p.lda);
  const T* const b = p.b + (BK ? k0 : k0 * p.ldb);
  T* const c = p.c + std::int64_t(blockIdx.y) * p.c_slice;

  const std::int64_t tiles = p.m_tiles * p.n_tiles;
  for (std::int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const TileOrigin at = tile_origin<S::bm, S::bn>(tile, p.m_tiles, p.n_tiles);
    LA la(a, p.lda, p.m, at.m0, p.a_vec);
    LB lb(b, p.ldb, p.n, at.n0, p.b_vec);
    typename Tr::Warp w;
    w.clear();
    if constexpr (is_complex<T>::value) w.set_conj(p.conj_a, p.conj_b);

    const std::int64_t ktiles = (kz + S::bk - 1) / S::bk;
    auto copy_stage = [&](LA& to_a, LB& to_b, int slot, std::int64_t kt) {
      if (kt < ktiles) {
        to_a.load(sa + slot * LA::stage_elems, kz - kt * S::bk, p.a);
        to_b.load(sb + slot * LB::stage_elems, kz - kt * S::bk, p.b);
      }
      block::cp_async_commit();  // empty groups keep the count uniform
    };
    auto load_stage = [&](int slot, std::int64_t kt) { copy_stage(la, lb, slot, kt); };
    bool prologue_issued = false;  // by the block's previous tile (CHAINED)
    if constexpr (CHAINED) prologue_issued = tile != blockIdx.x;
    if (prologue_issued) {
      la.skip(S::stages - 1);
      lb.skip(S::stages - 1);
    } else {
#pragma unroll
      for (int s = 0; s < S::stages - 1; ++s) load_stage(s, s);
    }
    if constexpr (S::frag_pipeline)
      MmaKLoop<Tr, AK, BK>::pipelined(w, sa + a_lane, sb + b_lane, ktiles, load_stage);
    else
      MmaKLoop<Tr, AK, BK>::staged(w, sa + a_lane, sb + b_lane, ktiles, load_stage);
    block::cp_async_wait<0>();
    __syncthreads();  // the next tile's prologue overwrites the stages

    if constexpr (CHAINED) {
      if (tile + gridDim.x < tiles) {
        const TileOrigin next = tile_origin<S::bm, S::bn>(tile + gridDim.x, p.m_tiles, p.n_tiles);
        LA na(a, p.lda, p.m, next.m0, p.a_vec);
        LB nb(b, p.ldb, p.n, next.n0, p.b_vec);
#pragma unroll
        for (int s = 0; s < S::stages - 1; ++s) copy_stage(na, nb, s, s);
      }
    }
    // Chained tiles are short in k: their C store is most of a tile's work,
    // stored evict-first and tested once per tile (RealAccumulators::store;
    // 8192x8192x64 went from 0.79 to 0.88 of DGEMM). Float kernels test once
    // per tile too (tf32x3 on 8192x8192x64: 1.05 -> 1.37 of SGEMM); fp64's
    // unchained tiles keep the per-element tests, with which the large one
    // spills less (56 against 96 bytes of stack).
    const std::int64_t mrem = p.m - at.m0 - wm0, nrem = p.n - at.n0 - wn0;
    if (mrem > 0 && nrem > 0) {
      T* const cw = c + (at.m0 + wm0) + (at.n0 + wn0) * p.ldc;
      if constexpr (CHAINED || std::is_same_v<T, float>)
        w.template store<CHAINED, true>(cw, p.ldc, mrem, nrem, p.alpha, p.beta, p.beta_is_zero);
      else
        w.store(cw, p.ldc, mrem, nrem, p.alpha, p.beta, p.beta_is_zero);
    }
  }
}

}  // namespace egpu::kernels::kernel

// The tensor-core GEMM kernel: one block computes a bm x bn tile of C with
// mma.sync, streaming k in bk-deep stages through a `stages`-deep cp.async
// pipeline in dynamic shared memory (one barrier per stage). Scalar, tile
// shape and arithmetic come from MmaShape<T, Tag, M>; the operand layouts
// are template flags (AK: op(A) is k-contiguous, i.e. A row_major; BK: op(B)
// is k-contiguous, i.e. B col_major), so that fragment addresses are
// compile-time offsets. Conj, alpha/beta and the vector path are run-time.
#pragma once

#include <cstdint>

#include "kernels/gemm/block/async_copy.cuh"
#include "kernels/gemm/block/async_tile_loader.cuh"
#include "kernels/gemm/gemm_mma_config.hpp"
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

template <class T, class Tag, MathMode M, bool AK, bool BK>
struct MmaKernelTraits {
  using S = MmaShape<T, Tag, M>;
  using LoaderA = block::AsyncTileLoader<T, S::bm, S::bk, S::threads, AK>;
  using LoaderB = block::AsyncTileLoader<T, S::bn, S::bk, S::threads, BK>;
  using Warp = warp::WarpMma<T, M, S::mt, S::nt, S::mma_k>;
  static constexpr int smem_bytes =
      S::stages * (LoaderA::stage_elems + LoaderB::stage_elems) * int(sizeof(T));
};

template <class T, class Tag, MathMode M, bool AK, bool BK>
__global__ void __launch_bounds__(MmaShape<T, Tag, M>::threads, MmaShape<T, Tag, M>::min_blocks)
    gemm_mma_kernel(const MmaParams<T> p) {
  using Tr = MmaKernelTraits<T, Tag, M, AK, BK>;
  using S = typename Tr::S;
  using LA = typename Tr::LoaderA;
  using LB = typename Tr::LoaderB;
  extern __shared__ __align__(16) unsigned char smem_raw[];
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
    const std::int64_t per_group = std::int64_t(group_m) * p.n_tiles;
    const std::int64_t first_m = tile / per_group * group_m;
    const std::int64_t rows = p.m_tiles - first_m < group_m ? p.m_tiles - first_m : group_m;
    const std::int64_t in_group = tile % per_group;
    const std::int64_t m0 = (first_m + in_group % rows) * S::bm;
    const std::int64_t n0 = (in_group / rows) * S::bn;

    LA la(a, p.lda, p.m, m0, p.a_vec);
    LB lb(b, p.ldb, p.n, n0, p.b_vec);
    typename Tr::Warp w;
    w.clear();
    if constexpr (is_complex<T>::value) w.set_conj(p.conj_a, p.conj_b);

    const std::int64_t ktiles = (kz + S::bk - 1) / S::bk;
#pragma unroll
    for (int s = 0; s < S::stages - 1; ++s) {
      if (s < ktiles) {
        la.load(sa + s * LA::stage_elems, kz - std::int64_t(s) * S::bk, p.a);
        lb.load(sb + s * LB::stage_elems, kz - std::int64_t(s) * S::bk, p.b);
      }
      block::cp_async_commit();
    }
    int rd = 0, wr = S::stages - 1;  // stage read by this step, stage written by it
    for (std::int64_t kt = 0; kt < ktiles; ++kt) {
      block::cp_async_wait<S::stages - 2>();
      // Stage rd has landed for every thread, and every warp is done with
      // stage wr (read in the previous step).
      __syncthreads();
      const std::int64_t kn = kt + S::stages - 1;
      if (kn < ktiles) {
        la.load(sa + wr * LA::stage_elems, kz - kn * S::bk, p.a);
        lb.load(sb + wr * LB::stage_elems, kz - kn * S::bk, p.b);
      }
      block::cp_async_commit();
      w.template stage<S::bk, AK, LA::ld, BK, LB::ld>(sa + rd * LA::stage_elems + a_lane,
                                                      sb + rd * LB::stage_elems + b_lane);
      rd = rd + 1 == S::stages ? 0 : rd + 1;
      wr = wr + 1 == S::stages ? 0 : wr + 1;
    }
    block::cp_async_wait<0>();
    __syncthreads();  // the next tile's prologue overwrites the stages

    const std::int64_t mrem = p.m - m0 - wm0, nrem = p.n - n0 - wn0;
    if (mrem > 0 && nrem > 0)
      w.store(c + (m0 + wm0) + (n0 + wn0) * p.ldc, p.ldc, mrem, nrem, p.alpha, p.beta,
              p.beta_is_zero);
  }
}

}  // namespace egpu::kernels::kernel

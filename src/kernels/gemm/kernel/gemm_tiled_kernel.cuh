// The tiled SIMT GEMM kernel: one block computes a bm x bn tile of C,
// streaming k in bk-deep stages through double-buffered shared memory
// (global loads of stage s+1 are in flight while stage s is multiplied).
// Scalar, tile shape and the two operand layouts are template parameters;
// conj, the vector paths and beta are run-time (uniform) flags.
//
// Split-k: block z of the grid covers k in [z * k_slice, min(k, (z + 1) *
// k_slice)) and writes its product to c + z * c_slice (device/
// gemm_split_k.cuh adds the slices up). A plain launch has one slice.
#pragma once

#include <cstdint>

#include "kernels/gemm/block/shared_tiles.cuh"
#include "kernels/gemm/block/tile_loader.cuh"
#include "kernels/gemm/gemm_tile_config.hpp"
#include "kernels/gemm/kernel/product_params.hpp"
#include "kernels/gemm/thread/micro_tile.cuh"

namespace egpu::kernels::kernel {

// op(A)(i, p) = a[i + p * lda] when A_XC (x-contiguous), else a[i * lda + p];
// op(B)(p, j) = b[j + p * ldb] when B_XC, else b[j * ldb + p].
// C(i, j) = c[i * c_rs + j * c_cs].
template <class T>
struct GemmParams : ProductParams<T> {
  std::int64_t c_rs, c_cs;
  bool c_vec;  // whole row chunks of C stored as vectors
};

// The k loop of one block tile: stages of bk through the two shared
// buffers. CHECKED = false when both operand tiles lie inside the matrix
// along x: only a partial last stage then takes the checked loads.
template <bool CHECKED, class S, class Smem, class LA, class LB, class Micro>
__device__ __forceinline__ void k_loop(Smem& smem, LA& la, LB& lb, Micro& acc, std::int64_t krem,
                                       std::int64_t a_step, std::int64_t b_step, int r0, int c0) {
  auto load = [&](std::int64_t kr) {
    if (!CHECKED && kr >= S::bk) {
      la.template load<false>(kr, a_step);
      lb.template load<false>(kr, b_step);
    } else {
      la.template load<true>(kr, a_step);
      lb.template load<true>(kr, b_step);
    }
  };
  load(krem);
  la.store(smem.a[0]);
  lb.store(smem.b[0]);
  __syncthreads();
  for (int cur = 0;; cur ^= 1) {
    krem -= S::bk;
    const bool more = krem > 0;
    if (more) load(krem);  // next stage's global loads overlap this stage's math
    acc.mma(smem.a[cur], smem.b[cur], r0, c0);
    if (more) {  // the other buffer was last read before the previous barrier
      la.store(smem.a[cur ^ 1]);
      lb.store(smem.b[cur ^ 1]);
    }
    __syncthreads();
    if (!more) break;
  }
}

template <class T, class Tag, bool A_XC, bool B_XC>
__global__ void __launch_bounds__(TileShape<T, Tag>::threads, TileShape<T, Tag>::min_blocks)
    gemm_tiled_kernel(const GemmParams<T> p) {
  using S = TileShape<T, Tag>;
  using Smem = block::SharedTiles<T, S>;
  using Micro = thread::MicroTile<T, S>;
  __shared__ Smem smem;

  const int r0 = Micro::origin_row(threadIdx.x), c0 = Micro::origin_col(threadIdx.x);
  const std::int64_t m0 = std::int64_t(blockIdx.x) * S::bm;
  const std::int64_t n_tiles = (p.n + S::bn - 1) / S::bn;
  const std::int64_t k0 = std::int64_t(blockIdx.z) * p.k_slice;
  const std::int64_t klen = p.k - k0 < p.k_slice ? p.k - k0 : p.k_slice;
  const T* const a = p.a + k0 * (A_XC ? p.lda : 1);
  const T* const b = p.b + k0 * (B_XC ? p.ldb : 1);
  T* const c = p.c + std::int64_t(blockIdx.z) * p.c_slice;

  // gridDim.y is capped at 65535: the block walks the column tiles.
  for (std::int64_t tn = blockIdx.y; tn < n_tiles; tn += gridDim.y) {
    const std::int64_t n0 = tn * S::bn;
    block::TileLoader<T, S::bm, S::bk, S::threads, A_XC> la(a, p.lda, p.m, m0, p.a_vec, p.conj_a);
    block::TileLoader<T, S::bn, S::bk, S::threads, B_XC> lb(b, p.ldb, p.n, n0, p.b_vec, p.conj_b);
    Micro acc;
    acc.clear();
    if (klen > 0) {
      const std::int64_t a_step = A_XC ? S::bk * p.lda : S::bk;
      const std::int64_t b_step = B_XC ? S::bk * p.ldb : S::bk;
      if (la.x_full() && lb.x_full())
        k_loop<false, S>(smem, la, lb, acc, klen, a_step, b_step, r0, c0);
      else
        k_loop<true, S>(smem, la, lb, acc, klen, a_step, b_step, r0, c0);
    }
    acc.store(c + m0 * p.c_rs + n0 * p.c_cs, p.c_rs, p.c_cs, p.m - m0, p.n - n0, r0, c0, p.alpha,
              p.beta, p.beta_is_zero, p.c_vec);
  }
}

}  // namespace egpu::kernels::kernel

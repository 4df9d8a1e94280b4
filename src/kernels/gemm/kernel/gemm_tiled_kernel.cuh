// The tiled GEMM kernel: one block computes a bm x bn tile of C, streaming
// k in bk-deep stages through double-buffered shared memory (global loads of
// stage s+1 are in flight while stage s is multiplied). Scalar and tile
// shape are template parameters; layouts, conj and the vector path are
// run-time (uniform) flags, so one instantiation serves every combination.
#pragma once

#include <cstdint>

#include "kernels/gemm/block/shared_tiles.cuh"
#include "kernels/gemm/block/tile_loader.cuh"
#include "kernels/gemm/gemm_tile_config.hpp"
#include "kernels/gemm/thread/micro_tile.cuh"

namespace egpu::kernels::kernel {

// Operands as strided views: op(A)(i, p) = a[i * a_sx + p * a_sp],
// op(B)(p, j) = b[j * b_sx + p * b_sp]; *_x_contig says which stride is 1.
template <class T>
struct GemmParams {
  std::int64_t m, n, k;
  const T* a;
  std::int64_t a_sx, a_sp;
  const T* b;
  std::int64_t b_sx, b_sp;
  T* c;
  std::int64_t ldc;
  T alpha, beta;
  bool beta_is_zero, a_x_contig, b_x_contig, a_vec, b_vec, conj_a, conj_b;
};

template <class T, class Tag>
__global__ void __launch_bounds__(TileShape<T, Tag>::threads, TileShape<T, Tag>::min_blocks)
    gemm_tiled_kernel(const GemmParams<T> p) {
  using S = TileShape<T, Tag>;
  using Smem = block::SharedTiles<T, S>;
  __shared__ Smem smem;

  const int tid = threadIdx.x;
  const int tr = tid % S::threads_m, tc = tid / S::threads_m;
  const std::int64_t m0 = std::int64_t(blockIdx.x) * S::bm;
  const std::int64_t n_tiles = (p.n + S::bn - 1) / S::bn;

  // gridDim.y is capped at 65535: the block walks the column tiles.
  for (std::int64_t tn = blockIdx.y; tn < n_tiles; tn += gridDim.y) {
    const std::int64_t n0 = tn * S::bn;
    block::TileLoader<T, S::bm, S::bk, S::threads> la(p.a, p.a_sx, p.a_sp, p.m, m0, p.a_x_contig,
                                                      p.a_vec, p.conj_a);
    block::TileLoader<T, S::bn, S::bk, S::threads> lb(p.b, p.b_sx, p.b_sp, p.n, n0, p.b_x_contig,
                                                      p.b_vec, p.conj_b);
    thread::MicroTile<T, S> acc;
    acc.clear();

    // krem: elements of k from the current stage on; the pointer steps are
    // re-read from the (constant-bank) parameters rather than held in registers.
    std::int64_t krem = p.k;
    if (krem > 0) {
      la.load(krem, S::bk * p.a_sp);
      lb.load(krem, S::bk * p.b_sp);
      la.store(smem.a[0]);
      lb.store(smem.b[0]);
      __syncthreads();
      for (int cur = 0;; cur ^= 1) {
        krem -= S::bk;
        const bool more = krem > 0;
        if (more) {  // next stage's global loads overlap this stage's math
          la.load(krem, S::bk * p.a_sp);
          lb.load(krem, S::bk * p.b_sp);
        }
        acc.mma(smem.a[cur], smem.b[cur], tr, tc);
        if (more) {  // the other buffer was last read before the previous barrier
          la.store(smem.a[cur ^ 1]);
          lb.store(smem.b[cur ^ 1]);
        }
        __syncthreads();
        if (!more) break;
      }
    }
    acc.store(p.c + m0 + n0 * p.ldc, p.ldc, p.m - m0, p.n - n0, tr, tc, p.alpha, p.beta,
              p.beta_is_zero);
  }
}

}  // namespace egpu::kernels::kernel

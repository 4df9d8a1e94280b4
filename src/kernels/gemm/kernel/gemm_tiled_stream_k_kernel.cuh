// Stream-K launch of the tiled SIMT GEMM kernel (plan: stream_k_plan.hpp).
// A 1-D grid: blocks [0, ctas) each run one contiguous share of the k
// iterations of the shared tiles [0, sk_tiles), tile by tile; the blocks
// after them run the remaining tiles whole, one each. Tiles are numbered
// in raster order, m fastest, as the plain launch's grid runs them.
//
// A share that covers a whole tile stores it like the plain kernel. One that
// covers part of a tile writes its accumulators to a partial slot of the
// workspace and counts itself in on the tile's arrival counter; the block
// that arrives last (no block waits for another) reads the tile's partials
// back in k order, sums them and stores C once. Reading every partial from
// the workspace, its own included, makes the sum the same whichever block
// arrives last. Each block has two slots, for the tiles its share starts
// and ends in.
#pragma once

#include <cstdint>

#include "kernels/gemm/kernel/gemm_tiled_kernel.cuh"
#include "kernels/gemm/stream_k_plan.hpp"

namespace egpu::kernels::kernel {

template <class T>
struct StreamKParams : GemmParams<T> {
  StreamKPlan plan;
  std::int64_t m_tiles;
  T* partials;    // 2 * plan.ctas slots of threads * tm * tn
  int* arrivals;  // plan.sk_tiles counters, zero at launch
};

template <class T, class Tag, bool A_XC, bool B_XC, bool C_ROWS>
__global__ void __launch_bounds__(TileShape<T, Tag>::threads, TileShape<T, Tag>::min_blocks)
    gemm_tiled_stream_k_kernel(const StreamKParams<T> p) {
  using S = TileShape<T, Tag>;
  using Smem = block::SharedTiles<T, S>;
  using Micro = thread::MicroTile<T, S>;
  constexpr int ACC = S::tm * S::tn;
  constexpr std::int64_t SLOT = std::int64_t(S::threads) * ACC;
  __shared__ Smem smem;
  __shared__ int last_arrival;

  const int r0 = Micro::origin_row(threadIdx.x), c0 = Micro::origin_col(threadIdx.x);
  const StreamKPlan& plan = p.plan;
  const std::int64_t block = blockIdx.x;
  Micro acc;

  // Partial slot of block b's share in tile t: 0 for the tile it starts in.
  auto slot = [&](std::int64_t b, std::int64_t t) {
    return p.partials + (2 * b + (t == plan.share_begin(b) / plan.iters ? 0 : 1)) * SLOT;
  };
  // The k iterations this block runs, numbered over the tiles in raster
  // order: its share, or the whole of its own tile. Only seg_end and two
  // flags stay live across the k loop (the kernel is at its register
  // limit): the rest is recomputed after it.
  const bool shares = block < plan.ctas;
  auto run_end = [&] { return shares ? plan.share_begin(block + 1) : (plan.sk_tiles + block - plan.ctas + 1) * plan.iters; };
  std::int64_t seg_end = shares ? plan.share_begin(block) : (plan.sk_tiles + block - plan.ctas) * plan.iters;
  for (bool first_segment = true; seg_end < run_end(); first_segment = false) {
    bool starts_tile;
    {
      const std::int64_t it = seg_end, end = run_end();
      const std::int64_t tile = it / plan.iters, tile_begin = tile * plan.iters;
      starts_tile = it == tile_begin;
      seg_end = end < tile_begin + plan.iters ? end : tile_begin + plan.iters;
      const std::int64_t k0 = (it - tile_begin) * S::bk, k1 = (seg_end - tile_begin) * S::bk;
      if (!first_segment) __syncthreads();  // the last tile's shared reads are done
      accumulate_tile<T, S, A_XC, B_XC, true>(smem, acc, p, p.a + k0 * (A_XC ? p.lda : 1),
                                             p.b + k0 * (B_XC ? p.ldb : 1), tile % p.m_tiles * S::bm,
                                             tile / p.m_tiles * S::bn, (k1 < p.k ? k1 : p.k) - k0,
                                             r0, c0);
    }
    const std::int64_t tile = (seg_end - 1) / plan.iters, tile_begin = tile * plan.iters;
    const std::int64_t tile_end = tile_begin + plan.iters;
    if (!starts_tile || seg_end != tile_end) {
      // Into this block's slot, element e of every thread adjacent
      // (coalesced), then counted in.
      T* const mine = slot(block, tile) + threadIdx.x;
#pragma unroll
      for (int i = 0; i < S::tm; ++i)
#pragma unroll
        for (int j = 0; j < S::tn; ++j) __stcg(mine + (i * S::tn + j) * S::threads, acc.acc[i][j]);
      const std::int64_t first = plan.owner(tile_begin), last = plan.owner(tile_end - 1);
      __threadfence();  // the partial is visible before the count
      __syncthreads();
      if (threadIdx.x == 0) {
        last_arrival = atomicAdd(p.arrivals + tile, 1) == int(last - first);
        __threadfence();  // the others' partials are read after the count
      }
      __syncthreads();
      if (!last_arrival) continue;
      for (std::int64_t b = first; b <= last; ++b) {
        const T* const part = slot(b, tile) + threadIdx.x;
#pragma unroll
        for (int i = 0; i < S::tm; ++i)
#pragma unroll
          for (int j = 0; j < S::tn; ++j) {
            const T v = __ldcg(part + (i * S::tn + j) * S::threads);
            acc.acc[i][j] = b == first ? v : acc.acc[i][j] + v;
          }
      }
    }
    const std::int64_t m0 = tile % p.m_tiles * S::bm, n0 = tile / p.m_tiles * S::bn;
    store_tile<T, S, C_ROWS>(smem, acc, p, p.c, m0, n0, r0, c0);
  }
}

}  // namespace egpu::kernels::kernel

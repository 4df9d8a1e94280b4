// Stream-K launch of the tiled SIMT GEMM kernel (plan: stream_k_plan.hpp).
// A 1-D grid over the tiles in raster order, m fastest (the plain launch's
// order): blocks [0, dp_tiles) run the first tiles whole, one each, in
// whole waves that start together; the last plan.ctas blocks each run one
// contiguous share of the k iterations of the remaining sk_tiles tiles,
// tile by tile. The shares come last so that the whole tiles' waves keep
// their blocks at the same depth in k, as in the plain launch: blocks that
// start at staggered depths read the operand panels at different places at
// once, and the L2 then holds less of what the next block needs.
//
// A share that covers a whole tile stores it like the plain kernel. One that
// covers part of a tile writes its accumulators to a partial slot of the
// workspace and counts itself in on the tile's arrival counter; the block
// that arrives last (no block waits for another) reads the tile's partials
// back in k order, sums them and stores C once. Reading every partial from
// the workspace, its own included, makes the sum the same whichever block
// arrives last. Each share has two slots, for the tiles it starts and ends
// in.
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

// Partial slot of share b in shared tile t (both counted from the first
// shared one): 0 for the tile the share starts in, 1 for the one it ends in.
template <class S, class T>
__device__ __forceinline__ T* partial_slot(const StreamKParams<T>& p, std::int64_t b, std::int64_t t) {
  constexpr std::int64_t SLOT = std::int64_t(S::threads) * S::tm * S::tn;
  return p.partials + (2 * b + (t == p.plan.share_begin(b) / p.plan.iters ? 0 : 1)) * SLOT;
}

// The last block to finish a shared tile: the partials of shares first..last
// summed in that order (k order: the same sum whichever block runs it),
// then C stored once. Not inlined: its registers (the sums and the loads in
// flight) then do not weigh on the allocation of the kernel's k loop, which
// spilled inside the loop when they did. The parameters come by value: a
// reference would take the kernel parameters' address, which moves them to
// local memory and turns the k loop's global loads into generic ones.
template <class T, class S, bool C_ROWS, class Smem>
__device__ __noinline__ void sum_and_store(Smem& smem, const StreamKParams<T> p, std::int64_t tile,
                                           std::int64_t first, std::int64_t last, int r0, int c0) {
  thread::MicroTile<T, S> acc;
  for (std::int64_t b = first; b <= last; ++b) {
    const T* const part = partial_slot<S>(p, b, tile - p.plan.dp_tiles) + threadIdx.x;
#pragma unroll
    for (int i = 0; i < S::tm; ++i)
#pragma unroll
      for (int j = 0; j < S::tn; ++j) {
        const T v = __ldcg(part + (i * S::tn + j) * S::threads);
        acc.acc[i][j] = b == first ? v : acc.acc[i][j] + v;
      }
  }
  store_tile<T, S, C_ROWS>(smem, acc, p, p.c, tile % p.m_tiles * S::bm, tile / p.m_tiles * S::bn, r0, c0);
}

template <class T, class Tag, bool A_XC, bool B_XC, bool C_ROWS>
__global__ void __launch_bounds__(TileShape<T, Tag>::threads, TileShape<T, Tag>::min_blocks)
    gemm_tiled_stream_k_kernel(const StreamKParams<T> p) {
  using S = TileShape<T, Tag>;
  using Smem = block::SharedTiles<T, S>;
  using Micro = thread::MicroTile<T, S>;
  __shared__ Smem smem;
  __shared__ int last_arrival;

  const int r0 = Micro::origin_row(threadIdx.x), c0 = Micro::origin_col(threadIdx.x);
  const StreamKPlan& plan = p.plan;
  const std::int64_t block = blockIdx.x;
  Micro acc;

  // The k iterations this block runs, numbered over the tiles in raster
  // order: its share, or the whole of its own tile. The segment's bounds
  // cross the k loop in shared memory, not in registers: the kernel is at
  // its register limit, and values kept live over the loop spill inside it.
  __shared__ std::int64_t segment[2];
  const bool shares = block >= plan.dp_tiles;
  const std::int64_t shared_base = plan.dp_tiles * plan.iters;  // first iteration of the shared tiles
  auto run_end = [&] {
    return shares ? shared_base + plan.share_begin(block - plan.dp_tiles + 1) : (block + 1) * plan.iters;
  };
  for (std::int64_t it = shares ? shared_base + plan.share_begin(block - plan.dp_tiles) : block * plan.iters;
       it < run_end(); it = segment[1]) {
    {
      const std::int64_t tile = it / plan.iters, tile_begin = tile * plan.iters, end = run_end();
      const std::int64_t seg_end = end < tile_begin + plan.iters ? end : tile_begin + plan.iters;
      const std::int64_t k0 = (it - tile_begin) * S::bk, k1 = (seg_end - tile_begin) * S::bk;
      __syncthreads();  // the last segment's reads of shared memory are done
      if (threadIdx.x == 0) {
        segment[0] = it;
        segment[1] = seg_end;
      }
      // The k loop's first barrier precedes every read of `segment`.
      accumulate_tile<T, S, A_XC, B_XC, true>(smem, acc, p, p.a + k0 * (A_XC ? p.lda : 1),
                                             p.b + k0 * (B_XC ? p.ldb : 1), tile % p.m_tiles * S::bm,
                                             tile / p.m_tiles * S::bn, (k1 < p.k ? k1 : p.k) - k0,
                                             r0, c0);
    }
    const std::int64_t seg_begin = segment[0], seg_end = segment[1];
    const std::int64_t tile = (seg_end - 1) / plan.iters, tile_begin = tile * plan.iters;
    const std::int64_t tile_end = tile_begin + plan.iters;
    if (seg_begin != tile_begin || seg_end != tile_end) {
      // Into this block's slot, element e of every thread adjacent
      // (coalesced), then counted in.
      T* const mine = partial_slot<S>(p, block - plan.dp_tiles, tile - plan.dp_tiles) + threadIdx.x;
#pragma unroll
      for (int i = 0; i < S::tm; ++i)
#pragma unroll
        for (int j = 0; j < S::tn; ++j) __stcg(mine + (i * S::tn + j) * S::threads, acc.acc[i][j]);
      const std::int64_t first = plan.owner(tile_begin - shared_base);
      const std::int64_t last = plan.owner(tile_end - 1 - shared_base);
      __threadfence();  // the partial is visible before the count
      __syncthreads();
      if (threadIdx.x == 0) {
        last_arrival = atomicAdd(p.arrivals + (tile - plan.dp_tiles), 1) == int(last - first);
        __threadfence();  // the others' partials are read after the count
      }
      __syncthreads();
      if (!last_arrival) continue;
      sum_and_store<T, S, C_ROWS>(smem, p, tile, first, last, r0, c0);
      continue;
    }
    const std::int64_t m0 = tile % p.m_tiles * S::bm, n0 = tile / p.m_tiles * S::bn;
    store_tile<T, S, C_ROWS>(smem, acc, p, p.c, m0, n0, r0, c0);
  }
}

}  // namespace egpu::kernels::kernel

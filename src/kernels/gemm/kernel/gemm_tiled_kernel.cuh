// The tiled SIMT GEMM kernel: one block computes a bm x bn tile of C,
// streaming k in bk-deep stages through double-buffered shared memory
// (global loads of stage s+1 are in flight while stage s is multiplied:
// into registers, or with the shape's async_xc straight into the free
// buffer by cp.async for x-contiguous operands). Scalar, tile shape, the
// two operand layouts and the global-load map (VEC: 16-byte loads for both
// operands, else coalesced scalar loads, see block/tile_loader.cuh) and,
// with C_ROWS, a C stored row by row (c_cs == 1: the transposed products of
// device/gemm_tiled_launch.cuh) are template parameters; conj, the vector C
// store and beta are run-time (uniform) flags.
//
// Split-k: block z of the grid covers k in [z * k_slice, min(k, (z + 1) *
// k_slice)) and writes its product to c + z * c_slice (device/
// gemm_split_k.cuh adds the slices up). A plain launch has one slice.
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/gemm/block/async_xc_tile_loader.cuh"
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

// The loader of one operand tile: through registers, or with cp.async for
// x-contiguous operands on the 16-byte grid where the shape asks for it.
template <class T, class S, int BX, bool XC, bool VEC>
using OperandLoader =
    std::conditional_t<S::async_xc && XC && VEC, block::AsyncXcTileLoader<T, BX, S::bk, S::threads>,
                       block::TileLoader<T, BX, S::bk, S::threads, XC, VEC>>;

// The k loop of one block tile: stages of bk through the two shared
// buffers. CHECKED = false when both operand tiles lie inside the matrix
// along x: only a partial last stage then takes the checked loads.
//
// Within a stage the fragments of step kk + 1 are read while step kk is
// multiplied. The hand-over to the other buffer (shared stores of the next
// stage or the wait for its async copies, barrier, its first fragment
// reads) comes after the last step, or with S::early_handover before it:
// that step's fragments are already in registers, and its FMAs then hide
// the barrier and the first reads.
//
// With S::steady_loop, interior tiles run their steady state (this stage
// and the next whole) in a loop of its own whose global loads carry no
// tests: a test and branch stalls the warp for several cycles, and the FMA
// pipe only stays busy on an unbroken stream. It costs a second copy of the
// stage in the code.
template <bool CHECKED, class S, class Smem, class LA, class LB, class Micro>
__device__ __forceinline__ void k_loop(Smem& smem, LA& la, LB& lb, Micro& acc, std::int64_t krem,
                                       std::int64_t a_step, std::int64_t b_step, int r0, int c0) {
  static_assert(S::bk % 2 == 0, "step fragments alternate between two register sets");
  using Frag = typename Micro::Frag;
  // Global loads of the k tile from kr on, bound for shared buffer buf.
  auto load = [&](std::int64_t kr, int buf) {
    if (!CHECKED && kr >= S::bk) {
      la.template load<false>(kr, a_step, smem.a[buf]);
      lb.template load<false>(kr, b_step, smem.b[buf]);
    } else {
      la.template load<true>(kr, a_step, smem.a[buf]);
      lb.template load<true>(kr, b_step, smem.b[buf]);
    }
  };
  load(krem, 0);
  la.store(smem.a[0]);
  lb.store(smem.b[0]);
  __syncthreads();
  Frag f[2];
  Micro::load_frag(smem.a[0], smem.b[0], 0, r0, c0, f[0]);

  // The math of the stage in buffer cur and, with `more`, the hand-over to
  // the next one, whose global loads are already in the loaders' registers.
  // The other buffer was last read before the previous barrier.
  auto stage = [&](int cur, bool more) {
#pragma unroll
    for (int kk = 0; kk + 1 < S::bk; ++kk) {
      Micro::load_frag(smem.a[cur], smem.b[cur], kk + 1, r0, c0, f[(kk + 1) % 2]);
      acc.rank1(f[kk % 2]);
    }
    auto hand_over = [&] {
      if (!more) return;
      la.store(smem.a[cur ^ 1]);
      lb.store(smem.b[cur ^ 1]);
      __syncthreads();
      Micro::load_frag(smem.a[cur ^ 1], smem.b[cur ^ 1], 0, r0, c0, f[0]);
    };
    if constexpr (S::early_handover) {
      hand_over();
      acc.rank1(f[1]);
    } else {
      acc.rank1(f[1]);
      hand_over();
    }
  };

  int cur = 0;
  if constexpr (!CHECKED && S::steady_loop) {
    for (; krem >= 2 * S::bk; cur ^= 1) {
      krem -= S::bk;
      la.load_interior(a_step, smem.a[cur ^ 1]);
      lb.load_interior(b_step, smem.b[cur ^ 1]);
      stage(cur, true);
    }
  }
  for (;; cur ^= 1) {
    krem -= S::bk;
    const bool more = krem > 0;
    if (more) load(krem, cur ^ 1);  // next stage's global loads overlap this stage's math
    stage(cur, more);
    if (!more) break;
  }
}

template <class T, class Tag, bool A_XC, bool B_XC, bool VEC, bool C_ROWS = false>
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
    OperandLoader<T, S, S::bm, A_XC, VEC> la(a, p.lda, p.m, m0, p.conj_a);
    OperandLoader<T, S, S::bn, B_XC, VEC> lb(b, p.ldb, p.n, n0, p.conj_b);
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
    if constexpr (C_ROWS) {
      acc.store_rows(c + m0 * p.c_rs + n0, p.c_rs, p.m - m0, p.n - n0, r0, c0, p.alpha, p.beta,
                     p.beta_is_zero);
    } else if (Micro::staged_store && p.c_rs == 1 && !p.c_vec) {
      // Columns of C off the vector grid: stored through shared memory, which
      // every warp must be done reading first.
      __syncthreads();
      constexpr int scratch = int(sizeof(Smem) / sizeof(T)) / (S::threads / 32);
      acc.template store_staged<scratch>(c + m0 + n0 * p.c_cs, p.c_cs, p.m - m0, p.n - n0, p.alpha,
                                         p.beta, p.beta_is_zero, reinterpret_cast<T*>(&smem));
    } else {
      acc.store(c + m0 * p.c_rs + n0 * p.c_cs, p.c_rs, p.c_cs, p.m - m0, p.n - n0, r0, c0, p.alpha,
                p.beta, p.beta_is_zero, p.c_vec);
    }
    // The k loop ends without a barrier: the next tile's first stores into
    // shared memory wait for every thread's last fragment (or scratch) reads.
    if (tn + gridDim.y < n_tiles) __syncthreads();
  }
}

}  // namespace egpu::kernels::kernel

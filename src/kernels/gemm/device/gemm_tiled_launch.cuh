// Launch of one configuration of the tiled SIMT GEMM family: maps GemmArgs
// onto the kernel's parameters, picks the instantiation for the two operand
// layouts, decides the vectorised global-load and C-store paths, sizes the
// grid, launches and checks, with the rewrites of gemm_tiled_choice.hpp.
// Used by gemm_tiled.cu (which picks the configuration), by the split-k
// path (device/gemm_split_k.cuh) and by bench/gemm_probe.cu (which also
// times experimental tile shapes).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "egpu/error.hpp"
#include "kernels/gemm/device/gemm_operand_transpose.cuh"
#include "kernels/gemm/device/gemm_split_k.cuh"
#include "kernels/gemm/device/product_params.cuh"
#include "kernels/gemm/gemm_args.hpp"
#include "kernels/gemm/gemm_tile_config.hpp"
#include "kernels/gemm/gemm_tiled_choice.hpp"
#include "kernels/gemm/kernel/gemm_tiled_kernel.cuh"
#include "runtime/cuda_check.hpp"

namespace egpu::kernels::device {

// How a launch differs from a plain product into column-major C:
// c_transposed stores C(i, j) at c[i * ldc + j] (the product of swapped
// operands, see transpose_problem in gemm_problem.hpp); `slices` k-slices
// (KSlices) write to c + z * slices.c_slice.
struct TiledLaunchExtras {
  bool c_transposed = false;
  KSlices slices{};
};

// Whether two schedules run the same tile: block and micro-tile shapes,
// thread count (so the grid and the vector widths too).
template <class T, class A, class B>
inline constexpr bool same_tile_shape =
    TileShape<T, A>::bm == TileShape<T, B>::bm && TileShape<T, A>::bn == TileShape<T, B>::bn &&
    TileShape<T, A>::bk == TileShape<T, B>::bk && TileShape<T, A>::threads == TileShape<T, B>::threads &&
    TileShape<T, A>::tm == TileShape<T, B>::tm && TileShape<T, A>::tn == TileShape<T, B>::tn;

// Requires m, n > 0.
template <class T, class Tag>
void launch_tiled(const GemmArgs<T>& g_in, cudaStream_t stream, const TiledLaunchExtras& x_in = {}) {
  using S = TileShape<T, Tag>;
  // Scalars whose groups are single elements have one map only.
  constexpr bool has_scalar_map = S::vec_a > 1 || S::vec_b > 1;

  using RT = RunTransposed<T, Tag, true, false>;
  const bool nn_transposed = !x_in.c_transposed && x_in.slices.count <= 1 && nn_runs_transposed<T, Tag>(g_in);
  const GemmArgs<T> g = nn_transposed ? transpose_problem(g_in) : g_in;
  TiledLaunchExtras x = x_in;
  x.c_transposed = x.c_transposed || nn_transposed;

  const int slices = x.slices.count > 1 ? x.slices.count : 1;
  kernel::GemmParams<T> p{};
  set_product_params(p, g, x.slices, vector_ok<T, S::vec_a>(g.a, g.lda), vector_ok<T, S::vec_b>(g.b, g.ldb));
  p.c_rs = x.c_transposed ? g.ldc : 1;
  p.c_cs = x.c_transposed ? 1 : g.ldc;
  // Whole row chunks of C as vectors: base and column stride on a vector
  // boundary (the slice offset m * n keeps that only when it is a multiple).
  constexpr int VC = thread::MicroTile<T, S>::CHA;
  p.c_vec = !x.c_transposed && vector_ok<T, VC>(g.c, g.ldc) &&
            (slices == 1 || p.c_slice % VC == 0);

  const std::int64_t m_tiles = ceil_div(g.m, S::bm);
  const std::int64_t n_tiles = ceil_div(g.n, S::bn);
  if (m_tiles > 0x7fffffff) throw egpu::error("gemm_tiled: m too large for the grid");
  if (slices > 65535) throw egpu::error("gemm_tiled: too many k-slices");
  // Row tiles on x (limit 2^31-1); column tiles on y, capped at 65535: the
  // kernel loops over the rest; k-slices on z.
  const dim3 grid(unsigned(m_tiles), unsigned(n_tiles < 65535 ? n_tiles : 65535),
                  unsigned(slices));
  const bool a_xc = g.a_layout == Layout::col_major;  // (i, p) at a[i + p * lda]
  const bool b_xc = g.b_layout == Layout::row_major;  // (p, j) at b[p * ldb + j]
  // 16-byte loads only when both operands allow them (k == 0 loads nothing).
  const bool vec = !has_scalar_map || g.k == 0 || (p.a_vec && p.b_vec);
  auto run = [&](auto a_xc_t, auto b_xc_t, auto vec_t) {
    constexpr bool AX = decltype(a_xc_t)::value, BX = decltype(b_xc_t)::value;
    constexpr bool VEC = decltype(vec_t)::value;
    using LT = typename LayoutTile<T, Tag, AX, BX, VEC>::type;
    static_assert(same_tile_shape<T, LT, Tag>, "a layout's schedule keeps the tile's shape");
    if constexpr (RT::value && !AX && BX && VEC) {
      using RL = typename RT::tile;
      static_assert(same_tile_shape<T, RL, Tag>, "the transposed run keeps the tile's shape");
      if (nn_transposed) {
        kernel::gemm_tiled_kernel<T, RL, AX, BX, VEC, true><<<grid, S::threads, 0, stream>>>(p);
        return;
      }
    }
    kernel::gemm_tiled_kernel<T, LT, AX, BX, VEC><<<grid, S::threads, 0, stream>>>(p);
  };
  auto run_map = [&](auto a_xc_t, auto b_xc_t) {
    if constexpr (has_scalar_map) {
      if (!vec) {
        run(a_xc_t, b_xc_t, std::false_type{});
        return;
      }
    }
    run(a_xc_t, b_xc_t, std::true_type{});
  };
  using yes = std::true_type;
  using no = std::false_type;
  if (a_xc && b_xc)
    run_map(yes{}, yes{});
  else if (a_xc)
    run_map(yes{}, no{});
  else if (b_xc)
    run_map(no{}, yes{});
  else
    run_map(no{}, no{});
  runtime::launch_check("gemm_tiled_kernel");
}

// The split_k configuration (gemm_args.hpp): the short side of C along n
// (operands swapped when m < n), on the tile Tag (SkinnyTileTag's, or the
// medium tile where splits_on_medium_tile), k-slices from plan_split_k by
// tiled_slice_rule (none when the tiles already fill the GPU). Requires
// m, n > 0.
template <class T, class Tag = typename SkinnyTileTag<T>::type>
void launch_tiled_split_k(const GemmArgs<T>& g, cudaStream_t stream, int sms) {
  using S = TileShape<T, Tag>;
  const bool swap = g.m < g.n;
  const GemmArgs<T> t = swap ? transpose_problem(g) : g;
  const KSlices s = plan_split_k(t.m, t.n, t.k, S::bm, S::bn, S::bk, sms, S::min_blocks, tiled_slice_rule<T>);
  if (s.count < 2) {
    launch_tiled<T, Tag>(t, stream, TiledLaunchExtras{swap, {}});
    return;
  }
  gemm_split_k(
      t, s, stream,
      [stream](const GemmArgs<T>& part, const KSlices& ks) {
        launch_tiled<T, Tag>(part, stream, TiledLaunchExtras{false, ks});
      },
      swap);
}

// A plain product (no k-slices, C as given) on the tile: TN on the TT
// layouts after a transposed copy of op(B) where tn_runs_on_b_copy and its
// memory can be had, else launch_tiled (which runs NN transposed where
// nn_runs_transposed). Requires m, n > 0.
template <class T, class Tag>
void launch_tiled_product(const GemmArgs<T>& g, cudaStream_t stream) {
  if (tn_runs_on_b_copy<T, Tag>(g) &&
      with_b_copied_by_rows(g, stream, [&](const GemmArgs<T>& h) { launch_tiled<T, Tag>(h, stream); }))
    return;
  launch_tiled<T, Tag>(g, stream);
}

}  // namespace egpu::kernels::device

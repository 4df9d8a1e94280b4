// The automatic choice among the tiled SIMT configurations, and the
// rewrites the launch of a plain product makes on the layouts that run
// faster another way (the transposed NN run, TN on a transposed copy of
// op(B)). Plain C++ so that the choices are tested on the CPU
// (test/cpu/gemm_choice_test.cpp); device/gemm_tiled_launch.cuh acts on them.
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/gemm/gemm_args.hpp"
#include "kernels/gemm/gemm_problem.hpp"
#include "kernels/gemm/gemm_split_k_plan.hpp"
#include "kernels/gemm/gemm_tile_config.hpp"

namespace egpu::kernels::device {

// An NN product that the tile runs transposed (RunTransposed), deep enough
// in k for the transposed C store not to matter and with its operands on
// the 16-byte load grid: C^T = B^T A^T on the TT layouts, C stored row by
// row (kernel C_ROWS). Only plain launches (no k-slices, C as given) are
// rewritten: launch_tiled tests that before asking.
template <class T, class Tag>
bool nn_runs_transposed(const GemmArgs<T>& g) {
  using RT = RunTransposed<T, Tag, true, false>;
  using S = TileShape<T, Tag>;  // the transposed problem's op(A) is B
  return RT::value && g.a_layout == Layout::col_major && g.b_layout == Layout::col_major &&
         g.k >= RT::min_k && vector_ok<T, S::vec_a>(g.b, g.ldb) && vector_ok<T, S::vec_b>(g.a, g.lda);
}

// A plain TN product that the tile runs on the TT layouts after copying
// op(B) transposed (CopyBTransposed): large enough for the copy to pay, with
// op(A) on the 16-byte load grid (the copy of op(B) is put on it).
template <class T, class Tag>
bool tn_runs_on_b_copy(const GemmArgs<T>& g) {
  using CB = CopyBTransposed<T, Tag, false, false>;
  using S = TileShape<T, Tag>;
  return CB::value && g.a_layout == Layout::row_major && g.b_layout == Layout::col_major &&
         g.m >= CB::min_m && g.k >= CB::min_k && vector_ok<T, S::vec_a>(g.a, g.lda);
}

// Whether T has a medium tile of its own (gemm_tile_config.hpp).
template <class T>
inline constexpr bool has_medium_tile = !std::is_same_v<typename MediumTileTag<T>::type, LargeTag>;

// Share of the block slots (one per resident block per multiprocessor) that
// `tiles` blocks keep busy over their waves: 1 when the last wave is full.
inline double wave_fill(std::int64_t tiles, std::int64_t slots) {
  const std::int64_t waves = ceil_div(tiles, slots);
  return waves > 0 ? double(tiles) / double(waves * slots) : 0.0;
}

// Share of a grid of bm x bn tiles that lies inside the m x n product: the
// rest of the partial tiles along the edges is computed for nothing.
inline double tile_coverage(std::int64_t m, std::int64_t n, std::int64_t bm, std::int64_t bn) {
  return double(m) / double(ceil_div(m, bm) * bm) * (double(n) / double(ceil_div(n, bn) * bn));
}

// Whether split_k runs on T's medium tile rather than its skinny one (the
// short side of C along n): where the medium tile covers C at least as
// well. Its 128 x 128 blocks do 64 FMAs per operand element loaded against
// the skinny 256 x 64 tile's 51, and cut as many tiles from a C whose sides
// are multiples of 256: in the slices filled_waves picks, m x 128 and m x
// 256 float (m = k from 1024 to 4096) ran 2-9 % faster on it. On 1000 x
// 300 x 5000 its tiles cover 0.76 of C against the skinny tile's 0.92, and
// it ran 7 % slower.
template <class T>
bool splits_on_medium_tile(const GemmArgs<T>& g) {
  if constexpr (has_medium_tile<T>) {
    using M = TileShape<T, typename MediumTileTag<T>::type>;
    using K = TileShape<T, typename SkinnyTileTag<T>::type>;
    const std::int64_t m = g.m < g.n ? g.n : g.m, n = g.m < g.n ? g.m : g.n;
    return n >= M::bn && tile_coverage(m, n, M::bm, M::bn) >= tile_coverage(m, n, K::bm, K::bn);
  }
  return false;
}

// The slice rule of T's split_k on the tiled family (gemm_split_k_plan.hpp):
// filled_waves for float, where it was measured (m x 128 and m x 256, m = k
// from 1024 to 4096: 0.97-1.27 times one_wave's rate on the skinny tile;
// with the medium tile where splits_on_medium_tile, 0.99-1.35 times the
// skinny tile's in one wave).
template <class T>
inline constexpr SliceRule tiled_slice_rule = std::is_same_v<T, float> ? SliceRule::filled_waves : SliceRule::one_wave;

// A tile configuration whose blocks do useful work in less than this share
// of the block slots of one wave (medium's weighed by its rate) gives way to
// split_k (or small): measured on the H100 (bench/NOTES-gemm.md, version
// 10), the large tile at 0.73 of one wave (96 tiles on 132 SMs) ran 18 %
// faster than split_k, at 0.48 (64 tiles) 40 % slower.
inline constexpr double min_tile_fill = 0.7;

// The automatic choice among the SIMT configurations: `large`, or `medium`
// where its score beats large's, when the better of the two scores at least
// min_tile_fill (always when large's tiles give every multiprocessor a
// block). A tile's score is the share of the block slots its blocks keep
// busy over their waves (wave_fill) times the share of its tiles inside the
// product (tile_coverage), times relative_rate for medium. Otherwise split_k
// when k is deep enough for two slices of plan_split_k's minimum; else
// `small`. Large's tiles are counted on the problem as it runs (transposed
// where nn_runs_transposed): 4096 x 4224 x 4096 NN fills whole waves that
// way. The coverage keeps complex<float>'s 128 x 64 tile off 64 x 8192
// products, where half of each tile lay outside C (0.42 of CGEMM against
// 0.88 on split_k).
template <class T>
GemmConfig choose_tiled_config(const GemmArgs<T>& g, int sms) {
  using L = TileShape<T, LargeTag>;
  const GemmArgs<T> t = nn_runs_transposed<T, LargeTag>(g) ? transpose_problem(g) : g;
  const std::int64_t tiles = ceil_div(t.m, L::bm) * ceil_div(t.n, L::bn);
  const double large = wave_fill(tiles, std::int64_t(sms) * L::min_blocks) * tile_coverage(t.m, t.n, L::bm, L::bn);
  double medium = 0.0;  // medium's score weighed by its rate
  if constexpr (has_medium_tile<T>) {
    using M = TileShape<T, typename MediumTileTag<T>::type>;
    const std::int64_t m_tiles = ceil_div(g.m, M::bm) * ceil_div(g.n, M::bn);
    medium = M::relative_rate * wave_fill(m_tiles, std::int64_t(sms) * M::min_blocks) *
             tile_coverage(g.m, g.n, M::bm, M::bn);
  }
  if (tiles >= sms || large >= min_tile_fill || medium >= min_tile_fill)
    return medium > large ? GemmConfig::medium : GemmConfig::large;
  if (g.k >= 512) return GemmConfig::split_k;
  return GemmConfig::small;
}

}  // namespace egpu::kernels::device

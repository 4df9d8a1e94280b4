// Tile shapes of the tensor-core (mma.sync) configurations of the GEMM
// family, as types: MmaTileConfig<T, Tag, Math> for a scalar T, a shape tag
// (TensorLargeTag, TensorSmallTag) and the arithmetic (MathMode; only float
// distinguishes tf32 from tf32x3). Each names the block tile (bm x bn, bk
// deep), the warp tile (wm x wn, a grid of 16x8 mma tiles), the number of
// cp.async pipeline stages and the resident blocks per SM that the register
// cap allows. Plain C++ so host code can read the shapes.
#pragma once

#include <cstdint>

#include "common/complex.hpp"
#include "kernels/gemm/gemm_args.hpp"

namespace egpu::kernels {

struct TensorLargeTag {};
struct TensorSmallTag {};
struct TensorSplitTag {};  // the tile split-k runs for complex<double> (device/gemm_mma.cu, with_split_tag)

// FRAG_PIPELINE (fp64 only): the warps load the fragments of the next k step
// while the mma of the current one run, across the stage boundary too, with
// the stage's barrier in the middle of its last step's mma
// (kernel/gemm_mma_kernel.cuh); it holds two fragment sets.
// CHAIN_MAX_K: products with k up to this run chained tiles
// (kernel/gemm_mma_kernel.cuh): a grid of the resident blocks, each issuing
// its next tile's prologue before the current tile's C store; 0: never.
template <int BM, int BN, int BK, int WM, int WN, int STAGES, int MIN_BLOCKS, int MMA_K = 8,
          bool FRAG_PIPELINE = false, int CHAIN_MAX_K = 0>
struct MmaDims {
  static constexpr int bm = BM, bn = BN, bk = BK;  // block tile (complex elements for cdouble)
  static constexpr int wm = WM, wn = WN;           // warp tile
  static constexpr int stages = STAGES;            // shared-memory pipeline depth
  static constexpr int min_blocks = MIN_BLOCKS;    // resident blocks per SM (register cap)
  static constexpr int mma_k = MMA_K;              // k of one mma (16: fp64 m16n8k16)
  static constexpr bool frag_pipeline = FRAG_PIPELINE;
  static constexpr int chain_max_k = CHAIN_MAX_K;
};

template <class T, class Tag, MathMode M> struct MmaTileConfig;

// fp64, DMMA m16n8k8 with the fragment pipeline: 128x64x16 block, 2x2 warps
// of 64x32 (64 accumulators per thread), 3 stages, two blocks per SM.
template <MathMode M>
struct MmaTileConfig<double, TensorLargeTag, M> : MmaDims<128, 64, 16, 64, 32, 3, 2, 8, true> {};
// 64x64x16 block, 2x2 warps of 32x32 (32 accumulators per thread), the same
// k step and pipeline, 3 stages, three blocks per SM (12 warps; at most 170
// registers per thread). Chained tiles up to k = 64: on 8192x8192x64 the C
// store is most of a tile's time, and issuing the next tile's prologue
// before it took this tile from 0.74 to 0.80 of DGEMM (NN; TN 0.76 ->
// 0.84), ahead of the large tile (0.78 / 0.79), which chaining slowed
// (bench/NOTES-gemm.md, version 7). choose_mma_config takes it for k up to
// its chain_max_k.
template <MathMode M>
struct MmaTileConfig<double, TensorSmallTag, M> : MmaDims<64, 64, 16, 32, 32, 3, 3, 8, true, 64> {};

// complex<double>: four real DMMA products per 16x8 tile on the re/im parts;
// 64x64x8 block, 4 warps of 32x32 (64 complex accumulators per thread, at
// the 255-register limit), 4 stages.
template <MathMode M>
struct MmaTileConfig<cdouble, TensorLargeTag, M> : MmaDims<64, 64, 8, 32, 32, 4, 1> {};
template <MathMode M>
struct MmaTileConfig<cdouble, TensorSmallTag, M> : MmaDims<32, 32, 8, 16, 16, 4, 3> {};
// The split-k tile of complex<double>: 64x64x16, 4 warps of 32x32, 3 stages,
// two blocks per SM. It covers a 64-wide side of a skinny product whole, so
// the long operand streams once, with half the barriers per flop of the
// 64x64x8 large tile.
template <MathMode M>
struct MmaTileConfig<cdouble, TensorSplitTag, M> : MmaDims<64, 64, 16, 32, 32, 3, 2> {};

// float on TF32 mma m16n8k8: 128x128x32 block, 4 warps of 64x64.
template <>
struct MmaTileConfig<float, TensorLargeTag, MathMode::tf32> : MmaDims<128, 128, 32, 64, 64, 3, 1> {};
template <>
struct MmaTileConfig<float, TensorSmallTag, MathMode::tf32> : MmaDims<64, 64, 32, 32, 32, 3, 4> {};
// tf32x3 holds big and small parts of every fragment: warps of 64x32 (up to
// 252 registers). 128x64x32 blocks of 2x2 warps, two per SM, so that one
// block's prologue and epilogue run under the other's main loop: 1.04-1.11
// of SGEMM against 0.97-1.08 for 128x128 blocks of 2x4 warps, one per SM
// (bench/NOTES-gemm.md, version 6).
template <>
struct MmaTileConfig<float, TensorLargeTag, MathMode::tf32x3> : MmaDims<128, 64, 32, 64, 32, 3, 2> {};
template <>
struct MmaTileConfig<float, TensorSmallTag, MathMode::tf32x3> : MmaDims<64, 64, 32, 32, 32, 3, 2> {};

// tf32x3 split-k cuts the large tile (128x64, warps of 64x32) instead of
// the small one (64x64, warps of 32x32) where its tiles cover no more of
// the padded C than the small tiles do: a warp of the large tile loads half
// the A fragments per flop. On 8192x64x8192 the small tile's slices ran at
// 0.92 of SGEMM's main kernel, the large tile's at 1.05 (bench/NOTES-gemm.md,
// version 8). A 64-row C (64x8192x8192), which the large tile would cover
// twice over, runs transposed instead (split_transposed in gemm_mma.cu).
constexpr bool split_on_large_tile(MathMode math, std::int64_t m, std::int64_t n) {
  if (math != MathMode::tf32x3) return false;
  using L = MmaTileConfig<float, TensorLargeTag, MathMode::tf32x3>;
  using S = MmaTileConfig<float, TensorSmallTag, MathMode::tf32x3>;
  const std::int64_t large = (m + L::bm - 1) / L::bm * L::bm * ((n + L::bn - 1) / L::bn * L::bn);
  const std::int64_t small = (m + S::bm - 1) / S::bm * S::bm * ((n + S::bn - 1) / S::bn * S::bn);
  return large <= small;
}

// Float products with m and n both at least this copy operands off the
// 16-byte grid onto it before a tensor-core launch
// (device/gemm_operand_copy.cuh); smaller ones load them on the element
// map. The copy costs about 8 (m + n) k bytes of memory traffic against the
// product's 2 m n k flops, and the element map's cost grows with the
// product: tf32x3 NN with lda, ldb odd (H200, interleaved against SGEMM) ran
// at 1.031 / 0.990 with element map / copies on 2049x2049x511, 1.059 /
// 1.049 on 3073x3073x511, 0.940 / 1.008 on 4095x4097x511
// (bench/NOTES-gemm.md, version 6).
constexpr std::int64_t operand_copy_min_side = 3584;

// Everything the kernel derives from a configuration.
template <class T, class Tag, MathMode M>
struct MmaShape : MmaTileConfig<T, Tag, M> {
  using Cfg = MmaTileConfig<T, Tag, M>;
  static constexpr MathMode math = M;
  static constexpr int warps_m = Cfg::bm / Cfg::wm, warps_n = Cfg::bn / Cfg::wn;
  static constexpr int threads = 32 * warps_m * warps_n;
  static constexpr int mt = Cfg::wm / 16, nt = Cfg::wn / 8;  // mma tiles per warp
  static_assert(Cfg::bm % Cfg::wm == 0 && Cfg::bn % Cfg::wn == 0, "warp grid");
  static_assert(Cfg::wm % 16 == 0 && Cfg::wn % 8 == 0 && Cfg::bk % Cfg::mma_k == 0, "mma tiles");
  static_assert(Cfg::stages >= 2, "pipeline");
};

}  // namespace egpu::kernels

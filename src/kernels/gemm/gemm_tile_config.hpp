// Tile shapes of the tiled SIMT GEMM family, as types: TileConfig<T, Tag>
// for a scalar T and a shape tag (LargeTag, SmallTag, SkinnyTag). Each names
// the block tile (bm x bn, bk deep), the per-thread register micro-tile
// (tm x tn), how the block's warps split the tile (warps_m along m, the
// rest along n) and derives the thread and lane arrangement. Plain C++ so
// host code can read the shapes.
#pragma once

#include "common/complex.hpp"

namespace egpu::kernels {

struct LargeTag {};
struct SmallTag {};
struct SkinnyTag {};  // bm x 64 tiles for one short side (n <= 64 after operand swap)

// The fields every configuration provides (checked by TileShape below).
// WARPS_M: warps along m; each warp owns a (bm / WARPS_M) x (bn / warps_n)
// sub-tile, its lanes a lanes_m x lanes_n grid of micro-tiles inside it.
// FRAG_STAGES: register fragments of A and B in flight (2: step kk+1 is
// read from shared memory while step kk is multiplied; 1: no overlap).
// J_OUTER: order of the rank-1 update, columns outer (true) or rows outer.
template <int BM, int BN, int BK, int TM, int TN, int MIN_BLOCKS, int WARPS_M = 1,
          int FRAG_STAGES = 2, bool J_OUTER = false>
struct TileDims {
  static constexpr int bm = BM, bn = BN, bk = BK;  // block tile
  static constexpr int tm = TM, tn = TN;           // register micro-tile per thread
  static constexpr int min_blocks = MIN_BLOCKS;    // resident blocks per SM (register cap)
  static constexpr int warps_m = WARPS_M;
  static constexpr int frag_stages = FRAG_STAGES;
  static constexpr bool j_outer = J_OUTER;
};

template <class T, class Tag> struct TileConfig;

// fp32: 128x128x8 block, 8x8 outputs per thread, 256 threads, 2 blocks per
// SM, 2x4 warps of 64x32 (each lane 8x8 in 4x4 quadrants), rank-1 update
// with columns outer.
template <> struct TileConfig<float, LargeTag> : TileDims<128, 128, 8, 8, 8, 2, 2, 2, true> {};
// fp64: 128x64x8, 8x4 per thread, 256 threads.
template <> struct TileConfig<double, LargeTag> : TileDims<128, 64, 8, 8, 4, 2> {};
// complex<float>: 128x64x8, 8x4 per thread, 256 threads, 2x4 warps of 64x16,
// one block per SM (no register cap below 255: no spills).
template <> struct TileConfig<cfloat, LargeTag> : TileDims<128, 64, 8, 8, 4, 1, 2> {};
// complex<double> (16 bytes, 4 DFMA per update): 64x64x8, 4x4 per thread, 256 threads.
template <> struct TileConfig<cdouble, LargeTag> : TileDims<64, 64, 8, 4, 4, 2> {};

// Small shapes: 32x32x8 block, 4x4 per thread, 64 threads: four
// times more blocks than the 64-wide tiles and sixteen times more than 128.
template <class T> struct TileConfig<T, SmallTag> : TileDims<32, 32, 8, 4, 4, 1> {};

// One short side: 64 columns. float: a 256 x 64 block tile, 8x8 per thread,
// 4x2 warps of 64x32 (the arithmetic intensity of the large tile). The large
// tile of the 8-byte scalars already is 128 x 64 and complex<double>'s is
// 64 x 64: the device level uses LargeTag for those through SkinnyTileTag.
template <> struct TileConfig<float, SkinnyTag> : TileDims<256, 64, 8, 8, 8, 2, 4> {};
template <class T> struct SkinnyTileTag { using type = LargeTag; };
template <> struct SkinnyTileTag<float> { using type = SkinnyTag; };

// Everything the kernel derives from a configuration.
template <class T, class Tag>
struct TileShape : TileConfig<T, Tag> {
  using Cfg = TileConfig<T, Tag>;
  static constexpr int threads_m = Cfg::bm / Cfg::tm;  // thread grid over the block tile
  static constexpr int threads_n = Cfg::bn / Cfg::tn;
  static constexpr int threads = threads_m * threads_n;
  static constexpr int warps_n = threads / 32 / Cfg::warps_m;
  static constexpr int wm = Cfg::bm / Cfg::warps_m, wn = Cfg::bn / warps_n;  // warp sub-tile
  static constexpr int lanes_m = wm / Cfg::tm, lanes_n = wn / Cfg::tn;
  // Widest shared/global access: 16 bytes, in elements of T.
  static constexpr int vec = sizeof(T) >= 16 ? 1 : int(16 / sizeof(T));

  static_assert(Cfg::bm % Cfg::tm == 0 && Cfg::bn % Cfg::tn == 0, "tile not divisible");
  static_assert(threads % 32 == 0 && threads <= 1024, "thread count");
  static_assert((Cfg::bm * Cfg::bk) % threads == 0 && (Cfg::bn * Cfg::bk) % threads == 0,
                "each thread loads a whole number of elements per tile");
  static_assert(threads / 32 % Cfg::warps_m == 0 && Cfg::bm % Cfg::warps_m == 0 &&
                    Cfg::bn % warps_n == 0 && wm % Cfg::tm == 0 && wn % Cfg::tn == 0 &&
                    lanes_m * lanes_n == 32,
                "warp arrangement");
};

}  // namespace egpu::kernels

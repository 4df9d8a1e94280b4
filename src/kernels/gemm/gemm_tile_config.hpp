// Tile shapes of the tiled GEMM family, as types: TileConfig<T, Tag> for a
// scalar T and a shape tag (LargeTag, SmallTag). Each names the block tile
// (bm x bn, bk deep), the per-thread register micro-tile (tm x tn) and
// derives the thread count. Plain C++ so host code can read the shapes.
#pragma once

#include "common/complex.hpp"

namespace egpu::kernels {

struct LargeTag {};
struct SmallTag {};

// The fields every configuration provides (checked by TileShape below).
template <int BM, int BN, int BK, int TM, int TN, int MIN_BLOCKS>
struct TileDims {
  static constexpr int bm = BM, bn = BN, bk = BK;  // block tile
  static constexpr int tm = TM, tn = TN;           // register micro-tile per thread
  static constexpr int min_blocks = MIN_BLOCKS;    // resident blocks per SM (register cap)
};

template <class T, class Tag> struct TileConfig;

// fp32: 128x128x8 block, 8x8 outputs per thread, 256 threads.
template <> struct TileConfig<float, LargeTag> : TileDims<128, 128, 8, 8, 8, 2> {};
// fp64 and complex<float> (8-byte scalars): 128x64x8, 8x4 per thread, 256 threads.
template <> struct TileConfig<double, LargeTag> : TileDims<128, 64, 8, 8, 4, 2> {};
template <> struct TileConfig<cfloat, LargeTag> : TileDims<128, 64, 8, 8, 4, 2> {};
// complex<double> (16 bytes, 4 DFMA per update): 64x64x8, 4x4 per thread, 256 threads.
template <> struct TileConfig<cdouble, LargeTag> : TileDims<64, 64, 8, 4, 4, 2> {};

// Small / skinny shapes: 32x32x8 block, 4x4 per thread, 64 threads: four
// times more blocks than the 64-wide tiles and sixteen times more than 128.
template <class T> struct TileConfig<T, SmallTag> : TileDims<32, 32, 8, 4, 4, 1> {};

// Everything the kernel derives from a configuration.
template <class T, class Tag>
struct TileShape : TileConfig<T, Tag> {
  using Cfg = TileConfig<T, Tag>;
  static constexpr int threads_m = Cfg::bm / Cfg::tm;  // thread grid over the block tile
  static constexpr int threads_n = Cfg::bn / Cfg::tn;
  static constexpr int threads = threads_m * threads_n;
  // Widest shared/global access: 16 bytes, in elements of T.
  static constexpr int vec = sizeof(T) >= 16 ? 1 : int(16 / sizeof(T));

  static_assert(Cfg::bm % Cfg::tm == 0 && Cfg::bn % Cfg::tn == 0, "tile not divisible");
  static_assert(threads % 32 == 0 && threads <= 1024, "thread count");
  static_assert((Cfg::bm * Cfg::bk) % threads == 0 && (Cfg::bn * Cfg::bk) % threads == 0,
                "each thread loads a whole number of elements per tile");
};

}  // namespace egpu::kernels

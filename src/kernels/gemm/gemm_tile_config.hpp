// Tile shapes of the tiled SIMT GEMM family, as types: TileConfig<T, Tag>
// for a scalar T and a shape tag (LargeTag, MediumTag, SmallTag, SkinnyTag).
// Each names the block tile (bm x bn, bk deep), the per-thread register
// micro-tile (tm x tn), how the block's warps split the tile (warps_m along
// m, the rest along n) and the schedule of the k loop, and derives the
// thread and lane arrangement. Plain C++ so host code can read the shapes.
#pragma once

#include <type_traits>

#include "common/complex.hpp"

namespace egpu::kernels {

struct LargeTag {};
struct SmallTag {};
struct MediumTag {};  // float's 128 x 128 tile beside its 128 x 256 large one
struct SkinnyTag {};  // bm x 64 tiles for one short side (n <= 64 after operand swap)

// Order of the TM x TN FMAs of one rank-1 update acc += a * b^T. The FMAs
// are independent; the order decides which operands an FMA shares with the
// one before it, and so how often the hardware's operand reuse cache can
// stand in for a register-file read.
//   rows_outer: a[i] fixed over a row of b.
//   paired (even TM and TN): 2 x 2 blocks, a pair of b columns outer, pairs
//   of a rows walked forwards and backwards in turn, so that every FMA
//   shares one operand with the one before and the other with the one before
//   that (both multiplicands from the reuse cache, only the accumulator
//   read). ptxas keeps only part of the order it is given
//   (bench/NOTES-gemm.md).
enum class UpdateOrder { rows_outer, paired };

// The fields every configuration provides (checked by TileShape below).
// WARPS_M: warps along m; each warp owns a (bm / WARPS_M) x (bn / warps_n)
// sub-tile, its lanes a lanes_m x lanes_n grid of micro-tiles inside it.
// ORDER: order of the FMAs of one rank-1 update (UpdateOrder below).
// EARLY_HANDOVER: where a stage hands over to the next one's shared buffer
// (kernel/gemm_tiled_kernel.cuh): before its last step, so that the barrier
// and the next stage's first fragment reads hide behind that step's FMAs
// (pays where one block per SM leaves nothing else to run at the barrier),
// or after it (fewer live registers).
// PAIRED_LANES: how lane numbers map onto the lanes_m x lanes_n grid
// (thread/micro_tile.cuh). false: m fastest. true: lane bit 0 and the top
// bits along n, bits 1.. along m, so that lanes 2i and 2i+1 read the same A
// chunk and lanes i and i^2 the same B chunk. A 16-byte shared load whose
// lane pairs read the same address takes two shared-memory cycles instead
// of four: half the fragment traffic for A with the default map.
// STEADY_LOOP: interior tiles run the stages whose successor is whole in a
// loop of their own, with untested global loads (kernel/gemm_tiled_kernel.cuh).
// ASYNC_XC: x-contiguous operands on the 16-byte grid are copied into shared
// memory with cp.async (block/async_xc_tile_loader.cuh) instead of through
// registers; real scalars only.
template <int BM, int BN, int BK, int TM, int TN, int MIN_BLOCKS, int WARPS_M = 1,
          UpdateOrder ORDER = UpdateOrder::rows_outer, bool EARLY_HANDOVER = false,
          bool PAIRED_LANES = false, bool STEADY_LOOP = false, bool ASYNC_XC = false>
struct TileDims {
  static constexpr int bm = BM, bn = BN, bk = BK;  // block tile
  static constexpr int tm = TM, tn = TN;           // register micro-tile per thread
  static constexpr int min_blocks = MIN_BLOCKS;    // resident blocks per SM (register cap)
  static constexpr int warps_m = WARPS_M;
  static constexpr UpdateOrder order = ORDER;
  static constexpr bool early_handover = EARLY_HANDOVER;
  static constexpr bool paired_lanes = PAIRED_LANES;
  static constexpr bool steady_loop = STEADY_LOOP;
  static constexpr bool async_xc = ASYNC_XC;
};

template <class T, class Tag> struct TileConfig;

// fp32: 128x256x8 block, 8x16 outputs per thread, 256 threads, one block
// per SM (no register cap below 255), 2x4 warps of 64x64, paired update
// order, early hand-over, paired lanes, steady-state loop, x-contiguous
// operands copied into shared memory by cp.async. The launch runs it for
// NN (op(A) by cp.async) and LargeLateTag for the other layouts
// (LayoutTile below).
template <> struct TileConfig<float, LargeTag>
    : TileDims<128, 256, 8, 8, 16, 1, 2, UpdateOrder::paired, true, true, true, true> {};
// The large tile with the hand-over after the last step: TN, NT and TT
// (TT's op(B) and both of NT's operands by cp.async; TN has no x-contiguous
// operand).
struct LargeLateTag {};
template <> struct TileConfig<float, LargeLateTag>
    : TileDims<128, 256, 8, 8, 16, 1, 2, UpdateOrder::paired, false, true, true, true> {};

// Layouts whose products the launch runs transposed, C^T = op(B)^T op(A)^T
// on the mirrored layouts, with C stored row by row (element by element),
// where k >= min_k, on the schedule `tile`: float's large tile for NN, whose
// mirror TT runs faster, stores included, at k = 4096 and 8192 (bench/
// NOTES-gemm.md, versions 5 and 11). The row store writes each 32-byte
// sector in pieces; with the stores' share of the time growing as k
// shrinks, 8192x8192x64 ran at half the rate of the plain NN kernel. The
// store also moves ptxas's allocation of the k loop: of the TT schedules
// timed with it, 4x2 warps with the late hand-over and the async copies ran
// best (0.97 / 0.98 of SGEMM at 4096 / 8192), TT's own LargeLateTag 0.95 /
// 0.96.
template <class T, class Tag, bool A_XC, bool B_XC> struct RunTransposed {
  static constexpr bool value = false;
  static constexpr long long min_k = 0;
  using tile = Tag;
};
struct LargeW4LateTag {};
template <> struct TileConfig<float, LargeW4LateTag>
    : TileDims<128, 256, 8, 8, 16, 1, 4, UpdateOrder::paired, false, true, true, true> {};
template <> struct RunTransposed<float, LargeTag, true, false> {
  static constexpr bool value = true;
  static constexpr long long min_k = 4096;
  using tile = LargeW4LateTag;
};

// Layouts whose products the launch runs on another layout's schedule after
// copying op(B) transposed (n-contiguous, row by row), where m >= min_m and
// k >= min_k: float's large tile for TN (both operands k-contiguous), which
// then runs as TT on TT's schedule. The copy moves the k x n
// elements of op(B) once: its share of the product's time falls as 1/m.
// Measured on the H100 (bench/NOTES-gemm.md, version 10), copy included:
// +1.3 to +2.1 % at m = 4096 and 8192 for k from 1024 to 8192, none at
// m = 2048.
template <class T, class Tag, bool A_XC, bool B_XC> struct CopyBTransposed {
  static constexpr bool value = false;
  static constexpr long long min_m = 0, min_k = 0;
};
template <> struct CopyBTransposed<float, LargeTag, false, false> {
  static constexpr bool value = true;
  static constexpr long long min_m = 4096, min_k = 1024;
};

// fp32 medium: 128x128x16, 8x8 per thread, one block per SM, 2x4 warps of
// 64x32, paired update order, early hand-over, paired lanes, steady loop,
// operands through registers: TN and operands off the 16-byte grid.
// MediumLateTag (the hand-over after the last step, x-contiguous operands
// by cp.async) for the other layouts (LayoutTile).
// Its rate relative to the large tile on whole waves (bench/NOTES-gemm.md)
// weighs it against the large tile's last-wave fill in the automatic choice.
template <> struct TileConfig<float, MediumTag>
    : TileDims<128, 128, 16, 8, 8, 1, 2, UpdateOrder::paired, true, true, true> {
  static constexpr double relative_rate = 0.93;
};
struct MediumLateTag {};
template <> struct TileConfig<float, MediumLateTag>
    : TileDims<128, 128, 16, 8, 8, 1, 2, UpdateOrder::paired, false, true, true, true> {};
// The tile GemmConfig::medium runs: the large one but for float.
template <class T> struct MediumTileTag { using type = LargeTag; };
template <> struct MediumTileTag<float> { using type = MediumTag; };

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

// One short side: 64 columns. float: a 256 x 64 block tile, 16 deep, 8x8 per
// thread, 4x2 warps of 64x32 (the arithmetic intensity of the large tile),
// one block per SM with the large tile's schedule (paired order, early
// hand-over, paired lanes, steady loop). The large tile of the 8-byte scalars
// already is 128 x 64 and complex<double>'s is 64 x 64: the device level uses
// LargeTag for those through SkinnyTileTag.
template <> struct TileConfig<float, SkinnyTag>
    : TileDims<256, 64, 16, 8, 8, 1, 4, UpdateOrder::paired, true, true, true> {};
// The skinny tile with op(A) (and an x-contiguous op(B)) by cp.async, for the
// layouts with an x-contiguous op(A) (LayoutTile).
struct SkinnyAsyncTag {};
template <> struct TileConfig<float, SkinnyAsyncTag>
    : TileDims<256, 64, 16, 8, 8, 1, 4, UpdateOrder::paired, true, true, true, true> {};
template <class T> struct SkinnyTileTag { using type = LargeTag; };
template <> struct SkinnyTileTag<float> { using type = SkinnyTag; };

// The configuration a tag runs for one pair of operand layouts (A_XC, B_XC:
// operand x-contiguous, kernel/gemm_tiled_kernel.cuh) and load map (VEC:
// the 16-byte path, the only one with async copies): the tag's own but for
// float's tiles, whose schedules were timed per layout (bench/NOTES-gemm.md,
// versions 3 and 11), each with the copies by cp.async against the register
// path. Large: LargeTag for NN, LargeLateTag for the others (NT 8192 0.92
// -> 0.96 of SGEMM, TT 0.98 -> 1.00). Medium: MediumLateTag where an
// operand is x-contiguous and on the grid (NN 0.91 -> 0.95, NT 0.92 -> 1.06
// at 1024x2048x4096); off the grid it keeps its early hand-over
// (4095x4097x511 NN ran 1 % slower on the late one). Skinny: the async
// copies where op(A) is x-contiguous (8192x64x8192 NN 0.87 -> 0.92, NT 0.91
// -> 1.05); with op(B) alone (64x8192x8192 NN, run swapped as TT) they lost
// 3 %.
template <class T, class Tag, bool A_XC, bool B_XC, bool VEC = true> struct LayoutTile { using type = Tag; };
template <bool A_XC, bool B_XC, bool VEC> struct LayoutTile<float, LargeTag, A_XC, B_XC, VEC> {
  using type = std::conditional_t<A_XC && !B_XC, LargeTag, LargeLateTag>;
};
template <bool A_XC, bool B_XC, bool VEC> struct LayoutTile<float, MediumTag, A_XC, B_XC, VEC> {
  using type = std::conditional_t<VEC && (A_XC || B_XC), MediumLateTag, MediumTag>;
};
template <bool B_XC, bool VEC> struct LayoutTile<float, SkinnyTag, true, B_XC, VEC> { using type = SkinnyAsyncTag; };

constexpr int cmin(int a, int b) { return a < b ? a : b; }

// Elements of T in one 16-byte vector, the widest global and shared access
// (1 for the 16-byte complex<double>).
template <class T>
inline constexpr int vector_elems = sizeof(T) >= 16 ? 1 : int(16 / sizeof(T));

// Elements of T per global load of an operand tile's 16-byte path
// (block::TileLoader), for a tile bx wide and bk deep moved by `threads`
// threads: at most 16 bytes, a thread's share of the tile and the depth.
template <class T>
constexpr int tile_load_vector(int bx, int bk, int threads) {
  return cmin(cmin(vector_elems<T>, bx * bk / threads), bk);
}

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
  static constexpr int vec = vector_elems<T>;  // widest shared/global access
  // Vector widths of the 16-byte global-load path for op(A) and op(B).
  static constexpr int vec_a = tile_load_vector<T>(Cfg::bm, Cfg::bk, threads);
  static constexpr int vec_b = tile_load_vector<T>(Cfg::bn, Cfg::bk, threads);

  static_assert(Cfg::bm % Cfg::tm == 0 && Cfg::bn % Cfg::tn == 0, "tile not divisible");
  static_assert(threads % 32 == 0 && threads <= 1024, "thread count");
  static_assert((Cfg::bm * Cfg::bk) % threads == 0 && (Cfg::bn * Cfg::bk) % threads == 0,
                "each thread loads a whole number of elements per tile");
  static_assert(threads / 32 % Cfg::warps_m == 0 && Cfg::bm % Cfg::warps_m == 0 &&
                    Cfg::bn % warps_n == 0 && wm % Cfg::tm == 0 && wn % Cfg::tn == 0 &&
                    lanes_m * lanes_n == 32,
                "warp arrangement");
  static_assert(!Cfg::paired_lanes || (lanes_m >= 2 && lanes_n >= 2), "paired lanes need a 2x2 grid");
};

}  // namespace egpu::kernels

// Stream-K for the tiled GEMM family: how the blocks of one launch share
// out the tiles of C when their count leaves the last wave part empty.
//
// With one block per tile, `tiles` blocks on `slots` resident block slots
// run in ceil(tiles / slots) waves, and the last one keeps only
// tiles % slots slots busy: 512 tiles of 128 x 256 on 132 multiprocessors
// (4096^2) take four waves for 3.88 waves of work. Stream-K runs the first
// `dp_tiles` tiles in raster order one block each, whole waves of them,
// and gives `ctas` more blocks (one per slot) equal shares of the k
// iterations of the last `sk_tiles` tiles, each share a contiguous run that
// may start and end inside a tile. A tile shared by several blocks is
// summed by the last of them to finish (kernel/
// gemm_tiled_stream_k_kernel.cuh).
//
// Plain C++: the launcher calls it, the CPU tests check it.
#pragma once

#include <cstdint>

namespace egpu::kernels {

struct StreamKPlan {
  int ctas = 0;               // blocks sharing the last sk_tiles (0: no stream-K)
  std::int64_t dp_tiles = 0;  // tiles [0, dp_tiles) in raster order, one block each
  std::int64_t sk_tiles = 0;  // tiles [dp_tiles, dp_tiles + sk_tiles), shared
  std::int64_t iters = 0;     // k iterations (one bk-deep stage each) per tile
  constexpr bool active() const { return ctas > 0; }

  // First k iteration of share b, counted from the first shared tile
  // (b = ctas gives the end of the last share).
  constexpr std::int64_t share_begin(std::int64_t b) const { return b * (sk_tiles * iters) / ctas; }
  // The share that holds iteration `it` (counted likewise): the largest b with
  // share_begin(b) <= it.
  constexpr std::int64_t owner(std::int64_t it) const { return ((it + 1) * ctas - 1) / (sk_tiles * iters); }
};

// Shortest share, in k iterations, a block is given: below it the share's
// fixed costs (pipeline start, a partial tile written and read back) weigh
// against its k loop. 128 stages of bk = 8 are 1024 deep.
inline constexpr std::int64_t stream_k_min_share = 128;

// Least share of the slots the last wave would leave empty for stream-K to
// be worth its partial tiles.
inline constexpr double stream_k_min_loss = 0.01;

// Plan for `tiles` tiles of `iters` k iterations each on `slots` resident
// block slots. No stream-K (ctas = 0) when the tiles fill whole waves (or
// nearly), fill less than one (the split-k path serves those), or when the
// shares would be shorter than stream_k_min_share. Otherwise the shared
// tiles are the last wave's (tiles % slots), or one wave more where those
// are fewer than half the slots (each block then gets at least half a
// tile, so that no tile is cut into more than three shares).
inline StreamKPlan plan_stream_k(std::int64_t tiles, std::int64_t iters, std::int64_t slots) {
  StreamKPlan plan;
  if (tiles <= slots || slots <= 0 || iters <= 0) return plan;
  const std::int64_t rest = tiles % slots;
  if (rest == 0) return plan;
  const std::int64_t waves = (tiles + slots - 1) / slots;
  if (1.0 - double(tiles) / double(waves * slots) < stream_k_min_loss) return plan;
  const std::int64_t shared = 2 * rest >= slots ? rest : rest + slots;
  if (shared * iters / slots < stream_k_min_share) return plan;
  plan.ctas = int(slots);
  plan.sk_tiles = shared;
  plan.dp_tiles = tiles - shared;
  plan.iters = iters;
  return plan;
}

}  // namespace egpu::kernels

// The GEMM kernel family's stream-K plan (kernels/gemm/stream_k_plan.hpp),
// on the CPU: when it applies, which tiles it shares, and that the shares
// partition the shared tiles' k iterations the way the kernel relies on
// (every iteration owned by exactly one block, at most three shares per
// tile, at most two partial tiles per block, one partial slot per pair).
#define BOOST_TEST_MODULE gemm_plan
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <random>
#include <set>
#include <utility>

#include "kernels/gemm/stream_k_plan.hpp"

using egpu::kernels::plan_stream_k;
using egpu::kernels::StreamKPlan;

namespace {

// Walks the plan as the kernel does and checks what the kernel assumes.
void check_partition(const StreamKPlan& p) {
  const std::int64_t total = p.sk_tiles * p.iters;
  BOOST_TEST(p.share_begin(0) == 0);
  BOOST_TEST(p.share_begin(p.ctas) == total);
  std::set<std::pair<std::int64_t, int>> slots;  // (block, slot) of each partial
  for (std::int64_t b = 0; b < p.ctas; ++b) {
    const std::int64_t begin = p.share_begin(b), end = p.share_begin(b + 1);
    BOOST_TEST_REQUIRE(end - begin >= egpu::kernels::stream_k_min_share);
    BOOST_TEST(p.owner(begin) == b);
    BOOST_TEST(p.owner(end - 1) == b);
    int partial_tiles = 0;
    for (std::int64_t it = begin; it < end;) {
      const std::int64_t tile = it / p.iters, tile_begin = tile * p.iters;
      const std::int64_t seg_end = std::min(end, tile_begin + p.iters);
      if (it != tile_begin || seg_end != tile_begin + p.iters) {
        ++partial_tiles;
        const int slot = tile == begin / p.iters ? 0 : 1;
        BOOST_TEST(slots.insert({b, slot}).second, "block " << b << " slot " << slot << " used twice");
      }
      it = seg_end;
    }
    BOOST_TEST(partial_tiles <= 2);
  }
  for (std::int64_t t = 0; t < p.sk_tiles; ++t) {
    const std::int64_t first = p.owner(t * p.iters), last = p.owner((t + 1) * p.iters - 1);
    BOOST_TEST(last >= first);
    BOOST_TEST(last - first + 1 <= 3, "tile " << t << " cut into " << last - first + 1 << " shares");
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(stream_k_plan)

BOOST_AUTO_TEST_CASE(whole_waves_and_single_waves_run_plain) {
  BOOST_TEST(!plan_stream_k(528, 512, 132).active());   // 4224 x 4096: four whole waves
  BOOST_TEST(!plan_stream_k(132, 512, 132).active());   // one whole wave
  BOOST_TEST(!plan_stream_k(100, 512, 132).active());   // less than a wave: split-k's
  BOOST_TEST(!plan_stream_k(0, 512, 132).active());
  BOOST_TEST(!plan_stream_k(500, 0, 132).active());     // k = 0
  BOOST_TEST(!plan_stream_k(500, 512, 0).active());     // no device
  // The last of 102 waves 131/132 full: under 1 % lost.
  BOOST_TEST(!plan_stream_k(101 * 132 + 131, 512, 132).active());
}

BOOST_AUTO_TEST_CASE(last_wave_shared) {
  // 4096^2 of 128 x 256 tiles: 116 tiles in the last wave, at least half of
  // the slots: those are shared, the first 396 run whole.
  const StreamKPlan p = plan_stream_k(512, 512, 132);
  BOOST_TEST_REQUIRE(p.active());
  BOOST_TEST(p.ctas == 132);
  BOOST_TEST(p.sk_tiles == 116);
  BOOST_TEST(p.dp_tiles == 396);
  BOOST_TEST(p.iters == 512);
  check_partition(p);
  // 8192^2: 68 of 132.
  const StreamKPlan q = plan_stream_k(2048, 1024, 132);
  BOOST_TEST_REQUIRE(q.active());
  BOOST_TEST(q.sk_tiles == 68);
  BOOST_TEST(q.dp_tiles == 1980);
  check_partition(q);
}

BOOST_AUTO_TEST_CASE(small_last_wave_takes_one_more) {
  // 8 tiles in the last wave: one whole wave more is shared with them.
  const StreamKPlan p = plan_stream_k(140, 512, 132);
  BOOST_TEST_REQUIRE(p.active());
  BOOST_TEST(p.sk_tiles == 140);
  BOOST_TEST(p.dp_tiles == 0);
  check_partition(p);
  const StreamKPlan q = plan_stream_k(3 * 132 + 20, 300, 132);
  BOOST_TEST_REQUIRE(q.active());
  BOOST_TEST(q.sk_tiles == 152);
  BOOST_TEST(q.dp_tiles == 264);
  check_partition(q);
}

BOOST_AUTO_TEST_CASE(short_shares_run_plain) {
  // 116 shared tiles of 64 iterations (k = 512 at bk = 8) on 132 blocks:
  // 56 iterations each, under the minimum share.
  BOOST_TEST(!plan_stream_k(512, 64, 132).active());
  BOOST_TEST(plan_stream_k(512, 146, 132).active());  // 128 each
  BOOST_TEST(!plan_stream_k(512, 145, 132).active());
}

BOOST_AUTO_TEST_CASE(random_plans_partition_the_shared_tiles) {
  std::mt19937_64 gen(20261122);
  int checked = 0;
  for (int i = 0; i < 400; ++i) {
    const std::int64_t slots = std::uniform_int_distribution<std::int64_t>(1, 300)(gen);
    const std::int64_t tiles = std::uniform_int_distribution<std::int64_t>(1, 12 * slots)(gen);
    const std::int64_t iters = std::uniform_int_distribution<std::int64_t>(1, 3000)(gen);
    const StreamKPlan p = plan_stream_k(tiles, iters, slots);
    if (!p.active()) continue;
    ++checked;
    BOOST_TEST(p.sk_tiles + p.dp_tiles == tiles);
    BOOST_TEST(p.dp_tiles % slots == 0, "the whole tiles fill whole waves");
    BOOST_TEST(2 * p.sk_tiles >= slots);
    check_partition(p);
  }
  BOOST_TEST(checked > 100);
}

BOOST_AUTO_TEST_SUITE_END()

// The tiled family's automatic choice and the rewrites of a plain product
// (src/kernels/gemm/gemm_tiled_choice.hpp), pure C++: which configuration a
// shape gets, which products run transposed (NN) or on a transposed copy of
// op(B) (TN), and that the large tile's tiles are counted on the problem as
// it runs. Operand pointers are never dereferenced here: only their
// alignment is read, so they are made from integers.
#define BOOST_TEST_MODULE gemm_choice
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <ostream>

#include "kernels/gemm/gemm_split_k_plan.hpp"
#include "kernels/gemm/gemm_tiled_choice.hpp"

namespace egpu::kernels {
// For Boost.Test's messages (config_name lives in the CUDA library).
std::ostream& boost_test_print_type(std::ostream& os, GemmConfig c) { return os << "GemmConfig " << int(c); }
}  // namespace egpu::kernels

namespace kern = egpu::kernels;
namespace dev = egpu::kernels::device;
using kern::GemmArgs;
using kern::GemmConfig;
using kern::Layout;

namespace {

constexpr int kSms = 132;  // H100 SXM / H200

// A float product with tight leading dimensions on 256-byte aligned bases;
// `off`: elements added to every base (off the 16-byte grid when odd).
GemmArgs<float> product(std::int64_t m, std::int64_t n, std::int64_t k, Layout la, Layout lb,
                        std::int64_t off = 0) {
  auto at = [off](std::uintptr_t base) { return reinterpret_cast<float*>(base) + off; };
  GemmArgs<float> g;
  g.m = m;
  g.n = n;
  g.k = k;
  g.a = at(0x10000);
  g.a_layout = la;
  g.lda = la == Layout::col_major ? m : k;
  g.b = at(0x20000);
  g.b_layout = lb;
  g.ldb = lb == Layout::col_major ? k : n;
  g.c = at(0x30000);
  g.ldc = m;
  return g;
}

const Layout C = Layout::col_major, R = Layout::row_major;

template <class Tag>
bool nn_transposed(const GemmArgs<float>& g) {
  return dev::nn_runs_transposed<float, Tag>(g);
}
template <class Tag>
bool tn_on_b_copy(const GemmArgs<float>& g) {
  return dev::tn_runs_on_b_copy<float, Tag>(g);
}

}  // namespace

BOOST_AUTO_TEST_CASE(nn_runs_transposed_from_k_4096_on_the_grid) {
  using L = kern::LargeTag;
  BOOST_TEST(nn_transposed<L>(product(4096, 4096, 4096, C, C)));
  BOOST_TEST(!nn_transposed<L>(product(4096, 4096, 4095, C, C)));  // too shallow
  BOOST_TEST(!nn_transposed<L>(product(4096, 4096, 4096, C, C, 1)));  // off the grid
  GemmArgs<float> odd_ld = product(4096, 4096, 4096, C, C);
  odd_ld.lda = 4097;
  BOOST_TEST(!nn_transposed<L>(odd_ld));
  for (Layout la : {C, R})
    for (Layout lb : {C, R})
      if (la != C || lb != C) BOOST_TEST(!nn_transposed<L>(product(4096, 4096, 4096, la, lb)));
  // Only float's large tile has the path.
  BOOST_TEST(!nn_transposed<kern::MediumTag>(product(4096, 4096, 4096, C, C)));
  GemmArgs<double> d;
  d.m = d.n = d.k = d.lda = d.ldb = d.ldc = 4096;
  const bool double_transposed = dev::nn_runs_transposed<double, L>(d);
  BOOST_TEST(!double_transposed);
}

BOOST_AUTO_TEST_CASE(tn_runs_on_a_copy_of_b_from_m_4096_and_k_1024) {
  using L = kern::LargeTag;
  BOOST_TEST(tn_on_b_copy<L>(product(4096, 4096, 4096, R, C)));
  BOOST_TEST(tn_on_b_copy<L>(product(4096, 4096, 1024, R, C)));
  BOOST_TEST(tn_on_b_copy<L>(product(8192, 1, 5000, R, C)));  // n plays no part
  BOOST_TEST(!tn_on_b_copy<L>(product(4095, 4096, 4096, R, C)));  // m too small
  BOOST_TEST(!tn_on_b_copy<L>(product(4096, 4096, 1023, R, C)));  // k too small
  // op(A) off the grid: the TT kernel would load it element by element.
  BOOST_TEST(!tn_on_b_copy<L>(product(4096, 4096, 4096, R, C, 1)));
  GemmArgs<float> odd_lda = product(4096, 4096, 4096, R, C);
  odd_lda.lda = 4097;
  BOOST_TEST(!tn_on_b_copy<L>(odd_lda));
  // op(B) off the grid is copied onto it: still taken.
  GemmArgs<float> odd_ldb = product(4096, 4096, 4096, R, C);
  odd_ldb.ldb = 4097;
  BOOST_TEST(tn_on_b_copy<L>(odd_ldb));
  for (Layout la : {C, R})
    for (Layout lb : {C, R})
      if (la != R || lb != C) BOOST_TEST(!tn_on_b_copy<L>(product(4096, 4096, 4096, la, lb)));
  BOOST_TEST(!tn_on_b_copy<kern::MediumTag>(product(4096, 4096, 4096, R, C)));
  BOOST_TEST(!tn_on_b_copy<kern::SmallTag>(product(4096, 4096, 4096, R, C)));
}

BOOST_AUTO_TEST_CASE(wave_fill_counts_the_last_wave) {
  BOOST_TEST(dev::wave_fill(512, 132) == 512.0 / 528.0);
  BOOST_TEST(dev::wave_fill(528, 132) == 1.0);
  BOOST_TEST(dev::wave_fill(133, 132) == 133.0 / 264.0);
  BOOST_TEST(dev::wave_fill(0, 132) == 0.0);
}

BOOST_AUTO_TEST_CASE(square_products_take_the_large_tile) {
  for (std::int64_t n : {4096, 8192})
    for (Layout la : {C, R})
      for (Layout lb : {C, R})
        BOOST_TEST(dev::choose_tiled_config(product(n, n, n, la, lb), kSms) == GemmConfig::large,
                   n << " " << int(la) << int(lb));
}

// 4096 x 4224: 32 x 17 = 544 large tiles on C as given (a thin fifth wave),
// 33 x 16 = 528 (four whole waves) on the transposed problem. Deep NN runs
// transposed, so it keeps the large tile; NN at k = 1024, or off the grid,
// and TN run as given and take medium (1056 tiles, eight whole waves).
BOOST_AUTO_TEST_CASE(large_tiles_are_counted_as_the_product_runs) {
  BOOST_TEST(dev::choose_tiled_config(product(4096, 4224, 4096, C, C), kSms) == GemmConfig::large);
  BOOST_TEST(dev::choose_tiled_config(product(4096, 4224, 1024, C, C), kSms) == GemmConfig::medium);
  BOOST_TEST(dev::choose_tiled_config(product(4096, 4224, 4096, C, C, 1), kSms) == GemmConfig::medium);
  BOOST_TEST(dev::choose_tiled_config(product(4096, 4224, 4096, R, C), kSms) == GemmConfig::medium);
  // The reverse: 33 x 16 = 528 as given, 32 x 17 = 544 transposed.
  BOOST_TEST(dev::choose_tiled_config(product(4224, 4096, 4096, C, C), kSms) == GemmConfig::medium);
  BOOST_TEST(dev::choose_tiled_config(product(4224, 4096, 4096, R, C), kSms) == GemmConfig::large);
  // 4095 x 4097: large 32 x 17 = 544 tiles, medium 32 x 33 = 1056.
  BOOST_TEST(dev::choose_tiled_config(product(4095, 4097, 511, C, C), kSms) == GemmConfig::medium);
}

// Fewer large tiles than multiprocessors: the large or the medium tile while
// one of them fills at least min_tile_fill of a wave, else split_k (k from
// 512) or small.
BOOST_AUTO_TEST_CASE(one_wave_takes_a_tile_while_it_is_full_enough) {
  // 16 x 8 = 128 large tiles (0.97 of a wave) against 256 medium (two waves).
  BOOST_TEST(dev::choose_tiled_config(product(2048, 2048, 2048, C, C), kSms) == GemmConfig::large);
  BOOST_TEST(dev::choose_tiled_config(product(2048, 2048, 1024, R, C), kSms) == GemmConfig::large);
  // Transposed (NN, k = 4096): 16 x 6 = 96 large tiles (0.73); medium 12 x 16 = 192 (0.73 x 0.93).
  BOOST_TEST(dev::choose_tiled_config(product(1536, 2048, 4096, C, C), kSms) == GemmConfig::large);
  // 2048 x 1024 as run: 16 x 4 = 64 large tiles (0.48); medium 8 x 16 = 128 (0.97 x 0.93).
  BOOST_TEST(dev::choose_tiled_config(product(1024, 2048, 4096, C, C), kSms) == GemmConfig::medium);
  // Both below min_tile_fill.
  BOOST_TEST(dev::choose_tiled_config(product(8192, 64, 8192, C, C), kSms) == GemmConfig::split_k);
  BOOST_TEST(dev::choose_tiled_config(product(64, 8192, 8192, C, C), kSms) == GemmConfig::split_k);
  BOOST_TEST(dev::choose_tiled_config(product(300, 300, 512, C, C), kSms) == GemmConfig::split_k);
  BOOST_TEST(dev::choose_tiled_config(product(300, 300, 511, C, C), kSms) == GemmConfig::small);
  BOOST_TEST(dev::choose_tiled_config(product(1, 1, 1, C, C), kSms) == GemmConfig::small);
  // The fills are taken against the multiprocessors: 4 x 2 = 8 large tiles,
  // 4 x 4 = 16 medium ones.
  BOOST_TEST(dev::choose_tiled_config(product(512, 512, 64, C, C), 8) == GemmConfig::large);
  BOOST_TEST(dev::choose_tiled_config(product(512, 512, 64, C, C), 11) == GemmConfig::large);  // 0.73
  BOOST_TEST(dev::choose_tiled_config(product(512, 512, 64, C, C), 12) == GemmConfig::small);  // 0.67
}

BOOST_AUTO_TEST_CASE(tile_coverage_counts_the_tiles_inside_the_product) {
  BOOST_TEST(dev::tile_coverage(4096, 4096, 128, 256) == 1.0);
  BOOST_TEST(dev::tile_coverage(64, 8192, 128, 64) == 0.5);
  BOOST_TEST(dev::tile_coverage(4095, 4097, 128, 256) == (4095.0 / 4096.0) * (4097.0 / 4352.0));
}

// complex<float>'s large tile is 128 x 64: 128 tiles (0.97 of a wave) on
// 64 x 8192, each half outside C, take split_k (which runs the product with
// the short side along n); on 128 x 8192 the same tiles lie wholly inside.
BOOST_AUTO_TEST_CASE(partial_tiles_count_against_a_tile) {
  auto cproduct = [](std::int64_t m, std::int64_t n, std::int64_t k) {
    GemmArgs<kern::cfloat> g;
    g.m = m;
    g.n = n;
    g.k = k;
    g.lda = g.ldc = m;
    g.ldb = k;
    return g;
  };
  BOOST_TEST(dev::choose_tiled_config(cproduct(64, 8192, 8192), kSms) == GemmConfig::split_k);
  BOOST_TEST(dev::choose_tiled_config(cproduct(128, 8192, 8192), kSms) == GemmConfig::large);
  BOOST_TEST(dev::choose_tiled_config(cproduct(8192, 64, 8192), kSms) == GemmConfig::split_k);
}

BOOST_AUTO_TEST_CASE(scalars_without_a_medium_tile_keep_the_large_one) {
  static_assert(dev::has_medium_tile<float>);
  static_assert(!dev::has_medium_tile<double>);
  static_assert(!dev::has_medium_tile<kern::cfloat>);
  GemmArgs<double> d;
  d.m = 4095;
  d.n = 4097;
  d.k = 511;
  d.lda = d.ldc = 4095;
  d.ldb = 511;
  BOOST_TEST(dev::choose_tiled_config(d, kSms) == GemmConfig::large);
}

// Split-k on float's medium tile where both sides of C reach its width and
// it covers C as well as the skinny tile, else on the skinny tile; other
// scalars have no medium tile.
BOOST_AUTO_TEST_CASE(split_k_takes_the_medium_tile_on_two_wide_sides) {
  BOOST_TEST(dev::splits_on_medium_tile(product(2048, 256, 2048, C, C)));
  BOOST_TEST(dev::splits_on_medium_tile(product(128, 4096, 4096, C, C)));
  BOOST_TEST(!dev::splits_on_medium_tile(product(4096, 127, 4096, C, C)));
  BOOST_TEST(!dev::splits_on_medium_tile(product(64, 8192, 8192, C, C)));
  // 1000 x 300: the medium tile covers 0.76 of C, the skinny one 0.92.
  BOOST_TEST(!dev::splits_on_medium_tile(product(1000, 300, 5000, C, C)));
  BOOST_TEST(!dev::splits_on_medium_tile(product(300, 1000, 5000, C, C)));
  BOOST_TEST(dev::splits_on_medium_tile(product(1000, 384, 5000, C, C)));
  GemmArgs<double> d;
  d.m = d.n = 2048;
  BOOST_TEST(!dev::splits_on_medium_tile(d));
  static_assert(dev::tiled_slice_rule<float> == dev::SliceRule::filled_waves);
  static_assert(dev::tiled_slice_rule<kern::cfloat> == dev::SliceRule::one_wave);
}

// The slice count of filled_waves: the fill of the block slots over the
// waves, each slice weighed by its depth; one_wave: one wave at most.
// Medium tile 128 x 128 x 16, 132 SMs, one block each.
BOOST_AUTO_TEST_CASE(split_k_counts_slices_by_the_fill_of_their_waves) {
  auto count = [](std::int64_t m, std::int64_t n, std::int64_t k, int bm = 128, int bn = 128,
                  dev::SliceRule rule = dev::SliceRule::filled_waves) {
    return dev::plan_split_k(m, n, k, bm, bn, 16, kSms, 1, rule).count;
  };
  BOOST_TEST(count(3072, 256, 3072) == 8);  // 48 tiles: 384 blocks (2.9 waves), not 96 in 2 slices
  BOOST_TEST(count(2048, 256, 2048) == 4);  // 32 tiles: 128 blocks (0.97 of a wave)
  BOOST_TEST(count(1024, 256, 1024) == 8);  // 16 tiles, slices 128 deep
  BOOST_TEST(count(4096, 256, 4096) == 2);  // 64 tiles
  BOOST_TEST(count(8192, 64, 8192, 256, 64) == 4);  // the skinny tile: 32 tiles
  BOOST_TEST(count(4096, 4096, 4096) == 1);  // 1024 tiles need no slices
  BOOST_TEST(count(300, 300, 255) == 1);     // too shallow for two slices of 128
  BOOST_TEST(count(1, 1, 1 << 20, 32, 32) == 64);  // at most 64
  const auto one_wave = dev::SliceRule::one_wave;
  BOOST_TEST(count(3072, 256, 3072, 128, 128, one_wave) == 2);   // 132 / 48 tiles
  BOOST_TEST(count(1024, 256, 1024, 128, 128, one_wave) == 4);   // slices at least 256 deep
  BOOST_TEST(count(4096, 4096, 4096, 128, 128, one_wave) == 1);
  // Every plan covers k once, in slices of whole stages at least as deep as
  // the rule's minimum (the last may be shorter).
  for (auto rule : {dev::SliceRule::one_wave, dev::SliceRule::filled_waves})
    for (std::int64_t m : {1, 100, 1000, 3000})
      for (std::int64_t k : {256, 300, 1000, 4099, 20000}) {
        const dev::KSlices s = dev::plan_split_k(m, 256, k, 128, 128, 16, kSms, 1, rule);
        if (s.count < 2) continue;
        BOOST_TEST(s.count <= 64);
        BOOST_TEST(s.k_slice % 16 == 0);
        BOOST_TEST(s.k_slice >= (rule == one_wave ? 256 : 128));
        BOOST_TEST(s.k_slice * s.count >= k);
        BOOST_TEST(s.k_slice * (s.count - 1) < k);
        BOOST_TEST(s.c_slice == m * 256);
      }
}

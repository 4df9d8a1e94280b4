// The GEMM planner (src/planner), pure C++: for random problems and device
// budgets, every element of C is covered by exactly one tile, the k-panels
// of each C tile cover [0, k) once and in order, the tiles fit the budget,
// the byte counts match the steps, and uploads are skipped only when the
// piece is already on the device from the step before.
#define BOOST_TEST_MODULE planner
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "egpu/error.hpp"
#include "planner/gemm_plan.hpp"

using egpu::planner::GemmPlan;
using egpu::planner::GemmProblem;
using egpu::planner::GemmStep;
using egpu::planner::for_each_step;
using egpu::planner::plan_gemm;

namespace {

std::mt19937_64& rng() {
  static std::mt19937_64 g(std::random_device{}());
  return g;
}
std::int64_t uniform(std::int64_t lo, std::int64_t hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng()); }

std::int64_t random_dim() {
  switch (uniform(0, 5)) {
    case 0: return uniform(1, 4);
    case 1: return uniform(1, 200);
    case 2: return uniform(100, 3000);
    case 3: return 128 * uniform(1, 40) + uniform(-1, 1);  // around the granule
    case 4: return uniform(3000, 60000);
    default: return uniform(1, 1000);
  }
}

std::string describe(const GemmProblem& p, std::int64_t budget) {
  std::ostringstream s;
  s << "m=" << p.m << " n=" << p.n << " k=" << p.k << " elem=" << p.elem_size << " reads_c=" << p.reads_c
    << " budget=" << budget;
  return s.str();
}

// Checks intervals [start, start+len) partition [0, total): sorted, no gap, no overlap.
bool partitions(std::vector<std::pair<std::int64_t, std::int64_t>> iv, std::int64_t total) {
  std::sort(iv.begin(), iv.end());
  std::int64_t at = 0;
  for (const auto& [start, len] : iv) {
    if (start != at || len <= 0) return false;
    at += len;
  }
  return at == total;
}

// All the invariants of one plan. Returns false (after BOOST_TEST reports)
// on the first broken one, so that one bad plan does not flood the log.
bool check_plan(const GemmProblem& p, std::int64_t budget, const GemmPlan& plan) {
  const std::string what = describe(p, budget);
  const std::int64_t e = p.elem_size;
  bool ok = true;
  auto expect = [&](bool cond, const std::string& msg) {
    if (!cond && ok) BOOST_TEST(cond, what << ": " << msg);
    ok = ok && cond;
  };
  expect(plan.mb > 0 && plan.nb > 0 && plan.kb > 0, "tile sizes are positive");
  expect(plan.problem.m == p.m && plan.problem.n == p.n && plan.problem.k == p.k &&
             plan.problem.elem_size == p.elem_size && plan.problem.reads_c == p.reads_c,
         "plan.problem is the problem");
  const std::int64_t dev = (plan.mb * plan.kb + plan.kb * plan.nb + plan.mb * plan.nb) * e;
  expect(dev <= budget, "tiles need " + std::to_string(dev) + " bytes, over the budget");
  expect(dev == plan.device_bytes, "device_bytes " + std::to_string(plan.device_bytes) + " != " + std::to_string(dev));
  if (!ok) return false;

  // Walk the steps.
  std::int64_t steps = 0, h2d = 0, d2h = 0;
  std::vector<GemmStep> all;
  for_each_step(plan, [&](const GemmStep& s) {
    ++steps;
    all.push_back(s);
    if (s.upload_a) h2d += s.mi * s.kp * e;
    if (s.upload_b) h2d += s.kp * s.nj * e;
    if (s.upload_c) h2d += s.mi * s.nj * e;
    if (s.last_k) d2h += s.mi * s.nj * e;
  });
  expect(steps == plan.steps, "plan.steps " + std::to_string(plan.steps) + " != " + std::to_string(steps) + " steps");
  expect(h2d == plan.h2d_bytes, "h2d_bytes " + std::to_string(plan.h2d_bytes) + " != " + std::to_string(h2d));
  expect(d2h == plan.d2h_bytes, "d2h_bytes " + std::to_string(plan.d2h_bytes) + " != " + std::to_string(d2h));
  expect(d2h == p.m * p.n * e, "every C element comes back exactly once");

  // Per C tile: its k-panels, in order. Tiles in bounds and within the tile sizes.
  using Tile = std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t>;  // i0, mi, j0, nj
  std::map<Tile, std::int64_t> next_k;  // next expected p0 of each C tile; -1 when finished
  std::set<std::pair<std::int64_t, std::int64_t>> rows, cols;
  const GemmStep* prev = nullptr;
  for (const GemmStep& s : all) {
    expect(s.mi > 0 && s.nj > 0 && s.kp > 0, "step sizes are positive");
    expect(s.mi <= plan.mb && s.nj <= plan.nb && s.kp <= plan.kb, "step within the tile sizes");
    expect(s.i0 >= 0 && s.i0 + s.mi <= p.m && s.j0 >= 0 && s.j0 + s.nj <= p.n && s.p0 >= 0 && s.p0 + s.kp <= p.k,
           "step inside the problem");
    const Tile t{s.i0, s.mi, s.j0, s.nj};
    auto it = next_k.find(t);
    const std::int64_t expected_p0 = it == next_k.end() ? 0 : it->second;
    expect(expected_p0 >= 0, "a C tile gets a k-panel after its last one");
    expect(s.p0 == expected_p0, "k-panels of a C tile in order, without gaps or repeats (p0 " + std::to_string(s.p0) +
                                    ", expected " + std::to_string(expected_p0) + ")");
    expect(s.first_k == (s.p0 == 0), "first_k marks the first k-panel");
    expect(s.last_k == (s.p0 + s.kp == p.k), "last_k marks the last k-panel");
    expect(s.upload_c == (p.reads_c && s.first_k), "C goes up exactly when it is read, before its first k-panel");
    next_k[t] = s.last_k ? -1 : s.p0 + s.kp;
    rows.insert({s.i0, s.mi});
    cols.insert({s.j0, s.nj});
    // A piece not uploaded must be the one already on the device.
    if (!s.upload_a)
      expect(prev != nullptr && prev->i0 == s.i0 && prev->mi == s.mi && prev->p0 == s.p0 && prev->kp == s.kp,
             "A tile reused without being on the device");
    if (!s.upload_b)
      expect(prev != nullptr && prev->j0 == s.j0 && prev->nj == s.nj && prev->p0 == s.p0 && prev->kp == s.kp,
             "B tile reused without being on the device");
    if (!ok) return false;
    prev = &s;
  }
  for (const auto& [t, nk] : next_k) expect(nk == -1, "a C tile did not get all its k-panels");
  // The C tiles are the grid rows x cols and nothing else: exact cover.
  expect(partitions({rows.begin(), rows.end()}, p.m), "row ranges of the C tiles partition [0, m)");
  expect(partitions({cols.begin(), cols.end()}, p.n), "column ranges of the C tiles partition [0, n)");
  expect(next_k.size() == rows.size() * cols.size(), "C tiles form a grid: each element in exactly one tile");
  expect(static_cast<std::int64_t>(rows.size()) == plan.tiles_m() &&
             static_cast<std::int64_t>(cols.size()) == plan.tiles_n(),
         "tiles_m()/tiles_n() agree with the steps");
  // Small problems: count the covering of every element directly.
  if (ok && p.m * p.n <= 1 << 20) {
    std::vector<unsigned char> cover(static_cast<std::size_t>(p.m * p.n), 0);
    for (const auto& [t, nk] : next_k) {
      const auto [i0, mi, j0, nj] = t;
      for (std::int64_t j = j0; j < j0 + nj; ++j)
        for (std::int64_t i = i0; i < i0 + mi; ++i) ++cover[static_cast<std::size_t>(i + j * p.m)];
    }
    expect(std::all_of(cover.begin(), cover.end(), [](unsigned char c) { return c == 1; }),
           "each element of C in exactly one tile");
  }
  return ok;
}

}  // namespace

BOOST_AUTO_TEST_CASE(random_problems_and_budgets) {
  int planned = 0, refused = 0;
  for (int t = 0; t < 1500; ++t) {
    GemmProblem p;
    p.m = random_dim();
    p.n = random_dim();
    p.k = random_dim();
    p.elem_size = std::vector<std::int64_t>{4, 8, 16}[static_cast<std::size_t>(uniform(0, 2))];
    p.reads_c = uniform(0, 1) == 1;
    const std::int64_t whole = (p.m * p.k + p.k * p.n + p.m * p.n) * p.elem_size;
    std::int64_t budget;
    switch (uniform(0, 3)) {
      case 0: budget = whole + uniform(0, 1000); break;                          // fits
      case 1: budget = std::max<std::int64_t>(3 * p.elem_size, whole / uniform(2, 50)); break;
      case 2: budget = uniform(3, 5000) * p.elem_size; break;                    // tiny
      default: budget = uniform(1, 1) << uniform(16, 34); break;                 // 64 KiB .. 16 GiB
    }
    // Keep the step count walkable (plan_gemm walks every step): a budget
    // that allows tiles of about (m n k / 1e5) elements' volume at least.
    const double volume = double(p.m) * double(p.n) * double(p.k);
    if (volume > 1e5)
      budget = std::max<std::int64_t>(budget, static_cast<std::int64_t>(12.0 * double(p.elem_size) *
                                                                         std::pow(volume / 1e5, 2.0 / 3.0)));
    GemmPlan plan;
    try {
      plan = plan_gemm(p, budget);
    } catch (const egpu::error&) {
      // Only a budget below the smallest possible tile may be refused.
      BOOST_TEST(budget < 3 * p.elem_size, describe(p, budget) << ": refused although a 1x1x1 tile fits");
      ++refused;
      continue;
    }
    if (plan.steps > 2'000'000) continue;  // huge walks are covered by smaller cases
    if (!check_plan(p, budget, plan)) break;
    ++planned;
  }
  BOOST_TEST_MESSAGE("planned " << planned << ", refused " << refused);
  BOOST_TEST(planned > 1000);
}

BOOST_AUTO_TEST_CASE(a_fitting_problem_is_one_tile_with_each_byte_up_once) {
  for (int t = 0; t < 300; ++t) {
    GemmProblem p;
    p.m = uniform(1, 3000);
    p.n = uniform(1, 3000);
    p.k = uniform(1, 3000);
    p.elem_size = std::vector<std::int64_t>{4, 8, 16}[static_cast<std::size_t>(uniform(0, 2))];
    p.reads_c = uniform(0, 1) == 1;
    const std::int64_t whole = (p.m * p.k + p.k * p.n + p.m * p.n) * p.elem_size;
    for (std::int64_t budget : {whole, whole + uniform(1, 1 << 20), whole * 3}) {
      const GemmPlan plan = plan_gemm(p, budget);
      const std::string what = describe(p, budget);
      BOOST_TEST(plan.single_c_tile(), what);
      BOOST_TEST(plan.tiles_m() == 1, what);
      BOOST_TEST(plan.tiles_n() == 1, what);
      BOOST_TEST(plan.tiles_k() == 1, what);
      BOOST_TEST(plan.steps == 1, what);
      BOOST_TEST(plan.device_bytes == whole, what);
      BOOST_TEST(plan.h2d_bytes == (p.m * p.k + p.k * p.n + (p.reads_c ? p.m * p.n : 0)) * p.elem_size, what);
      BOOST_TEST(plan.d2h_bytes == p.m * p.n * p.elem_size, what);
      check_plan(p, budget, plan);
    }
  }
}

BOOST_AUTO_TEST_CASE(an_impossible_budget_throws) {
  GemmProblem p;
  p.m = 1000;
  p.n = 1000;
  p.k = 1000;
  for (std::int64_t elem : {4, 8, 16}) {
    p.elem_size = elem;
    for (std::int64_t budget : {std::int64_t(0), std::int64_t(1), elem, 3 * elem - 1})
      BOOST_CHECK_THROW(plan_gemm(p, budget), egpu::error);
  }
  // The smallest budget that is not refused: one 1x1x1 tile of each.
  GemmProblem small;
  small.m = 7;
  small.n = 5;
  small.k = 6;
  for (std::int64_t elem : {4, 8, 16}) {
    small.elem_size = elem;
    GemmPlan plan;
    BOOST_CHECK_NO_THROW(plan = plan_gemm(small, 3 * elem));
    BOOST_TEST(plan.steps == 7 * 5 * 6);
    check_plan(small, 3 * elem, plan);
  }
}

BOOST_AUTO_TEST_CASE(out_of_core_examples) {
  // fp64, 16384^3 through 4 GiB: several C tiles, each input byte bounded.
  GemmProblem p;
  p.m = p.n = p.k = 16384;
  p.elem_size = 8;
  p.reads_c = true;
  const std::int64_t budget = std::int64_t(4) << 30;  // the whole product needs 6 GiB
  const GemmPlan plan = plan_gemm(p, budget);
  BOOST_TEST(!plan.single_c_tile());
  BOOST_TEST(plan.device_bytes <= budget);
  check_plan(p, budget, plan);
  // C crosses PCIe exactly once each way.
  BOOST_TEST(plan.d2h_bytes == p.m * p.n * 8);
}

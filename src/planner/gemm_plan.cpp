#include "planner/gemm_plan.hpp"

#include <algorithm>
#include <string>

#include "egpu/error.hpp"

namespace egpu::planner {
namespace {

// Tiles smaller than the full dimension are multiples of this, so that
// device tiles stay aligned to the kernel's block tiles.
constexpr std::int64_t kGranule = 128;

std::int64_t round_down(std::int64_t x, std::int64_t g) { return x >= g ? x / g * g : x; }

std::int64_t elements(std::int64_t mb, std::int64_t nb, std::int64_t kb) { return mb * kb + kb * nb + mb * nb; }

// The largest tile size along one dimension up to `limit` for which
// `fits(size)` holds, as a multiple of the granule unless it is `limit`
// itself; 0 when nothing fits.
template <class Fits>
std::int64_t largest_fitting(std::int64_t limit, Fits fits) {
  if (fits(limit)) return limit;
  std::int64_t lo = 0, hi = limit;  // fits(lo) or lo == 0; !fits(hi)
  while (hi - lo > 1) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    (fits(mid) ? lo : hi) = mid;
  }
  return std::max<std::int64_t>(round_down(lo, kGranule), lo >= kGranule ? kGranule : lo);
}

}  // namespace

GemmPlan plan_gemm(const GemmProblem& problem, std::int64_t device_budget_bytes) {
  if (problem.m <= 0 || problem.n <= 0 || problem.k <= 0 || problem.elem_size <= 0)
    throw egpu::error("plan_gemm: sizes must be positive");
  const std::int64_t m = problem.m, n = problem.n, k = problem.k;
  const std::int64_t budget = device_budget_bytes / problem.elem_size;  // in elements
  auto fits = [&](std::int64_t mb, std::int64_t nb, std::int64_t kb) { return elements(mb, nb, kb) <= budget; };

  GemmPlan plan;
  plan.problem = problem;
  // 1. Everything at once. 2. A stays, B and C go by column panels.
  // 3. Square C tiles with the whole k. 4. k split as well.
  std::int64_t mb = m, nb = n, kb = k;
  if (!fits(mb, nb, kb)) {
    nb = largest_fitting(n, [&](std::int64_t x) { return fits(m, x, k); });
    if (nb < std::min<std::int64_t>(n, 4 * kGranule)) {
      mb = largest_fitting(std::min(m, n), [&](std::int64_t x) {
        return fits(std::min(x, m), std::min(x, n), k);
      });
      nb = std::min(mb, n);
      mb = std::min(mb, m);
      if (mb < std::min<std::int64_t>(std::min(m, n), 4 * kGranule)) {
        mb = std::min<std::int64_t>(m, 16 * kGranule);
        nb = std::min<std::int64_t>(n, 16 * kGranule);
        while ((mb > 1 || nb > 1) && !fits(mb, nb, 1)) {
          mb = std::max<std::int64_t>(1, mb / 2);
          nb = std::max<std::int64_t>(1, nb / 2);
        }
        kb = largest_fitting(k, [&](std::int64_t x) { return fits(mb, nb, x); });
      }
    }
  }
  if (mb <= 0 || nb <= 0 || kb <= 0 || !fits(mb, nb, kb))
    throw egpu::error("device memory budget of " + std::to_string(device_budget_bytes) +
                      " bytes is too small for any tile of this product");
  plan.mb = mb;
  plan.nb = nb;
  plan.kb = kb;
  plan.device_bytes = elements(mb, nb, kb) * problem.elem_size;
  // What for_each_step uploads, counted without walking the steps: A goes
  // up once when one tile holds all of it, else once per column panel; B
  // once when the whole k is one panel, else once per row tile.
  const std::int64_t tm = plan.tiles_m(), tn = plan.tiles_n(), tk = plan.tiles_k();
  const std::int64_t a_passes = (tm == 1 && tk == 1) ? 1 : tn;
  const std::int64_t b_passes = tk == 1 ? 1 : tm;
  plan.steps = tm * tn * tk;
  plan.h2d_bytes = (a_passes * m * k + b_passes * k * n + (problem.reads_c ? m * n : 0)) * problem.elem_size;
  plan.d2h_bytes = m * n * problem.elem_size;
  return plan;
}

void for_each_step(const GemmPlan& plan, const std::function<void(const GemmStep&)>& step) {
  const GemmProblem& p = plan.problem;
  // Column panels of C outside, row tiles inside, k innermost: with the
  // whole k in one panel, a B panel goes up once for all row tiles, and A
  // goes up once when it fits whole.
  std::int64_t last_a_i = -1, last_a_p = -1, last_b_j = -1, last_b_p = -1;
  for (std::int64_t j0 = 0; j0 < p.n; j0 += plan.nb) {
    for (std::int64_t i0 = 0; i0 < p.m; i0 += plan.mb) {
      for (std::int64_t p0 = 0; p0 < p.k; p0 += plan.kb) {
        GemmStep s;
        s.i0 = i0;
        s.mi = std::min(plan.mb, p.m - i0);
        s.j0 = j0;
        s.nj = std::min(plan.nb, p.n - j0);
        s.p0 = p0;
        s.kp = std::min(plan.kb, p.k - p0);
        s.first_k = p0 == 0;
        s.last_k = p0 + s.kp == p.k;
        s.upload_a = !(i0 == last_a_i && p0 == last_a_p);
        s.upload_b = !(j0 == last_b_j && p0 == last_b_p);
        s.upload_c = p.reads_c && s.first_k;
        last_a_i = i0;
        last_a_p = p0;
        last_b_j = j0;
        last_b_p = p0;
        step(s);
      }
    }
  }
}

}  // namespace egpu::planner

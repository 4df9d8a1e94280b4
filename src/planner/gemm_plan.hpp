// Plans a host-resident product through a device memory budget: the tile
// sizes of C, A and B that are on the device at once, the order in which
// tiles go up, are multiplied and come back, and the bytes that cross PCIe.
// Pure C++: no CUDA calls, tested on any machine.
#pragma once

#include <cstdint>
#include <functional>

namespace egpu::planner {

struct GemmProblem {
  std::int64_t m = 0, n = 0, k = 0;
  std::int64_t elem_size = 8;
  bool reads_c = false;  // beta != 0: C goes up before it is accumulated into
};

// One step of a plan: the C tile [i0, i0+mi) x [j0, j0+nj) accumulates
// A[i0.., p0..p0+kp) * B[p0.., j0..). upload_* say whether that piece has to
// go up (it is not already on the device from the previous step);
// first_k / last_k mark the first and last k-panel of a C tile.
struct GemmStep {
  std::int64_t i0 = 0, mi = 0, j0 = 0, nj = 0, p0 = 0, kp = 0;
  bool upload_a = false, upload_b = false, upload_c = false;
  bool first_k = false, last_k = false;
};

struct GemmPlan {
  GemmProblem problem;
  std::int64_t mb = 0, nb = 0, kb = 0;  // tile sizes (edge tiles are smaller)
  std::int64_t device_bytes = 0;        // device memory the tiles need at once
  std::int64_t h2d_bytes = 0;           // bytes that go up, over the whole plan
  std::int64_t d2h_bytes = 0;           // bytes that come back
  std::int64_t steps = 0;

  std::int64_t tiles_m() const { return (problem.m + mb - 1) / mb; }
  std::int64_t tiles_n() const { return (problem.n + nb - 1) / nb; }
  std::int64_t tiles_k() const { return (problem.k + kb - 1) / kb; }
  bool single_c_tile() const { return mb >= problem.m && nb >= problem.n; }
};

// Throws egpu::error when even the smallest tiles do not fit the budget.
// m, n, k must be positive.
GemmPlan plan_gemm(const GemmProblem& problem, std::int64_t device_budget_bytes);

// Calls `step` for every step of the plan, in execution order.
void for_each_step(const GemmPlan& plan, const std::function<void(const GemmStep&)>& step);

}  // namespace egpu::planner

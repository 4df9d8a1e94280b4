#include "planner/elementwise_plan.hpp"

#include <algorithm>
#include <string>

#include "egpu/error.hpp"

namespace egpu::planner {
namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// A chunk of about 8 MiB of the widest operand: a copy of that size runs at
// the full PCIe rate, and a 1 GiB operand still makes over a hundred chunks,
// so that uploads, kernels and downloads overlap for all but one of them.
constexpr std::int64_t kChunkBytes = std::int64_t(8) << 20;
// Smaller chunks than this are all launch and copy overhead; a budget that
// does not hold them is refused.
constexpr std::int64_t kMinChunkElements = 64;
// Slots per changing leaf and for results: one filling, one computing, one
// draining; fewer (no overlap) only when chunks of this size do not fit.
constexpr std::int32_t kRing = 3;
constexpr std::int64_t kMinOverlappedChunk = 4096;
// A plan of more chunks than this is refused rather than built.
constexpr std::int64_t kMaxChunks = std::int64_t(1) << 22;

struct Shape {
  std::int64_t mb, nb;
};

Shape chunk_shape(std::int64_t rows, std::int64_t cols, std::int64_t elements) {
  if (rows >= elements) {
    const std::int64_t tm = ceil_div(rows, elements);
    return {ceil_div(rows, tm), 1};
  }
  const std::int64_t tn = ceil_div(cols, std::max<std::int64_t>(1, elements / rows));
  return {rows, ceil_div(cols, tn)};
}

}  // namespace

std::int64_t ElementwisePlan::slot_bytes(std::int64_t elem, std::int64_t rows, std::int64_t cols) {
  return (elem * rows * cols + kSlotAlign - 1) / kSlotAlign * kSlotAlign;
}

std::int64_t ElementwisePlan::chunks() const {
  return mb == 0 ? 0 : ceil_div(problem.rows, mb) * ceil_div(problem.cols, nb);
}

ElementwisePlan plan_elementwise(const ElementwiseProblem& problem, const ElementwiseLimits& limits) {
  if (problem.rows <= 0 || problem.cols <= 0) throw egpu::error("plan_elementwise: empty problem");
  std::int64_t widest = std::max<std::int64_t>(problem.out_elem_size, 1);  // a reduction of constants reads nothing
  for (const auto& leaf : problem.leaves) widest = std::max(widest, leaf.elem_size);
  std::int64_t elements = (limits.chunk_bytes > 0 ? limits.chunk_bytes : kChunkBytes) / widest;
  elements = std::max(elements, kMinChunkElements);

  ElementwisePlan plan;
  plan.problem = problem;
  // Chunks as large as asked, halved until their slots fit; below
  // kMinOverlappedChunk elements, fewer slots are tried before smaller chunks.
  auto fits = [&](std::int64_t chunk_elements, std::int32_t ring) {
    const Shape s = chunk_shape(problem.rows, problem.cols, chunk_elements);
    plan.mb = s.mb;
    plan.nb = s.nb;
    const std::int64_t tm = ceil_div(problem.rows, s.mb), tn = ceil_div(problem.cols, s.nb), chunks = tm * tn;
    plan.leaf_once.assign(problem.leaves.size(), 0);
    const std::int64_t out_bytes = ElementwisePlan::slot_bytes(problem.out_elem_size, s.mb, s.nb);
    std::int64_t ring_bytes = out_bytes, once_bytes = 0;
    for (std::size_t l = 0; l < problem.leaves.size(); ++l) {
      const LeafTraffic& leaf = problem.leaves[l];
      const std::int64_t bytes = ElementwisePlan::slot_bytes(leaf.elem_size, ElementwisePlan::piece_rows(leaf, s.mb),
                                                             ElementwisePlan::piece_cols(leaf, s.nb));
      const bool once = (!leaf.varies_down_rows || tm == 1) && (!leaf.varies_across_cols || tn == 1);
      plan.leaf_once[l] = once;
      (once ? once_bytes : ring_bytes) += bytes;
    }
    plan.leaf_slots = static_cast<std::int32_t>(std::min<std::int64_t>(ring, chunks));
    plan.out_slots = plan.leaf_slots;
    plan.device_bytes = once_bytes + ring_bytes * plan.leaf_slots;
    // An accumulating call keeps every result on the device when it can.
    if (problem.accumulates) {
      const std::int64_t all_out = plan.device_bytes + out_bytes * (chunks - plan.out_slots);
      if (all_out <= limits.device_budget_bytes) {
        plan.out_slots = static_cast<std::int32_t>(chunks);
        plan.device_bytes = all_out;
      }
    }
    return chunks <= kMaxChunks && plan.device_bytes <= limits.device_budget_bytes;
  };
  const std::int64_t asked = elements;
  for (bool found = false; !found; elements /= 2) {
    for (std::int32_t ring = kRing; ring >= 1 && !found; --ring) {
      found = fits(elements, ring);
      // Unconstrained: the first try fits (chunks as large as asked, a full
      // ring), and an accumulating call holds every result.
      plan.unconstrained = found && elements == asked && ring == kRing &&
                           (!problem.accumulates || plan.out_slots == plan.chunks());
      if (elements >= kMinOverlappedChunk) break;
    }
    if (!found && elements / 2 < kMinChunkElements)
      throw egpu::error("device memory budget of " + std::to_string(limits.device_budget_bytes) +
                        " bytes is too small for this coefficient-wise expression (chunks of " +
                        std::to_string(elements) + " elements need " + std::to_string(plan.device_bytes) + ")");
  }

  const std::int64_t tm = ceil_div(problem.rows, plan.mb), tn = ceil_div(problem.cols, plan.nb);
  std::int32_t t = 0;
  for (std::int64_t jt = 0; jt < tn; ++jt)
    for (std::int64_t it = 0; it < tm; ++it, ++t) {
      Op region;
      region.i0 = it * plan.mb;
      region.mi = std::min(plan.mb, problem.rows - region.i0);
      region.j0 = jt * plan.nb;
      region.nj = std::min(plan.nb, problem.cols - region.j0);
      region.tile = t;
      const std::int32_t leaf_slot = t % plan.leaf_slots;
      for (std::size_t l = 0; l < problem.leaves.size(); ++l) {
        const LeafTraffic& leaf = problem.leaves[l];
        if (plan.leaf_once[l] && t > 0) continue;
        Op up = region;
        up.kind = OpKind::upload_leaf;
        up.leaf = static_cast<std::int32_t>(l);
        up.slot = plan.leaf_once[l] ? 0 : leaf_slot;
        plan.ops.push_back(up);
        plan.h2d_bytes += leaf.elem_size * ElementwisePlan::piece_rows(leaf, region.mi) *
                          ElementwisePlan::piece_cols(leaf, region.nj);
      }
      Op evaluate = region;
      evaluate.kind = OpKind::evaluate;
      evaluate.slot = t % plan.out_slots;
      evaluate.a_slot = leaf_slot;
      plan.ops.push_back(evaluate);
      if (problem.out_elem_size == 0) continue;  // a reduction: the chunk's result stays on the device
      Op down = region;
      down.kind = OpKind::download_c;
      down.slot = evaluate.slot;
      plan.ops.push_back(down);
      plan.d2h_bytes += problem.out_elem_size * region.mi * region.nj;
    }
  return plan;
}

}  // namespace egpu::planner

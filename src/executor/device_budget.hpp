// How a call's plan comes to fit the device memory it may use.
#pragma once

#include <cstddef>
#include <optional>
#include <utility>

#include "egpu/error.hpp"
#include "runtime/context.hpp"

namespace egpu::executor {

// Plans a call within its device budget: `limit` when given, else what
// the device has free. Measuring that (runtime::device_budget,
// cudaMemGetInfo) costs a call about 8 us, so the thread's last
// measurement stands for a plan that more memory would not change and
// that takes at most half of it, when the device's pool already holds its
// buffers unused: the call then takes nothing new from the device.
// Otherwise the budget is measured, and such a plan is kept if it takes at
// most half of the new figure too, rather than planned again.
//   plan_for(budget) -> Plan; throws egpu::error when no plan fits
//   bytes(plan)      -> the device bytes the call allocates for the plan
//   settled(plan)    -> whether any larger budget gives the same plan
template <class PlanFor, class Bytes, class Settled>
auto plan_within_budget(std::size_t limit, const PlanFor& plan_for, const Bytes& bytes, const Settled& settled)
    -> decltype(plan_for(std::size_t{})) {
  using Plan = decltype(plan_for(std::size_t{}));
  const std::size_t last = runtime::thread_context().measured_budget();
  std::optional<Plan> kept;
  std::size_t kept_bytes = 0;
  std::optional<std::size_t> pool_idle;  // read once, for the budget below too
  if (limit == 0 && last > 0) {
    try {
      Plan plan = plan_for(last);
      const std::size_t b = bytes(plan);
      if (settled(plan) && 2 * b <= last) {
        pool_idle = runtime::pool_idle_bytes();
        if (b <= *pool_idle) return plan;
        kept = std::move(plan);
        kept_bytes = b;
      }
    } catch (const egpu::error&) {
      // Too small a budget for any plan: measured again below.
    }
  }
  const std::size_t budget = runtime::device_budget(limit, pool_idle);
  if (kept && 2 * kept_bytes <= budget) return *std::move(kept);
  return plan_for(budget);
}

}  // namespace egpu::executor

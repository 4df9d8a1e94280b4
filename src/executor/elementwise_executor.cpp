#include "executor/elementwise_executor.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "backend/device_elementwise.hpp"
#include "backend/device_reduce.hpp"
#include "egpu/error.hpp"
#include "executor/device_budget.hpp"
#include "executor/leaf_slots.hpp"
#include "executor/pipeline_parts.hpp"
#include "kernels/elementwise/elementwise_source.hpp"
#include "kernels/reduction/reduction_source.hpp"
#include "planner/elementwise_plan.hpp"
#include "runtime/context.hpp"
#include "runtime/device_buffer.hpp"

namespace egpu::executor {
namespace {

using detail::MatrixDesc;
using detail::ScalarKind;

planner::ElementwiseProblem problem_of(const detail::ElementwiseProgram& program, std::int64_t out_elem_size,
                                       bool accumulates) {
  planner::ElementwiseProblem problem;
  problem.rows = program.rows;
  problem.cols = program.cols;
  problem.out_elem_size = out_elem_size;
  problem.accumulates = accumulates;
  for (const auto& leaf : program.leaves) problem.leaves.push_back(leaf_traffic(leaf, program.rows, program.cols));
  return problem;
}

// The leaves' side of a plan: every leaf's slots, its pieces going up, and
// each chunk's program over the pieces on the device.
class LeafPipeline {
 public:
  LeafPipeline(const detail::ElementwiseProgram& program, const planner::ElementwisePlan& plan,
               const Streams& streams, Events& events)
      : m_plan(plan), m_streams(streams), m_chunk(program) {
    m_leaves.reserve(program.leaves.size());
    for (std::size_t l = 0; l < program.leaves.size(); ++l)
      m_leaves.emplace_back(program.leaves[l], plan.problem.leaves[l], plan.leaf_once[l] ? 1 : plan.leaf_slots,
                            plan.mb, plan.nb, streams.up, events, streams.compute.size());
  }

  void upload(const Op& op, StagingRing& ring, int threads, Trace& trace) {
    const int span = trace.begin(
        [&] { return region(("upload leaf " + std::to_string(op.leaf)).c_str(), op.i0, op.mi, op.j0, op.nj); }, "H2D",
        m_streams.up);
    m_leaves[static_cast<std::size_t>(op.leaf)].upload(op, ring, m_streams.up, threads);
    trace.end(span, m_streams.up);
  }

  // Chunk `op`'s program, its leaves on the device, for work on `stream`.
  const detail::ElementwiseProgram& acquire(const Op& op, cudaStream_t stream) {
    m_chunk.rows = op.mi;
    m_chunk.cols = op.nj;
    for (std::size_t l = 0; l < m_leaves.size(); ++l) m_chunk.leaves[l].m = m_leaves[l].acquire(slot(l, op), op, stream);
    return m_chunk;
  }
  // After that work is queued on compute lane `lane`.
  void release(const Op& op, std::size_t lane, cudaStream_t stream) {
    for (std::size_t l = 0; l < m_leaves.size(); ++l) m_leaves[l].release(slot(l, op), lane, stream);
  }

 private:
  std::int32_t slot(std::size_t leaf, const Op& op) const { return m_plan.leaf_once[leaf] ? 0 : op.a_slot; }

  const planner::ElementwisePlan& m_plan;
  const Streams& m_streams;
  detail::ElementwiseProgram m_chunk;
  std::vector<LeafSlots> m_leaves;
};

template <class T>
void run(detail::ElementwiseProgram program, MatrixDesc out_desc, ScalarKind out_scalar, bool accumulates,
         const Options& options) {
  // Counted in the destination's storage order, so that chunks of whole
  // columns are runs of its memory.
  kernels::to_destination_order(program, out_desc);
  runtime::Context& ctx = runtime::thread_context();
  Streams streams(ctx, stream_count(options));
  const int threads = staging_threads(options);
  const planner::ElementwiseProblem problem = problem_of(program, detail::scalar_size(out_scalar), accumulates);
  const planner::ElementwisePlan plan = plan_within_budget(
      options.device_memory_limit,
      [&](std::size_t budget) {
        return planner::plan_elementwise(problem, {static_cast<std::int64_t>(budget), options.chunk_bytes});
      },
      [](const planner::ElementwisePlan& p) { return static_cast<std::size_t>(p.device_bytes); },
      [](const planner::ElementwisePlan& p) { return p.unconstrained; });

  const HostMatrix<T> dst = host_matrix<T>(out_desc);
  const bool defer_downloads = accumulates && plan.out_slots == plan.chunks();
  const ResultTarget<T> target(dst, accumulates && !defer_downloads);

  Events events;
  const std::size_t computes = streams.compute.size();
  LeafPipeline leaves(program, plan, streams, events);
  const std::size_t c_slot_elems = static_cast<std::size_t>(
      planner::ElementwisePlan::slot_bytes(sizeof(T), plan.mb, plan.nb) / static_cast<std::int64_t>(sizeof(T)));
  runtime::DeviceBuffer c_buffer(sizeof(T) * c_slot_elems * static_cast<std::size_t>(plan.out_slots), streams.up);
  const std::vector<cudaEvent_t> c_done = events.make(static_cast<std::size_t>(plan.out_slots));
  const std::vector<cudaEvent_t> c_free = events.make(static_cast<std::size_t>(plan.out_slots));
  start_after_up(streams, events);

  Trace trace;
  const DrainOnExit drain{streams};
  Writer<T> writer(ctx, streams.down, c_buffer.as<T>(), c_slot_elems, target.out(),
                   !target.held() && is_pinned(dst), c_free, defer_downloads, threads, trace, downloads_in(plan));
  backend::ElementwiseLauncher launcher(program, out_scalar, ctx);

  StagingRing ring{&ctx.up_ring()};
  for (const Op& op : plan.ops) {
    maybe_fail();
    writer.check();
    switch (op.kind) {
      case OpKind::upload_leaf: leaves.upload(op, ring, threads, trace); break;
      case OpKind::evaluate: {
        const std::size_t lane = static_cast<std::size_t>(op.tile) % computes;
        const cudaStream_t stream = streams.compute[lane];
        writer.claim(op.slot, stream);
        const detail::ElementwiseProgram& chunk = leaves.acquire(op, stream);
        MatrixDesc out;
        out.data = c_buffer.as<T>() + static_cast<std::size_t>(op.slot) * c_slot_elems;
        out.rows = op.mi;
        out.cols = op.nj;
        out.row_stride = 1;
        out.col_stride = op.mi;
        const int span = trace.begin([&] { return region("evaluate", op.i0, op.mi, op.j0, op.nj); },
                                     "kernels " + std::to_string(lane), stream);
        launcher.launch(chunk, out, stream);
        trace.end(span, stream);
        leaves.release(op, lane, stream);
        record(c_done[static_cast<std::size_t>(op.slot)], stream);
        break;
      }
      case OpKind::download_c:
        writer.push({op, c_done[static_cast<std::size_t>(op.slot)], dense(op.mi, op.nj, Layout::col_major)});
        break;
      default:
        throw egpu::error("coefficient-wise pipeline: a product's operation in its plan");
    }
  }
  finish_call(writer, streams, target, threads, trace, "coefficient-wise pipeline");
}

// Where chunk `op` folds into the accumulators, and whether it is the first
// to: chunks are whole columns, or rows of one column.
std::int64_t fold_first(const detail::Reduction& r, const Op& op) {
  return r.axis == detail::ReduceAxis::each_column ? op.j0 : r.axis == detail::ReduceAxis::each_row ? op.i0 : 0;
}
bool fold_fresh(const detail::Reduction& r, const Op& op) {
  return r.axis == detail::ReduceAxis::each_column ? op.i0 == 0
         : r.axis == detail::ReduceAxis::each_row  ? op.j0 == 0
                                                   : op.tile == 0;
}

}  // namespace

void run_reduction(detail::ElementwiseProgram program, detail::Reduction reduction, void* result,
                   const Options& options) {
  const FailureScope failure_scope;  // an injected failure applies to this call only
  const std::int64_t count = detail::reduced_count(program, reduction);
  kernels::to_leaf_order(program, reduction);
  runtime::Context& ctx = runtime::thread_context();
  Streams streams(ctx, stream_count(options));
  const int threads = staging_threads(options);

  // The accumulators (and the first pass's partials, as many again) come
  // out of the budget first; spare partials, which only speed the first pass
  // up, take at most an eighth of what is left; the leaves' slots the rest.
  const std::int64_t acc = backend::DeviceReduction::accumulator_bytes(program, reduction);
  const std::int64_t result_bytes = kernels::result_bytes(reduction.op, program.code.back().type);
  const std::int64_t fixed = 2 * count * acc + count * result_bytes;
  const std::int64_t most_spare = backend::DeviceReduction::spare_for_speed(ctx.device());
  const planner::ElementwiseProblem problem = problem_of(program, 0, false);
  struct Plan {
    std::int64_t spare;
    planner::ElementwisePlan leaves;
  };
  const Plan split = plan_within_budget(
      options.device_memory_limit,
      [&](std::size_t budget_bytes) {
        const auto budget = static_cast<std::int64_t>(budget_bytes);
        if (fixed > budget)
          throw egpu::error("device memory budget of " + std::to_string(budget) + " bytes is too small for the " +
                            std::to_string(count) + " values of this reduction (" + std::to_string(fixed) + " bytes)");
        const std::int64_t spare = std::min(most_spare, (budget - fixed) / 8 / acc);
        return Plan{spare, planner::plan_elementwise(problem, {budget - fixed - spare * acc, options.chunk_bytes})};
      },
      [&](const Plan& p) { return static_cast<std::size_t>(fixed + p.spare * acc + p.leaves.device_bytes); },
      [&](const Plan& p) { return p.spare == most_spare && p.leaves.unconstrained; });
  const std::int64_t spare = split.spare;
  const planner::ElementwisePlan& plan = split.leaves;

  Events events;
  LeafPipeline leaves(program, plan, streams, events);
  backend::DeviceReduction reducer(program, reduction, count, spare, ctx, streams.up);
  runtime::DeviceBuffer results(static_cast<std::size_t>(count * result_bytes), streams.up);
  start_after_up(streams, events);

  Trace trace;
  const DrainOnExit drain{streams};
  // Every chunk folds on one stream, in plan order: the order of
  // combination is the plan's, whatever the timing.
  const cudaStream_t stream = streams.compute[0];
  StagingRing ring{&ctx.up_ring()};
  for (const Op& op : plan.ops) {
    maybe_fail();
    switch (op.kind) {
      case OpKind::upload_leaf: leaves.upload(op, ring, threads, trace); break;
      case OpKind::evaluate: {
        const detail::ElementwiseProgram& chunk = leaves.acquire(op, stream);
        const int span = trace.begin([&] { return region("reduce", op.i0, op.mi, op.j0, op.nj); }, "kernels 0", stream);
        reducer.fold(chunk, fold_first(reduction, op), fold_fresh(reduction, op), stream);
        trace.end(span, stream);
        leaves.release(op, 0, stream);
        break;
      }
      default:
        throw egpu::error("reduction pipeline: an operation other than uploads and evaluations in its plan");
    }
  }
  reducer.finish(results.get(), stream);
  runtime::cuda_check(cudaMemcpyAsync(result, results.get(), static_cast<std::size_t>(count * result_bytes),
                                      cudaMemcpyDeviceToHost, stream),
                      "reduction: copying the results");
  maybe_fail();
  streams.synchronize("reduction pipeline");
  trace.flush();
}

void run_elementwise(detail::ElementwiseProgram program, detail::MatrixDesc out, detail::ScalarKind out_scalar,
                     bool accumulates, const Options& options) {
  const FailureScope failure_scope;  // an injected failure applies to this call only
  with_element_type(out_scalar, [&](auto t) {
    run<decltype(t)>(std::move(program), out, out_scalar, accumulates, options);
  });
}

}  // namespace egpu::executor

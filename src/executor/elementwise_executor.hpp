// Runs host-resident coefficient-wise programs as a pipeline
// (planner/elementwise_plan.hpp) with the parts products use
// (pipeline_parts.hpp): leaf pieces go up on one stream while the chunks
// already there are worked on others. Two kinds of chunk work: a
// coefficient-wise expression (backend::ElementwiseLauncher) whose results
// the writer thread brings down into the destination, and a reduction
// (backend::DeviceReduction) whose chunks fold into accumulators on the
// device, in plan order, and whose results come down at the end.
#pragma once

#include "egpu/detail/elementwise_program.hpp"
#include "egpu/detail/reduction.hpp"
#include "egpu/options.hpp"

namespace egpu::executor {

// program is validated, has the destination's shape and at least one
// element; out is in host memory and overlaps no leaf except at the same
// elements (a leaf that is the destination itself).
void run_elementwise(detail::ElementwiseProgram program, detail::MatrixDesc out, detail::ScalarKind out_scalar,
                     bool accumulates, const Options& options);

// program is validated against the reduction and has at least one element;
// the reduced values land at `result` in host memory (detail::reduce).
void run_reduction(detail::ElementwiseProgram program, detail::Reduction reduction, void* result,
                   const Options& options);

}  // namespace egpu::executor

// Runs a host-resident coefficient-wise expression as a pipeline
// (planner/elementwise_plan.hpp) with the parts products use
// (pipeline_parts.hpp): leaf pieces go up on one stream, the generated
// kernel (backend::device_elementwise) runs chunk by chunk on others, the
// writer thread brings results down into the destination.
#pragma once

#include "egpu/detail/elementwise_program.hpp"
#include "egpu/options.hpp"

namespace egpu::executor {

// program is validated, has the destination's shape and at least one
// element; out is in host memory and overlaps no leaf except at the same
// elements (a leaf that is the destination itself).
void run_elementwise(detail::ElementwiseProgram program, detail::MatrixDesc out, detail::ScalarKind out_scalar,
                     bool accumulates, const Options& options);

}  // namespace egpu::executor

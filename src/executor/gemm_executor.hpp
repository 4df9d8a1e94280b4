// Runs a host-resident product as a pipeline (planner/pipeline_plan.hpp):
// uploads on one stream, kernels on others, downloads on their own, all in
// flight together; staging threads move pageable data through pinned
// slots, and a writer thread puts finished C tiles into the destination.
#pragma once

#include "egpu/detail/gemm_descriptor.hpp"
#include "egpu/options.hpp"

namespace egpu::executor {

// desc is validated and has m, n, k > 0.
void run_gemm(const detail::GemmDesc& desc, const Options& options);

}  // namespace egpu::executor

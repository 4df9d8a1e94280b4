// Runs a host-resident product: plans tiles through the device budget,
// then for each step uploads the pieces the device lacks, multiplies, and
// brings finished C tiles back into the user's memory.
#pragma once

#include "egpu/detail/gemm_descriptor.hpp"
#include "egpu/options.hpp"

namespace egpu::executor {

// desc is validated and has m, n, k > 0.
void run_gemm(const detail::GemmDesc& desc, const Options& options);

}  // namespace egpu::executor

// One coefficient-wise expression on device memory: the program's leaves and
// the destination all point into the device's memory. The program is turned
// into a kernel's source (kernels/elementwise), compiled once per distinct
// source by NVRTC (runtime/runtime_kernels) and launched on `stream`.
#pragma once

#include <cuda_runtime.h>

#include "egpu/detail/elementwise_program.hpp"
#include "runtime/context.hpp"

namespace egpu::backend {

// Queues out = program on `stream` (one of ctx's streams). out has the
// program's shape and scalar type and overlaps no leaf (Eigen's rule for
// coefficient-wise assignment lets it be a leaf read at the same element).
void device_elementwise(detail::ElementwiseProgram program, detail::MatrixDesc out, detail::ScalarKind out_scalar,
                        runtime::Context& ctx, cudaStream_t stream);

}  // namespace egpu::backend

// One coefficient-wise expression on device memory: the program's leaves and
// the destination all point into the device's memory. The program is turned
// into a kernel's source (kernels/elementwise), compiled once per distinct
// source by NVRTC (runtime/runtime_kernels) and launched on a stream.
#pragma once

#include <cuda_runtime.h>

#include "egpu/detail/elementwise_program.hpp"
#include "kernels/elementwise/elementwise_source.hpp"
#include "kernels/elementwise/ew_params.h"
#include "runtime/context.hpp"

namespace egpu::backend {

// Launches of one program's operations over pieces whose pointers and sizes
// change (the chunks of a pipeline): the program is checked once, and a
// kernel is looked up again only when a piece needs another kernel shape.
class ElementwiseLauncher {
 public:
  ElementwiseLauncher(const detail::ElementwiseProgram& program, detail::ScalarKind out_scalar,
                      runtime::Context& ctx);

  // Queues out = piece on `stream` (one of the context's streams). piece has
  // the program's operations; out has piece's shape and the destination's
  // scalar type and overlaps no leaf (Eigen's rule for coefficient-wise
  // assignment lets it be a leaf read at the same element).
  void launch(detail::ElementwiseProgram piece, detail::MatrixDesc out, cudaStream_t stream);

 private:
  runtime::Context& m_ctx;
  detail::ScalarKind m_out_scalar;
  bool m_have_kernel = false;
  kernels::EwKernelShape m_shape;
  cudaKernel_t m_kernel = nullptr;
};

// One launch of a whole program.
void device_elementwise(detail::ElementwiseProgram program, detail::MatrixDesc out, detail::ScalarKind out_scalar,
                        runtime::Context& ctx, cudaStream_t stream);

// The kernel parameters of `piece`: its shape, leaves and constants (the
// destination's fields left empty).
egpu_ew_params leaf_params(const detail::ElementwiseProgram& piece);

// Multiprocessors of `device`, read once per process.
int multiprocessors(int device);

}  // namespace egpu::backend

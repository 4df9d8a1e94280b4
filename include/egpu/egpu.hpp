// egpu: Eigen products and coefficient-wise expressions on NVIDIA GPUs,
// written straight back into Eigen objects.
//
//   C.noalias() = egpu::gpu(A * B);
//   C          += egpu::gpu(2.0 * A.transpose() * B.adjoint(), options);
//   c           = egpu::gpu(a * b + a.exp());   // one fused kernel
//   double s    = egpu::gpu(a * b).sum();        // reduced on the GPU
//   r           = egpu::gpu(A.colwise().norm()); // partial reductions
//
// The expression inside gpu() is described at compile time (sizes, strides,
// transposes, conjugation and scalar factors of a product; the operations
// and leaves of a coefficient-wise expression) and handed to the compiled
// library; without a usable GPU the same call runs on CPU Eigen.
#pragma once

#include <Eigen/Dense>

#include "egpu/adapter/assign.hpp"
#include "egpu/adapter/gpu_expr.hpp"
#include "egpu/adapter/reduce.hpp"
#include "egpu/device.hpp"
#include "egpu/error.hpp"
#include "egpu/options.hpp"
#include "egpu/pin.hpp"

namespace egpu {

// Marks an expression to run on the GPU: a matrix product, or a
// coefficient-wise expression (whose products, if any, run on the GPU
// first). Assign the result as you would the expression itself: =,
// noalias() =, +=, -=, into any dense destination.
template <class Derived>
GpuExpr<Derived> gpu(const Eigen::DenseBase<Derived>& xpr, const Options& options = Options()) {
  return GpuExpr<Derived>(xpr.derived(), options);
}

}  // namespace egpu

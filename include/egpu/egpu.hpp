// egpu: Eigen products on NVIDIA GPUs, written straight back into Eigen
// objects.
//
//   C.noalias() = egpu::gpu(A * B);
//   C          += egpu::gpu(2.0 * A.transpose() * B.adjoint(), options);
//
// The expression inside gpu() is described at compile time (sizes, strides,
// transposes, conjugation and scalar factors) and handed to the compiled
// library; without a usable GPU the same call runs on CPU Eigen.
#pragma once

#include <Eigen/Dense>

#include "egpu/adapter/assign.hpp"
#include "egpu/adapter/gpu_expr.hpp"
#include "egpu/device.hpp"
#include "egpu/error.hpp"
#include "egpu/options.hpp"
#include "egpu/pin.hpp"

namespace egpu {

// Marks an expression to run on the GPU. Assign the result as you would the
// expression itself: =, noalias() =, +=, -=, into any dense destination.
template <class Derived>
GpuExpr<Derived> gpu(const Eigen::DenseBase<Derived>& xpr, const Options& options = Options()) {
  static_assert(detail::product_parts<Derived>::is_product,
                "egpu::gpu: this version runs matrix products (A * B with optional transpose(), adjoint(), "
                "conjugate() and scalar factors); other expressions are not supported yet");
  return GpuExpr<Derived>(xpr.derived(), options);
}

}  // namespace egpu

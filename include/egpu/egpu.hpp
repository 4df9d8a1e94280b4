// egpu: Eigen products and coefficient-wise expressions on NVIDIA GPUs,
// written straight back into Eigen objects.
//
//   C.noalias() = egpu::gpu(A * B);
//   C          += egpu::gpu(2.0 * A.transpose() * B.adjoint(), options);
//   c           = egpu::gpu(a * b + a.exp());   // one fused kernel
//   double s    = egpu::gpu(a * b).sum();        // reduced on the GPU
//   r           = egpu::gpu(A.colwise().norm()); // partial reductions
//   egpu::DeviceMatrix<double> dA(A), dB = B;    // resident on the GPU
//   dC          = egpu::gpu(dA * dB);            // queued; the host goes on
//   egpu::Graph g = egpu::record([&] { ... });    // calls on device data, replayed
//
// The expression inside gpu() is described at compile time (sizes, strides,
// transposes, conjugation and scalar factors of a product; the operations
// and leaves of a coefficient-wise expression) and handed to the compiled
// library; without a usable GPU the same call runs on CPU Eigen.
#pragma once

// Transparent mode: Eigen's own products go through egpu (see
// adapter/transparent.hpp). It needs Eigen's GEMM threshold set before
// Eigen is first included: define EGPU_TRANSPARENT and include this header
// first (or compile with -DEGPU_TRANSPARENT -include egpu/egpu.hpp; the
// CMake target egpu::transparent does both).
#ifdef EGPU_TRANSPARENT
#if defined(EIGEN_CORE_H) || defined(EIGEN_CORE_MODULE_H)
#error "EGPU_TRANSPARENT: include <egpu/egpu.hpp> before any Eigen header (or compile with -include egpu/egpu.hpp)"
#endif
#ifdef EIGEN_GEMM_TO_COEFFBASED_THRESHOLD
#error "EGPU_TRANSPARENT sets EIGEN_GEMM_TO_COEFFBASED_THRESHOLD itself; do not define it"
#endif
// Every GEMM product takes Eigen's coefficient-based path, where egpu
// receives it; egpu gives the small ones back to Eigen as Eigen runs them.
#define EIGEN_GEMM_TO_COEFFBASED_THRESHOLD ((std::numeric_limits<Eigen::Index>::max)())
#include <limits>
#endif

#include <Eigen/Dense>

#include "egpu/adapter/assign.hpp"
#include "egpu/adapter/gpu_expr.hpp"
#include "egpu/adapter/reduce.hpp"
#include "egpu/device.hpp"
#include "egpu/device_matrix.hpp"
#include "egpu/error.hpp"
#include "egpu/graph.hpp"
#include "egpu/options.hpp"
#include "egpu/pin.hpp"
#ifdef EGPU_TRANSPARENT
#include "egpu/adapter/transparent.hpp"
#endif

namespace egpu {

// Marks an expression to run on the GPU: a matrix product, or a
// coefficient-wise expression (whose products, if any, run on the GPU
// first). Assign the result as you would the expression itself: =,
// noalias() =, +=, -=, into any dense destination.
template <class Derived>
GpuExpr<Derived> gpu(const Eigen::DenseBase<Derived>& xpr, const Options& options = Options()) {
  return GpuExpr<Derived>(xpr.derived(), options);
}

// ---- DeviceMatrix's members that run through egpu::gpu ------------------------

namespace detail {
template <class X> struct is_gpu_expr : std::false_type {};
template <class X> struct is_gpu_expr<GpuExpr<X>> : std::true_type {};

template <class Dst, class Other, class Func>
void assign_any(Dst& dst, const Other& x, const Func& func) {
  if constexpr (is_gpu_expr<Other>::value)
    assign(dst, x, func);
  else
    assign(dst, gpu(x), func);
}
}  // namespace detail

template <class S>
template <class Other>
DeviceMatrix<S>& DeviceMatrix<S>::operator=(const Eigen::DenseBase<Other>& x) {
  detail::assign_any(*this, x.derived(), Eigen::internal::assign_op<S, typename Other::Scalar>());
  return *this;
}
template <class S>
template <class Other>
DeviceMatrix<S>& DeviceMatrix<S>::operator+=(const Eigen::DenseBase<Other>& x) {
  detail::assign_any(*this, x.derived(), Eigen::internal::add_assign_op<S, typename Other::Scalar>());
  return *this;
}
template <class S>
template <class Other>
DeviceMatrix<S>& DeviceMatrix<S>::operator-=(const Eigen::DenseBase<Other>& x) {
  detail::assign_any(*this, x.derived(), Eigen::internal::sub_assign_op<S, typename Other::Scalar>());
  return *this;
}
template <class S>
typename DeviceMatrix<S>::PlainObject DeviceMatrix<S>::to_host() const {
  PlainObject h(m_rows, m_cols);
  detail::assign(h, gpu(*this), Eigen::internal::assign_op<S, S>());
  return h;
}
template <class S>
template <class Dst>
void DeviceMatrix<S>::copy_into(Dst& dst) const {
  detail::assign(dst, gpu(*this), Eigen::internal::assign_op<typename Dst::Scalar, S>());
}

}  // namespace egpu

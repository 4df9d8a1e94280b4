// Transparent mode (EGPU_TRANSPARENT): Eigen's own dense matrix-matrix
// products go through egpu's dispatch without a change to the code that
// writes them.
//
// How: egpu.hpp sets EIGEN_GEMM_TO_COEFFBASED_THRESHOLD before Eigen is
// included, so that Eigen's GEMM product (generic_product_impl<...,
// GemmProduct>: evalTo, addTo, subTo) hands every product, whatever its
// size, to its coefficient-based path, which evaluates
//   dst func= lhs.lazyProduct(rhs)   or   dst func= s * lhs.lazyProduct(rhs)
// through call_restricted_packet_assignment_no_alias, with the operands'
// scalar factors already pulled out into s and conjugation applied. The
// overloads below are more specialized than Eigen's and are found by
// argument-dependent lookup (the functor is Eigen::internal's). Each such
// product is one call of the dispatch, above Eigen's OpenMP split; the
// dispatch then runs it on the GPU, or gives it back to Eigen exactly as
// Eigen would have run it: the coefficient-based loop below Eigen's own
// threshold (20), else its blocked GEMM (after zeroing dst for `=`).
//
// Matrix-vector products (Eigen's GemvProduct) and products of small fixed
// sizes never reach this path: they stay on CPU Eigen.
//
// Also: `dst = A * B` without noalias() goes through a temporary only where
// dst overlaps an operand (call_assignment below).
#pragma once

#include <Eigen/Core>

#include <type_traits>

#include "egpu/adapter/assign.hpp"

namespace egpu::detail {

// Eigen's threshold between its coefficient-based and GEMM products
// (GeneralProduct.h), which transparent mode moves out of the way.
constexpr Eigen::Index kEigenCoeffBasedThreshold = 20;

// Eigen's call_restricted_packet_assignment_no_alias, by another name (the
// name itself now leads back here).
template <class Dst, class Src, class Func>
void eigen_restricted_assign(Dst& dst, const Src& src, const Func& func) {
  using namespace Eigen::internal;
  using DstEvaluator = evaluator<Dst>;
  using SrcEvaluator = evaluator<Src>;
  using Kernel = restricted_packet_dense_assignment_kernel<DstEvaluator, SrcEvaluator, Func>;
  SrcEvaluator src_evaluator(src);
  resize_if_allowed(dst, src, func);
  DstEvaluator dst_evaluator(dst);
  Kernel kernel(dst_evaluator, src_evaluator, func, dst.const_cast_derived());
  dense_assignment_loop<Kernel>::run(kernel);
}

// dst func= s * lhs * rhs as Eigen 3.4 runs it (GeneralMatrixMatrix.h).
template <class Dst, class Lhs, class Rhs, class Func, class Scalar>
void eigen_product(Dst& dst, const Lhs& lhs, const Rhs& rhs, const Func& func, const Scalar& s, bool scaled) {
  using namespace Eigen::internal;
  constexpr int kind = functor_kind<Func>::value;
  static_assert(kind >= 1 && kind <= 3, "egpu transparent mode: Eigen's GEMM path assigns, adds or subtracts");
  if (rhs.rows() + dst.rows() + dst.cols() < kEigenCoeffBasedThreshold && rhs.rows() > 0) {
    if (scaled)
      eigen_restricted_assign(dst, s * lhs.lazyProduct(rhs), func);
    else
      eigen_restricted_assign(dst, lhs.lazyProduct(rhs), func);
    return;
  }
  using Impl = generic_product_impl<Lhs, Rhs, Eigen::DenseShape, Eigen::DenseShape, Eigen::GemmProduct>;
  if constexpr (kind == 1) dst.setZero();
  Impl::scaleAndAddTo(dst, lhs, rhs, kind == 3 ? Scalar(-s) : s);
}

// The product `dst func= s * lazy` that Eigen's GEMM path hands over.
template <class Dst, class Lhs, class Rhs, class Func, class Scalar>
void transparent_product(Dst& dst, const Eigen::Product<Lhs, Rhs, Eigen::LazyProduct>& lazy, const Func& func,
                         const Scalar& s, bool scaled) {
  using PScalar = typename Eigen::Product<Lhs, Rhs, Eigen::LazyProduct>::Scalar;
  constexpr bool supported = is_supported_scalar_v<PScalar> && std::is_same_v<typename Dst::Scalar, PScalar> &&
                             std::is_same_v<Scalar, PScalar> && functor_kind<Func>::value != 0;
  const auto on_cpu = [&](bool) { eigen_product(dst, lazy.lhs(), lazy.rhs(), func, s, scaled); };
  if constexpr (!supported) {
    on_cpu(false);
  } else {
    if (in_cpu_scope()) return on_cpu(false);
    // Aliasing is settled before Eigen's GEMM path hands the product over:
    // through a temporary (call_assignment below) or promised by noalias().
    assign_product_or(dst, lazy, s, Options(), func, on_cpu, Aliasing::excluded);
  }
}

}  // namespace egpu::detail

namespace Eigen::internal {

template <class Dst, class Lhs, class Rhs, class Func>
void call_restricted_packet_assignment_no_alias(Dst& dst, const Product<Lhs, Rhs, LazyProduct>& src,
                                                const Func& func) {
  using Scalar = typename Product<Lhs, Rhs, LazyProduct>::Scalar;
  egpu::detail::transparent_product(dst, src, func, Scalar(1), false);
}

template <class Dst, class S1, class S2, class Plain, class Lhs, class Rhs, class Func>
void call_restricted_packet_assignment_no_alias(
    Dst& dst,
    const CwiseBinaryOp<scalar_product_op<S1, S2>, const CwiseNullaryOp<scalar_constant_op<S1>, Plain>,
                        const Product<Lhs, Rhs, LazyProduct>>& src,
    const Func& func) {
  egpu::detail::transparent_product(dst, src.rhs(), func, src.lhs().functor().m_other, true);
}

// `dst = A * B` (and +=, -=) without noalias(): Eigen evaluates every
// product into a temporary first, in case dst is one of its operands, then
// copies it into dst: at N = 8192 doubles the copy alone takes longer than
// the GPU's product. Here the temporary is made only where dst's memory
// overlaps an operand's (Eigen's aliasing rule kept, its cost dropped
// elsewhere); each path then reaches the hooks above.
template <class Dst, class Lhs, class Rhs, class Func,
          std::enable_if_t<!is_noalias_wrapper<Dst>::value &&
                               std::is_same_v<typename evaluator_traits<Dst>::Shape, DenseShape> &&
                               std::is_same_v<typename evaluator_traits<Lhs>::Shape, DenseShape> &&
                               std::is_same_v<typename evaluator_traits<Rhs>::Shape, DenseShape>,
                           int> = 0>
void call_assignment(Dst& dst, const Product<Lhs, Rhs, DefaultProduct>& src, const Func& func) {
  if (egpu::detail::may_overlap_operands(dst, src)) {
    typename plain_matrix_type<Product<Lhs, Rhs, DefaultProduct>>::type tmp(src);
    call_assignment_no_alias(dst, tmp, func);
  } else {
    call_assignment_no_alias(dst, src, func);
  }
}

}  // namespace Eigen::internal

#include "egpu/adapter/transparent_rank_update.hpp"

// Recognises a product plus a scaled matrix at the top of a coefficient-wise
// expression: alpha * (A * B) + beta * C, in either order, with + or -. When
// C is the destination itself, the whole assignment is one GEMM with its
// beta (C read and written in place by the product's kernels), without a
// pass of its own over C.
#pragma once

#include <Eigen/Dense>

#include <type_traits>

#include "egpu/adapter/describe.hpp"
#include "egpu/adapter/product_parts.hpp"

namespace egpu::detail {

// A matrix egpu reads in place (describable_v) under a scalar factor: C, s * C, C * s, -C.
template <class X, class = void>
struct scaled_matrix {
  static constexpr bool matches = false;
};
template <class X>
struct scaled_matrix<X, std::enable_if_t<describable_v<X>>> {
  static constexpr bool matches = true;
  static const X& matrix(const X& x) { return x; }
  static typename X::Scalar factor(const X&) { return typename X::Scalar(1); }
};
template <class S1, class S2, class Plain, class Inner>
struct scaled_matrix<Eigen::CwiseBinaryOp<Eigen::internal::scalar_product_op<S1, S2>,
                                          const Eigen::CwiseNullaryOp<Eigen::internal::scalar_constant_op<S1>, Plain>,
                                          const Inner>,
                     std::enable_if_t<describable_v<Inner>>> {
  static constexpr bool matches = true;
  template <class X> static const Inner& matrix(const X& x) { return x.rhs(); }
  template <class X> static auto factor(const X& x) { return x.lhs().functor().m_other; }
};
template <class S1, class S2, class Plain, class Inner>
struct scaled_matrix<Eigen::CwiseBinaryOp<Eigen::internal::scalar_product_op<S1, S2>, const Inner,
                                          const Eigen::CwiseNullaryOp<Eigen::internal::scalar_constant_op<S2>, Plain>>,
                     std::enable_if_t<describable_v<Inner>>> {
  static constexpr bool matches = true;
  template <class X> static const Inner& matrix(const X& x) { return x.lhs(); }
  template <class X> static auto factor(const X& x) { return x.rhs().functor().m_other; }
};
template <class S, class Inner>
struct scaled_matrix<Eigen::CwiseUnaryOp<Eigen::internal::scalar_opposite_op<S>, const Inner>,
                     std::enable_if_t<describable_v<Inner>>> {
  static constexpr bool matches = true;
  template <class X> static const Inner& matrix(const X& x) { return x.nestedExpression(); }
  template <class X> static auto factor(const X&) { return S(-1); }
};

// P op C or C op P (op: + or -) with P a product form and C a scaled
// matrix: the two terms, and the signs op gives them.
template <class Xpr>
struct gemm_update_parts {
  static constexpr bool matches = false;
};
template <class L, class R, int Op>
struct gemm_update_terms {
  static constexpr bool product_left = product_parts<L>::is_product && scaled_matrix<R>::matches;
  static constexpr bool matches = product_left || (product_parts<R>::is_product && scaled_matrix<L>::matches);
  using P = std::conditional_t<product_left, L, R>;
  using C = std::conditional_t<product_left, R, L>;
  // Op is +1 for a sum, -1 for a difference (whose right term is negated).
  static constexpr int product_sign = product_left ? 1 : Op;
  static constexpr int matrix_sign = product_left ? Op : 1;
  template <class X> static const P& product_term(const X& x) {
    if constexpr (product_left) return x.lhs(); else return x.rhs();
  }
  template <class X> static const C& matrix_term(const X& x) {
    if constexpr (product_left) return x.rhs(); else return x.lhs();
  }
};
template <class S1, class S2, class L, class R>
struct gemm_update_parts<Eigen::CwiseBinaryOp<Eigen::internal::scalar_sum_op<S1, S2>, const L, const R>>
    : gemm_update_terms<L, R, 1> {};
template <class S1, class S2, class L, class R>
struct gemm_update_parts<Eigen::CwiseBinaryOp<Eigen::internal::scalar_difference_op<S1, S2>, const L, const R>>
    : gemm_update_terms<L, R, -1> {};

}  // namespace egpu::detail

// Recognises a product at the top of an expression given to egpu::gpu, with
// the scalar factors Eigen leaves around it: A * B, s * (A * B), (A * B) * s,
// -(A * B). (Factors on the operands, s * A * B or A * B.transpose() * s, are
// inside the product and come out through Eigen's blas_traits.)
#pragma once

#include <Eigen/Dense>

namespace egpu::detail {

template <class Xpr>
struct product_parts {
  static constexpr bool is_product = false;
};

template <class Lhs, class Rhs, int Option>
struct product_parts<Eigen::Product<Lhs, Rhs, Option>> {
  using Product = Eigen::Product<Lhs, Rhs, Option>;
  using Scalar = typename Product::Scalar;
  static constexpr bool is_product = true;
  static const Product& product(const Product& x) { return x; }
  static Scalar factor(const Product&) { return Scalar(1); }
};

template <class S1, class S2, class Plain, class Inner>
struct product_parts<Eigen::CwiseBinaryOp<Eigen::internal::scalar_product_op<S1, S2>,
                                          const Eigen::CwiseNullaryOp<Eigen::internal::scalar_constant_op<S1>, Plain>,
                                          const Inner>> : product_parts<Inner> {
  using Base = product_parts<Inner>;
  template <class X>
  static auto& product(const X& x) { return Base::product(x.rhs()); }
  template <class X>
  static auto factor(const X& x) { return x.lhs().functor().m_other * Base::factor(x.rhs()); }
};

template <class S1, class S2, class Plain, class Inner>
struct product_parts<Eigen::CwiseBinaryOp<Eigen::internal::scalar_product_op<S1, S2>, const Inner,
                                          const Eigen::CwiseNullaryOp<Eigen::internal::scalar_constant_op<S2>, Plain>>>
    : product_parts<Inner> {
  using Base = product_parts<Inner>;
  template <class X>
  static auto& product(const X& x) { return Base::product(x.lhs()); }
  template <class X>
  static auto factor(const X& x) { return Base::factor(x.lhs()) * x.rhs().functor().m_other; }
};

template <class S, class Inner>
struct product_parts<Eigen::CwiseUnaryOp<Eigen::internal::scalar_opposite_op<S>, const Inner>>
    : product_parts<Inner> {
  using Base = product_parts<Inner>;
  template <class X>
  static auto& product(const X& x) { return Base::product(x.nestedExpression()); }
  template <class X>
  static auto factor(const X& x) { return -Base::factor(x.nestedExpression()); }
};

}  // namespace egpu::detail

// Without a usable device a DeviceMatrix holds host memory, and an
// expression reading one runs on CPU Eigen: host_view(x) rebuilds x with
// every DeviceMatrix replaced by an Eigen::Map of its memory (the nodes
// holds_device_v looks through; any other node holding a DeviceMatrix does
// not compile, as on the GPU path). Subexpressions without a DeviceMatrix
// are kept as they are.
#pragma once

#include <Eigen/Dense>

#include <type_traits>

#include "egpu/adapter/describe.hpp"
#include "egpu/adapter/gpu_expr.hpp"

namespace egpu::detail {

template <class X, class = void>
struct host_view_of {
  static const X& get(const X& x) { return x; }
};

template <class X>
decltype(auto) host_view(const X& x) {
  return host_view_of<std::remove_cv_t<X>>::get(x);
}
template <class X>
using host_view_t = std::remove_cv_t<std::remove_reference_t<decltype(host_view(std::declval<const X&>()))>>;

template <class X>
using if_device = std::enable_if_t<holds_device_v<X>>;

template <class S>
struct host_view_of<DeviceMatrix<S>> {
  static auto get(const DeviceMatrix<S>& x) {
    return Eigen::Map<Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic>>(x.device_data(), x.rows(), x.cols());
  }
};
template <class X, int R, int C, bool I>
struct host_view_of<Eigen::Block<X, R, C, I>, if_device<X>> {
  static auto get(const Eigen::Block<X, R, C, I>& x) {
    host_view_t<X> nested = host_view(x.nestedExpression());
    return Eigen::Block<host_view_t<X>, R, C, I>(nested, x.startRow(), x.startCol(), x.rows(), x.cols());
  }
};
template <class X>
struct host_view_of<Eigen::Transpose<X>, if_device<X>> {
  static auto get(const Eigen::Transpose<X>& x) {
    host_view_t<X> nested = host_view(x.nestedExpression());
    return Eigen::Transpose<host_view_t<X>>(nested);
  }
};
template <class X>
struct host_view_of<Eigen::ArrayWrapper<X>, if_device<X>> {
  static auto get(const Eigen::ArrayWrapper<X>& x) {
    host_view_t<X> nested = host_view(x.nestedExpression());
    return Eigen::ArrayWrapper<host_view_t<X>>(nested);
  }
};
template <class X>
struct host_view_of<Eigen::MatrixWrapper<X>, if_device<X>> {
  static auto get(const Eigen::MatrixWrapper<X>& x) {
    host_view_t<X> nested = host_view(x.nestedExpression());
    return Eigen::MatrixWrapper<host_view_t<X>>(nested);
  }
};
template <class F, class X>
struct host_view_of<Eigen::CwiseUnaryOp<F, X>, if_device<X>> {
  static auto get(const Eigen::CwiseUnaryOp<F, X>& x) {
    return Eigen::CwiseUnaryOp<F, const host_view_t<X>>(host_view(x.nestedExpression()), x.functor());
  }
};
template <class F, class L, class R>
struct host_view_of<Eigen::CwiseBinaryOp<F, L, R>, std::enable_if_t<holds_device_v<L> || holds_device_v<R>>> {
  static auto get(const Eigen::CwiseBinaryOp<F, L, R>& x) {
    return Eigen::CwiseBinaryOp<F, const host_view_t<L>, const host_view_t<R>>(host_view(x.lhs()), host_view(x.rhs()),
                                                                               x.functor());
  }
};
template <class L, class R, int O>
struct host_view_of<Eigen::Product<L, R, O>, std::enable_if_t<holds_device_v<L> || holds_device_v<R>>> {
  static auto get(const Eigen::Product<L, R, O>& x) {
    return Eigen::Product<host_view_t<L>, host_view_t<R>, O>(host_view(x.lhs()), host_view(x.rhs()));
  }
};
template <class C, class T, class E>
struct host_view_of<Eigen::Select<C, T, E>,
                    std::enable_if_t<holds_device_v<C> || holds_device_v<T> || holds_device_v<E>>> {
  static auto get(const Eigen::Select<C, T, E>& x) {
    return Eigen::Select<host_view_t<C>, host_view_t<T>, host_view_t<E>>(
        host_view(x.conditionMatrix()), host_view(x.thenMatrix()), host_view(x.elseMatrix()));
  }
};
template <class X, int R, int C>
struct host_view_of<Eigen::Replicate<X, R, C>, if_device<X>> {
  static auto get(const Eigen::Replicate<X, R, C>& x) {
    const auto& v = x.nestedExpression();
    return Eigen::Replicate<host_view_t<X>, R, C>(host_view(v), v.rows() == 0 ? 0 : x.rows() / v.rows(),
                                                  v.cols() == 0 ? 0 : x.cols() / v.cols());
  }
};
template <class X, class F, int D>
struct host_view_of<Eigen::PartialReduxExpr<X, F, D>, if_device<X>> {
  static auto get(const Eigen::PartialReduxExpr<X, F, D>& x) {
    return Eigen::PartialReduxExpr<host_view_t<X>, F, D>(host_view(x.nestedExpression()), x.functor());
  }
};

}  // namespace egpu::detail

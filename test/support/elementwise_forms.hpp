// The coefficient-wise expression forms the tests run, over every scalar
// type: arithmetic, each function, broadcasting, layouts (row-major, blocks,
// transposed leaves and subexpressions), comparisons, select and casts, on
// random data with NaN, +-Inf and zeros sprinkled in. for_each_form calls
// check(expression, name) once per form.
#pragma once

#include <Eigen/Dense>

#include <complex>
#include <limits>

#include "support/test_support.hpp"

namespace egpu_test {

// Random values with NaN, +-Inf and zeros sprinkled in.
template <class S> S sprinkled() {
  using R = typename Eigen::NumTraits<S>::Real;
  auto part = []() -> R {
    const Index u = uniform_index(0, 99);
    if (u < 3) return std::numeric_limits<R>::quiet_NaN();
    if (u < 5) return std::numeric_limits<R>::infinity();
    if (u < 7) return -std::numeric_limits<R>::infinity();
    if (u < 10) return R(0);
    return R(2) * random_scalar<R>();
  };
  if constexpr (Eigen::NumTraits<S>::IsComplex) return S(part(), part());
  else return part();
}
template <class M> M sprinkled(Index rows, Index cols) {
  M m(rows, cols);
  for (Index j = 0; j < cols; ++j)
    for (Index i = 0; i < rows; ++i) m(i, j) = sprinkled<typename M::Scalar>();
  return m;
}

template <class S, class F> void for_each_form(Index rows, Index cols, F&& check) {
  using R = typename Eigen::NumTraits<S>::Real;
  using A = Eigen::Array<S, Eigen::Dynamic, Eigen::Dynamic>;
  using M = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic>;
  using RowA = Eigen::Array<S, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const A a = sprinkled<A>(rows, cols), b = sprinkled<A>(rows, cols);
  const M ma = a.matrix(), mb = b.matrix();
  const RowA rb = sprinkled<RowA>(rows, cols);
  const A big = sprinkled<A>(rows + 3, cols + 2);
  const auto blk = big.block(2, 1, rows, cols);
  const Eigen::Matrix<S, Eigen::Dynamic, 1> v = sprinkled<Eigen::Matrix<S, Eigen::Dynamic, 1>>(rows, 1);
  const Eigen::Matrix<S, 1, Eigen::Dynamic> r = sprinkled<Eigen::Matrix<S, 1, Eigen::Dynamic>>(1, cols);
  const A at = sprinkled<A>(cols, rows);

  check(a * b + a.exp(), "a*b+exp(a)");
  check(R(2) * a.sin() - b / (R(1) + a.abs()), "2 sin(a) - b / (1 + |a|)");
  check(ma.cwiseProduct(mb) + ma.cwiseAbs2(), "A.cwiseProduct(B) + A.cwiseAbs2()");
  check(ma.colwise() - v, "A.colwise() - v");
  check(ma.rowwise() + r, "A.rowwise() + r");
  check(rb * blk + at.transpose(), "row-major * block + transposed");
  check((at + at.square()).transpose() * a, "transposed subexpression");
  check((a + b).transpose().transpose() * a.square(), "twice transposed subexpression");
  check(a.sqrt() + a.rsqrt() + a.cube() + a.inverse() + a.expm1() + a.log() + a.log1p() + a.log10(),
                "roots, powers, logarithms");
  check(a.cos() * a.tan() + a.asin() - a.acos() + a.atan() + a.sinh() * a.cosh() - a.tanh(),
                "trigonometric and hyperbolic");
  check(a.abs2() + a.abs() + (-a).abs(), "abs, abs2, negate");
  check(a.template cast<std::complex<double>>() + b.template cast<std::complex<double>>(), "casts");
  if constexpr (Eigen::NumTraits<S>::IsComplex) {
    check(a.real() * b.imag() + a.conjugate().real() + a.arg(), "real imag conj arg");
    check(a.pow(b), "pow");
    check((a == b).select(a, b * S(R(0.5), R(-1))), "== select");
  } else {
    check((a > R(0)).select(a, R(0.1) * a), "select(a > 0)");
    check(a.min(b) + a.max(b) + a.floor() + a.ceil() + a.round(), "min max floor ceil round");
    check(a.abs().pow(R(2.5)) + a.pow(b), "pow");
    check(((a < b) && (a >= R(-1))).select(a, b) + (!(a <= b) || (a != b)).template cast<R>(),
                  "comparisons, logic, bool cast");
  }
}

}  // namespace egpu_test

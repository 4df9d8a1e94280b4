// egpu::GpuExpr<Xpr>: the expression egpu::gpu(xpr) returns. It is an Eigen
// expression of its own (a MatrixBase or ArrayBase like Xpr) so that every
// assignment form (=, noalias() =, +=, -=) and every destination Eigen
// accepts reach egpu through Eigen's own Assignment machinery; used inside a
// larger expression it evaluates into a temporary, like an Eigen product.
#pragma once

#include <Eigen/Dense>

#include <cmath>
#include <type_traits>

#include "egpu/options.hpp"

namespace egpu {

template <class Xpr>
class GpuExpr;

namespace detail {
// Whether dst may share elements with the expression's operands: Eigen's
// `=`, `+=` and `-=` allow it; noalias() promises they share none, and so
// does a fresh destination (a temporary, a matrix constructed from the
// expression).
enum class Aliasing : bool { possible, excluded };
// Runs `dst func= src` (func: assign, add-assign, sub-assign, ...); in
// adapter/assign.hpp.
template <class Dst, class Xpr, class Func>
void assign(Dst& dst, const GpuExpr<Xpr>& src, const Func& func, Aliasing aliasing = Aliasing::possible);
// The reductions of GpuExpr's members; in adapter/reduce.hpp.
template <class Xpr>
struct FullReductions;
}  // namespace detail

}  // namespace egpu

namespace Eigen::internal {

// A GpuExpr looks like the plain object it evaluates to, minus direct access
// and write access: nothing may take its address or assign into it.
template <class Xpr>
struct traits<egpu::GpuExpr<Xpr>> : traits<typename Xpr::PlainObject> {
  enum {
    Flags = (traits<typename Xpr::PlainObject>::Flags | EvalBeforeNestingBit) &
            ~(DirectAccessBit | LvalueBit)
  };
};

// Used inside a larger expression (gpu(A * B) + D, gpu(A * B).sum()), a
// GpuExpr is computed once into a temporary, the way Eigen evaluates a
// product.
template <class Xpr>
struct evaluator<egpu::GpuExpr<Xpr>> : evaluator<typename Xpr::PlainObject> {
  using PlainObject = typename Xpr::PlainObject;
  using Base = evaluator<PlainObject>;
  using Scalar = typename PlainObject::Scalar;

  explicit evaluator(const egpu::GpuExpr<Xpr>& xpr) : m_result(xpr.rows(), xpr.cols()) {
    egpu::detail::assign(m_result, xpr, assign_op<Scalar, Scalar>(), egpu::detail::Aliasing::excluded);
    ::new (static_cast<Base*>(this)) Base(m_result);
  }

 protected:
  PlainObject m_result;
};

// Every assignment whose source is a GpuExpr goes to egpu. The Weak slot is
// fixed to void, which makes this more specialized than Eigen's generic
// dense-to-dense assignment. Eigen comes here through
// call_assignment_no_alias: from noalias(), a constructor, a temporary, and
// from call_assignment below.
template <class Dst, class Xpr, class Func>
struct Assignment<Dst, egpu::GpuExpr<Xpr>, Func, Dense2Dense, void> {
  static void run(Dst& dst, const egpu::GpuExpr<Xpr>& src, const Func& func,
                  egpu::detail::Aliasing aliasing = egpu::detail::Aliasing::excluded) {
    egpu::detail::assign(dst, src, func, aliasing);
  }
};

template <class X> struct is_noalias_wrapper : std::false_type {};
template <class X, template <class> class B> struct is_noalias_wrapper<NoAlias<X, B>> : std::true_type {};

// `dst = gpu(xpr)`, `+=`, `-=` without noalias(), where dst may be one of
// the operands. More specialized than Eigen's call_assignment and found by
// argument-dependent lookup (the functor is Eigen::internal's). The vector
// transposition is call_assignment_no_alias's (AssignEvaluator.h): a row
// vector takes a column vector's value, and the other way round.
template <class Dst, class Xpr, class Func, std::enable_if_t<!is_noalias_wrapper<Dst>::value, int> = 0>
void call_assignment(Dst& dst, const egpu::GpuExpr<Xpr>& src, const Func& func) {
  using Src = egpu::GpuExpr<Xpr>;
  constexpr bool transpose =
      ((int(Dst::RowsAtCompileTime) == 1 && int(Src::ColsAtCompileTime) == 1) ||
       (int(Dst::ColsAtCompileTime) == 1 && int(Src::RowsAtCompileTime) == 1)) &&
      int(Dst::SizeAtCompileTime) != 1;
  using Actual = std::conditional_t<transpose, Transpose<Dst>, Dst&>;
  Actual actual(dst);
  Assignment<std::remove_reference_t<Actual>, Src, Func, Dense2Dense, void>::run(actual, src, func,
                                                                                egpu::detail::Aliasing::possible);
}

}  // namespace Eigen::internal

namespace egpu {

template <class Xpr>
class GpuExpr : public Eigen::internal::dense_xpr_base<GpuExpr<Xpr>>::type {
 public:
  using Base = typename Eigen::internal::dense_xpr_base<GpuExpr>::type;
  EIGEN_DENSE_PUBLIC_INTERFACE(GpuExpr)

  GpuExpr(const Xpr& xpr, const Options& options) : m_xpr(xpr), m_options(options) {}

  Eigen::Index rows() const { return m_xpr.rows(); }
  Eigen::Index cols() const { return m_xpr.cols(); }

  const Xpr& expression() const { return m_xpr; }
  const Options& options() const { return m_options; }

  // Reductions run where the expression is computed, fused with it; only
  // the value comes back. The same value from run to run (a fixed order of
  // combination); sums compensated. minCoeff and maxCoeff of real values
  // are NaN when any value is NaN; mean, minCoeff and maxCoeff of an empty
  // expression throw egpu::error. Without a device, CPU Eigen computes them.
  Scalar sum() const { return detail::FullReductions<Xpr>::sum(m_xpr, m_options); }
  Scalar mean() const { return detail::FullReductions<Xpr>::mean(m_xpr, m_options); }
  Scalar prod() const { return detail::FullReductions<Xpr>::prod(m_xpr, m_options); }
  Scalar minCoeff() const { return detail::FullReductions<Xpr>::template extreme<false>(m_xpr, m_options); }
  Scalar maxCoeff() const { return detail::FullReductions<Xpr>::template extreme<true>(m_xpr, m_options); }
  RealScalar squaredNorm() const { return detail::FullReductions<Xpr>::squared_norm(m_xpr, m_options); }
  RealScalar norm() const {
    using std::sqrt;
    return sqrt(squaredNorm());
  }
  // Nonzero (true) values: how many, whether all are, whether any is.
  Eigen::Index count() const { return detail::FullReductions<Xpr>::count(m_xpr, m_options); }
  bool all() const { return count() == rows() * cols(); }
  bool any() const { return count() > 0; }

 private:
  // Expressions by value (they are small and may be temporaries of the
  // caller's full expression), plain objects by reference: Eigen's rule.
  typename Eigen::internal::ref_selector<Xpr>::type m_xpr;
  Options m_options;
};

}  // namespace egpu

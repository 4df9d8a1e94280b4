// Reductions through egpu::gpu: the members of GpuExpr (gpu(x).sum(), ...)
// and partial reductions (gpu(A.colwise().sum())): the reduced expression is
// described as a coefficient-wise program, the library reduces it on the
// GPU, and the values land in a host temporary before they reach the
// destination (so a failed call writes nothing, and a destination that is
// also an operand is read first). Without a device, CPU Eigen reduces.
#pragma once

#include <Eigen/Dense>

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <type_traits>
#include <vector>

#include "egpu/adapter/describe.hpp"
#include "egpu/adapter/elementwise_parts.hpp"
#include "egpu/adapter/host_view.hpp"
#include "egpu/detail/reduction.hpp"
#include "egpu/device.hpp"
#include "egpu/error.hpp"

namespace egpu::detail {

// ---- full reductions (members of GpuExpr) -------------------------------------

// The reduction of x's values (after abs2 when `squared`), as a value of
// type R (the value type of the program, or std::int64_t for count).
template <class R, class Xpr>
R reduce_all(const Xpr& x, const Options& options, ReduceOp op, bool squared) {
  std::vector<std::shared_ptr<void>> temporaries;
  ElementwiseProgram program = describe_elementwise(x, temporaries);
  if (squared) append_abs2(program);
  Reduction r;
  r.op = op;
  R result{};
  reduce(program, r, &result, options);
  return result;
}

// GpuExpr's members, each with CPU Eigen's answer when there is no device
// (on Maps of a DeviceMatrix's memory, which is then host memory).
// minCoeff and maxCoeff propagate NaN on both paths (Eigen's default leaves
// the result of a NaN unspecified).
template <class Xpr>
struct FullReductions {
  using Scalar = typename Xpr::Scalar;
  using Real = typename Eigen::NumTraits<Scalar>::Real;
  static constexpr bool kNumeric = is_element_scalar_v<Scalar>;

  // f(x) on CPU Eigen (on host views: without a device a DeviceMatrix's
  // memory is host memory) or g() on the GPU, as the dispatch decides.
  template <class R, class F, class G>
  static R run(const Xpr& x, const Options& o, F&& f, G&& g) {
    constexpr bool on_device = holds_device_v<Xpr>;
    const Decision d = choose<on_device>(gate_for<on_device>(o, 0, static_cast<double>(x.size())),
                                         [&] { return decide_call(x, MatrixDesc{}, 1, o, true); });
    const CallLog log(d);
    if (!d.gpu) {
      CpuScope scope;
      return static_cast<R>(f(host_view(x)));
    }
    return g();
  }

  static Scalar sum(const Xpr& x, const Options& o) {
    static_assert(kNumeric, "egpu::gpu(x).sum(): x's values are float, double or complex (count() counts booleans)");
    return run<Scalar>(x, o, [](const auto& h) { return h.sum(); },
                       [&] { return reduce_all<Scalar>(x, o, ReduceOp::sum, false); });
  }
  static Scalar prod(const Xpr& x, const Options& o) {
    static_assert(kNumeric, "egpu::gpu(x).prod(): x's values are float, double or complex");
    return run<Scalar>(x, o, [](const auto& h) { return h.prod(); },
                       [&] { return reduce_all<Scalar>(x, o, ReduceOp::prod, false); });
  }
  static Scalar mean(const Xpr& x, const Options& o) {
    static_assert(kNumeric, "egpu::gpu(x).mean(): x's values are float, double or complex");
    if (x.size() == 0) throw error("egpu::gpu(x).mean(): x is empty");
    return run<Scalar>(x, o, [](const auto& h) { return h.mean(); }, [&] {
      return reduce_all<Scalar>(x, o, ReduceOp::sum, false) / Scalar(static_cast<Real>(x.size()));
    });
  }
  template <bool Max>
  static Scalar extreme(const Xpr& x, const Options& o) {
    static_assert(std::is_same_v<Scalar, float> || std::is_same_v<Scalar, double>,
                  "egpu::gpu(x).minCoeff()/maxCoeff(): x's values are float or double (complex values have no order)");
    if (x.size() == 0) throw error(Max ? "egpu::gpu(x).maxCoeff(): x is empty" : "egpu::gpu(x).minCoeff(): x is empty");
    return run<Scalar>(
        x, o,
        [](const auto& h) {
          return Max ? h.template maxCoeff<Eigen::PropagateNaN>() : h.template minCoeff<Eigen::PropagateNaN>();
        },
        [&] { return reduce_all<Scalar>(x, o, Max ? ReduceOp::max : ReduceOp::min, false); });
  }
  static Real squared_norm(const Xpr& x, const Options& o) {
    static_assert(kNumeric, "egpu::gpu(x).squaredNorm()/norm(): x's values are float, double or complex");
    return run<Real>(x, o, [](const auto& h) { return h.matrix().squaredNorm(); },
                     [&] { return reduce_all<Real>(x, o, ReduceOp::sum, true); });
  }
  static Eigen::Index count(const Xpr& x, const Options& o) {
    return run<Eigen::Index>(x, o, [](const auto& h) { return h.count(); }, [&] {
      return static_cast<Eigen::Index>(reduce_all<std::int64_t>(x, o, ReduceOp::count, false));
    });
  }
};

// ---- partial reductions: gpu(A.colwise().sum()) and the like -------------------

template <class MemberOp> struct reduce_op_of { static constexpr bool known = false; };
template <ReduceOp Op> struct reduce_op_is {
  static constexpr bool known = true;
  static constexpr ReduceOp value = Op;
};
template <class R, class S> struct reduce_op_of<Eigen::internal::member_sum<R, S>> : reduce_op_is<ReduceOp::sum> {};
template <class R, class S> struct reduce_op_of<Eigen::internal::member_prod<R, S>> : reduce_op_is<ReduceOp::prod> {};
template <class R, class S> struct reduce_op_of<Eigen::internal::member_minCoeff<R, S>> : reduce_op_is<ReduceOp::min> {};
template <class R, class S> struct reduce_op_of<Eigen::internal::member_maxCoeff<R, S>> : reduce_op_is<ReduceOp::max> {};

// Named in the compiler's message for a partial reduction egpu does not run.
template <class MemberOp>
struct egpu_gpu_cannot_run_this_partial_reduction {
  static_assert(reduce_op_of<MemberOp>::known,
                "egpu::gpu: colwise()/rowwise() reductions on the GPU are sum, mean, prod, minCoeff, maxCoeff, "
                "squaredNorm and norm; the reduction is named in the instantiation below");
};

// The reduction of a PartialReduxExpr (finish none), and the program of the
// expression it reduces.
template <class M, class Op, int Direction>
Reduction partial_reduction(const Eigen::PartialReduxExpr<M, Op, Direction>&) {
  (void)sizeof(egpu_gpu_cannot_run_this_partial_reduction<Op>);
  Reduction r;
  r.op = reduce_op_of<Op>::value;
  r.axis = Direction == Eigen::Vertical ? ReduceAxis::each_column : ReduceAxis::each_row;
  return r;
}

// What the root of gpu(...) may be: a partial reduction, its norm() (the
// square root of the reduction) or its mean() (the reduction over a
// constant). `matches` is false for anything else.
template <class Xpr>
struct partial_redux_parts {
  static constexpr bool matches = false;
};
template <class M, class Op, int Direction>
struct partial_redux_parts<Eigen::PartialReduxExpr<M, Op, Direction>> {
  using Redux = Eigen::PartialReduxExpr<M, Op, Direction>;
  static constexpr bool matches = true;
  static const Redux& redux(const Redux& x) { return x; }
  static Reduction reduction(const Redux& x) { return partial_reduction(x); }
};
template <class S, class M, class Op, int Direction>
struct partial_redux_parts<
    Eigen::CwiseUnaryOp<Eigen::internal::scalar_sqrt_op<S>, const Eigen::PartialReduxExpr<M, Op, Direction>>> {
  using Redux = Eigen::PartialReduxExpr<M, Op, Direction>;
  using Xpr = Eigen::CwiseUnaryOp<Eigen::internal::scalar_sqrt_op<S>, const Redux>;
  static constexpr bool matches = !Eigen::NumTraits<S>::IsComplex;
  static const Redux& redux(const Xpr& x) { return x.nestedExpression(); }
  static Reduction reduction(const Xpr& x) {
    Reduction r = partial_reduction(redux(x));
    r.finish = ReduceFinish::sqrt;
    return r;
  }
};
template <class S, class M, class Op, int Direction, class P>
struct partial_redux_parts<Eigen::CwiseBinaryOp<Eigen::internal::scalar_quotient_op<S, S>,
                                                const Eigen::PartialReduxExpr<M, Op, Direction>,
                                                const Eigen::CwiseNullaryOp<Eigen::internal::scalar_constant_op<S>, P>>> {
  using Redux = Eigen::PartialReduxExpr<M, Op, Direction>;
  using Xpr = Eigen::CwiseBinaryOp<Eigen::internal::scalar_quotient_op<S, S>, const Redux,
                                   const Eigen::CwiseNullaryOp<Eigen::internal::scalar_constant_op<S>, P>>;
  static constexpr bool matches = true;
  static const Redux& redux(const Xpr& x) { return x.lhs(); }
  static Reduction reduction(const Xpr& x) {
    Reduction r = partial_reduction(redux(x));
    r.finish = ReduceFinish::divide;
    r.divisor = std::complex<double>(x.rhs().functor().m_other);
    return r;
  }
};

// The value of a partial reduction root (see partial_redux_parts) as a plain
// object of its shape, computed on the GPU.
template <class Xpr>
typename Xpr::PlainObject partial_reduction_on_gpu(const Xpr& x, const Options& options) {
  using Parts = partial_redux_parts<Xpr>;
  using Scalar = typename Xpr::Scalar;
  static_assert(is_element_scalar_v<Scalar>,
                "egpu::gpu: a partial reduction's values are float, double, std::complex<float> or "
                "std::complex<double>");
  const auto& redux = Parts::redux(x);
  std::vector<std::shared_ptr<void>> temporaries;
  const ElementwiseProgram program = describe_elementwise(redux.nestedExpression(), temporaries);
  typename Xpr::PlainObject value(x.rows(), x.cols());
  if (value.size() > 0) reduce(program, Parts::reduction(x), value.data(), options);
  return value;
}

// CPU Eigen's value of a partial reduction root, with the GPU's NaN rule
// for minCoeff and maxCoeff: a column (row) holding a NaN gives NaN.
template <class Xpr>
typename Xpr::PlainObject partial_reduction_on_cpu(const Xpr& x) {
  using Parts = partial_redux_parts<Xpr>;
  typename Xpr::PlainObject value = x;
  const Reduction r = Parts::reduction(x);
  if constexpr (!Eigen::NumTraits<typename Xpr::Scalar>::IsComplex) {
    if (r.op == ReduceOp::min || r.op == ReduceOp::max) {
      const auto& reduced = Parts::redux(x).nestedExpression();
      const typename std::decay_t<decltype(reduced)>::PlainObject values = reduced;
      const bool down_columns = r.axis == ReduceAxis::each_column;
      for (Eigen::Index k = 0; k < value.size(); ++k)
        if (down_columns ? values.col(k).hasNaN() : values.row(k).hasNaN())
          value(k) = std::numeric_limits<typename Xpr::Scalar>::quiet_NaN();
    }
  }
  return value;
}

template <class Dst, class Value, class Func>
void assign_from_temporary(Dst& dst, const Value& value, const Options& options, const Func& func);

// dst func= x for a partial reduction root (on the host when neither holds
// a DeviceMatrix and there is no device; assign makes them host views). A
// destination in device memory gets the values through a device temporary,
// without a trip through host memory (so a recording can hold it), unless
// the reduction reads no element.
template <class Dst, class Xpr, class Func>
void assign_partial_reduction(Dst& dst, const Xpr& x, const Options& options, const Func& func) {
  constexpr bool on_device = holds_device_v<Xpr> || is_device_view_v<Dst>;
  const auto& reduced = partial_redux_parts<Xpr>::redux(x).nestedExpression();
  const Decision decision = choose<on_device>(gate_for<on_device>(options, 0, static_cast<double>(reduced.size())),
                                              [&] { return decide_call(reduced, MatrixDesc{}, 1, options, true); });
  const CallLog log(decision);
  if constexpr (!on_device) {
    if (!decision.gpu) {
      CpuScope scope;
      return Eigen::internal::call_assignment_no_alias(dst, partial_reduction_on_cpu(x), func);
    }
  }
  if constexpr (is_device_view_v<Dst>) {
    using Parts = partial_redux_parts<Xpr>;
    if (reduced.size() > 0) {
      std::vector<std::shared_ptr<void>> temporaries;
      const ElementwiseProgram program = describe_elementwise(reduced, temporaries);
      DeviceMatrix<typename Xpr::Scalar> value(x.rows(), x.cols());
      reduce(program, Parts::reduction(x), describe_any(value).data, options, true);
      return assign_from_temporary(dst, value, options, func);
    }
  }
  assign_from_temporary(dst, partial_reduction_on_gpu(x, options), options, func);
}

// A partial reduction inside a larger coefficient-wise expression: reduced
// on the GPU into a temporary, which becomes a leaf.
template <class M, class Op, int Direction>
struct ew_node<Eigen::PartialReduxExpr<M, Op, Direction>> {
  using Xpr = Eigen::PartialReduxExpr<M, Op, Direction>;
  static int emit(const Xpr& x, ProgramBuilder& b, bool transposed) {
    using S = typename Xpr::Scalar;
    (void)sizeof(egpu_gpu_cannot_run_this_partial_reduction<Op>);
    if (b.deferred() != nullptr) return transposed ? b.nowhere_leaf<S>(x.cols(), x.rows()) : b.nowhere_leaf<S>(x.rows(), x.cols());
    return b.temporary_leaf<S>(x.rows(), x.cols(), transposed, [&] { return partial_reduction_on_gpu(x, Options()); });
  }
};

}  // namespace egpu::detail

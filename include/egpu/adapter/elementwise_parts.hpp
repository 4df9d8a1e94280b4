// Turns a coefficient-wise Eigen expression into the library's plain
// ElementwiseProgram: a walk of the expression type at compile time, one
// instruction per node. Leaves are the operands with direct access (any
// strides, either layout, transposed, real()/imag() views) and views of a
// DeviceMatrix (blocks, transposes); a transposed
// subexpression transposes its leaves; a vector replicated along its length-one
// side (colwise()/rowwise() broadcasting, replicate()) becomes a leaf with a
// stride of 0; a matrix product is computed by egpu's GEMM and any other
// subexpression without direct access by Eigen, into a temporary that
// becomes a leaf. The same operand read twice is one leaf. A functor the GPU has no
// operation for is a compile-time error that names it
// (egpu_gpu_cannot_run_this_functor<F>).
#pragma once

#include <Eigen/Dense>

#include <algorithm>
#include <complex>
#include <cstdint>
#include <functional>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "egpu/adapter/choose.hpp"
#include "egpu/adapter/describe.hpp"
#include "egpu/detail/elementwise_program.hpp"

namespace egpu::detail {

template <class T> struct value_kind_of;
template <> struct value_kind_of<float> { static constexpr ValueKind value = ValueKind::f32; };
template <> struct value_kind_of<double> { static constexpr ValueKind value = ValueKind::f64; };
template <> struct value_kind_of<std::complex<float>> { static constexpr ValueKind value = ValueKind::c32; };
template <> struct value_kind_of<std::complex<double>> { static constexpr ValueKind value = ValueKind::c64; };
template <> struct value_kind_of<bool> { static constexpr ValueKind value = ValueKind::boolean; };

template <class T>
constexpr bool is_element_scalar_v = std::is_same_v<T, float> || std::is_same_v<T, double> ||
                                     std::is_same_v<T, std::complex<float>> ||
                                     std::is_same_v<T, std::complex<double>>;

// ---- functors -----------------------------------------------------------------
// ew_op<F>::value is the operation of Eigen's functor F; `known` is false for
// anything else.
template <class F> struct ew_op {
  static constexpr bool known = false;
  static constexpr EwOp value = EwOp::load;
};
template <EwOp Op> struct ew_known {
  static constexpr bool known = true;
  static constexpr EwOp value = Op;
};

#define EGPU_EW_FUNCTOR(FUNCTOR, OP) \
  template <class... A>              \
  struct ew_op<Eigen::internal::FUNCTOR<A...>> : ew_known<EwOp::OP> {};
EGPU_EW_FUNCTOR(scalar_opposite_op, negate)
EGPU_EW_FUNCTOR(scalar_abs_op, abs)
EGPU_EW_FUNCTOR(scalar_abs2_op, abs2)
EGPU_EW_FUNCTOR(scalar_sqrt_op, sqrt)
EGPU_EW_FUNCTOR(scalar_rsqrt_op, rsqrt)
EGPU_EW_FUNCTOR(scalar_square_op, square)
EGPU_EW_FUNCTOR(scalar_cube_op, cube)
EGPU_EW_FUNCTOR(scalar_inverse_op, inverse)
EGPU_EW_FUNCTOR(scalar_exp_op, exp)
EGPU_EW_FUNCTOR(scalar_expm1_op, expm1)
EGPU_EW_FUNCTOR(scalar_log_op, log)
EGPU_EW_FUNCTOR(scalar_log1p_op, log1p)
EGPU_EW_FUNCTOR(scalar_log10_op, log10)
EGPU_EW_FUNCTOR(scalar_sin_op, sin)
EGPU_EW_FUNCTOR(scalar_cos_op, cos)
EGPU_EW_FUNCTOR(scalar_tan_op, tan)
EGPU_EW_FUNCTOR(scalar_asin_op, asin)
EGPU_EW_FUNCTOR(scalar_acos_op, acos)
EGPU_EW_FUNCTOR(scalar_atan_op, atan)
EGPU_EW_FUNCTOR(scalar_sinh_op, sinh)
EGPU_EW_FUNCTOR(scalar_cosh_op, cosh)
EGPU_EW_FUNCTOR(scalar_tanh_op, tanh)
EGPU_EW_FUNCTOR(scalar_floor_op, floor)
EGPU_EW_FUNCTOR(scalar_ceil_op, ceil)
EGPU_EW_FUNCTOR(scalar_round_op, round)
EGPU_EW_FUNCTOR(scalar_real_op, real)
EGPU_EW_FUNCTOR(scalar_imag_op, imag)
EGPU_EW_FUNCTOR(scalar_conjugate_op, conj)
EGPU_EW_FUNCTOR(scalar_arg_op, arg)
EGPU_EW_FUNCTOR(scalar_boolean_not_op, logical_not)
EGPU_EW_FUNCTOR(scalar_cast_op, cast)
EGPU_EW_FUNCTOR(scalar_sum_op, add)
EGPU_EW_FUNCTOR(scalar_difference_op, sub)
EGPU_EW_FUNCTOR(scalar_product_op, mul)
EGPU_EW_FUNCTOR(scalar_quotient_op, div)
EGPU_EW_FUNCTOR(scalar_pow_op, pow)
#undef EGPU_EW_FUNCTOR

// Eigen's && and || of boolean arrays (plain structs, not templates).
template <> struct ew_op<Eigen::internal::scalar_boolean_and_op> : ew_known<EwOp::logical_and> {};
template <> struct ew_op<Eigen::internal::scalar_boolean_or_op> : ew_known<EwOp::logical_or> {};

// min and max with Eigen's default NaN rule (PropagateFast: std::min and
// std::max, which return their first argument when either is NaN).
template <class L, class R>
struct ew_op<Eigen::internal::scalar_min_op<L, R, Eigen::PropagateFast>> : ew_known<EwOp::min> {};
template <class L, class R>
struct ew_op<Eigen::internal::scalar_max_op<L, R, Eigen::PropagateFast>> : ew_known<EwOp::max> {};

#define EGPU_EW_COMPARISON(CMP, OP) \
  template <class L, class R>       \
  struct ew_op<Eigen::internal::scalar_cmp_op<L, R, Eigen::internal::CMP>> : ew_known<EwOp::OP> {};
EGPU_EW_COMPARISON(cmp_EQ, eq)
EGPU_EW_COMPARISON(cmp_NEQ, ne)
EGPU_EW_COMPARISON(cmp_LT, lt)
EGPU_EW_COMPARISON(cmp_LE, le)
EGPU_EW_COMPARISON(cmp_GT, gt)
EGPU_EW_COMPARISON(cmp_GE, ge)
#undef EGPU_EW_COMPARISON

// Instantiated for a functor without a GPU operation: the compiler's message
// names the functor (a unaryExpr / binaryExpr lambda, or an Eigen functor
// egpu does not run).
template <class F>
struct egpu_gpu_cannot_run_this_functor {
  static_assert(ew_op<F>::known,
                "egpu::gpu: this coefficient-wise functor has no GPU implementation (a custom functor or lambda in "
                "unaryExpr/binaryExpr, or an Eigen operation egpu does not run); the functor is named in the "
                "instantiation of egpu_gpu_cannot_run_this_functor<F> below");
  static constexpr EwOp value = ew_op<F>::value;
};

// ---- the walk -----------------------------------------------------------------------

// A product left for the caller to run (ProgramBuilder's deferring mode):
// its GEMM descriptor without C (owned by the builder's temporaries) and
// whether the expression reads it transposed.
struct DeferredProduct {
  GemmDesc* desc = nullptr;
  std::complex<double> alpha;
  bool transposed = false;
  int leaf = -1;  // the program's leaf that stands for the product's value
  // Whether the product reads memory that `out` overlaps.
  std::function<bool(const MatrixDesc&)> reads;
};

// Collects the program and owns the temporaries its leaves may point at.
class ProgramBuilder {
 public:
  // deferred: products become leaves that point nowhere and are listed
  // there instead of being computed.
  ProgramBuilder(ElementwiseProgram& program, std::vector<std::shared_ptr<void>>& temporaries, bool shape_only,
                 std::vector<DeferredProduct>* deferred = nullptr)
      : m_program(program), m_temporaries(temporaries), m_shape_only(shape_only), m_deferred(deferred) {}

  // Describing only where the leaves are (to check aliasing before a CPU
  // run): products are not computed, their leaves point nowhere.
  bool shape_only() const { return m_shape_only; }
  std::vector<DeferredProduct>* deferred() const { return m_deferred; }
  void keep_shared(std::shared_ptr<void> owned) { m_temporaries.push_back(std::move(owned)); }
  template <class S>
  int nowhere_leaf(Eigen::Index rows, Eigen::Index cols) {
    MatrixDesc d;
    d.rows = rows;
    d.cols = cols;
    d.col_stride = rows;
    return load(EwLeaf{scalar_kind_of<S>::value, d}, value_kind_of<S>::value);
  }

  int emit(EwOp op, ValueKind type, int x = -1, int y = -1, int z = -1, int index = -1) {
    return detail::emit(m_program, op, type, x, y, z, index);
  }
  ValueKind type_of(int instr) const { return m_program.code[static_cast<std::size_t>(instr)].type; }
  // The leaf a load instruction reads.
  int leaf_of(int load) const { return m_program.code[static_cast<std::size_t>(load)].index; }

  // A leaf: x as it is, or transposed.
  template <class X>
  int leaf(const X& x, bool transposed) {
    using S = typename X::Scalar;
    MatrixDesc d = describe_any(x);
    if (transposed) transpose(d);
    return load(EwLeaf{scalar_kind_of<S>::value, d}, value_kind_of<S>::value);
  }
  // A vector replicated along its length-one side: strides of 0 there.
  template <class X>
  int broadcast_leaf(const X& x, Eigen::Index rows, Eigen::Index cols, bool transposed) {
    using S = typename X::Scalar;
    MatrixDesc d = describe_any(x);
    if (x.rows() == 1) d.row_stride = 0;
    if (x.cols() == 1) d.col_stride = 0;
    d.rows = rows;
    d.cols = cols;
    if (transposed) transpose(d);
    return load(EwLeaf{scalar_kind_of<S>::value, d}, value_kind_of<S>::value);
  }
  // A subexpression evaluated into the temporary make() returns (by Eigen,
  // or by egpu's GEMM or reduction), as a leaf; describing only where the
  // leaves are, a leaf that points nowhere (a fresh temporary overlaps
  // nothing) and nothing evaluated.
  template <class S, class Make>
  int temporary_leaf(Eigen::Index rows, Eigen::Index cols, bool transposed, Make&& make) {
    if (m_shape_only) return transposed ? nowhere_leaf<S>(cols, rows) : nowhere_leaf<S>(rows, cols);
    return leaf(keep(make()), transposed);
  }
  // Keeps an evaluated subexpression alive for as long as the program.
  template <class Plain>
  const Plain& keep(Plain&& plain) {
    auto owned = std::make_shared<std::remove_reference_t<Plain>>(std::forward<Plain>(plain));
    m_temporaries.push_back(owned);
    return *owned;
  }
  template <class S>
  int constant(const S& value) {
    m_program.constants.push_back(std::complex<double>(value));
    return emit(EwOp::constant, value_kind_of<S>::value, -1, -1, -1,
                static_cast<int>(m_program.constants.size()) - 1);
  }

 private:
  // Loads `leaf`; the same operand seen again (a read twice in
  // a * b + exp(a)) is the same leaf, so that it is moved and read once.
  int load(const EwLeaf& leaf, ValueKind type) {
    // Leaves that point nowhere (products not computed) stay distinct.
    auto same = [&](const EwLeaf& o) {
      return leaf.m.data != nullptr && o.scalar == leaf.scalar && same_view(o.m, leaf.m);
    };
    const auto found = std::find_if(m_program.leaves.begin(), m_program.leaves.end(), same);
    const auto index = static_cast<int>(found - m_program.leaves.begin());
    if (found == m_program.leaves.end()) m_program.leaves.push_back(leaf);
    return emit(EwOp::load, type, -1, -1, -1, index);
  }
  static void transpose(MatrixDesc& d) {
    std::swap(d.rows, d.cols);
    std::swap(d.row_stride, d.col_stride);
  }
  ElementwiseProgram& m_program;
  std::vector<std::shared_ptr<void>>& m_temporaries;
  bool m_shape_only;
  std::vector<DeferredProduct>* m_deferred;
};

// ew_node<Xpr>::emit(x, builder, transposed) appends x's instructions and
// returns the index of the one holding its value. The general case: a leaf if
// x has direct access, else an Eigen-evaluated temporary.
template <class Xpr>
struct ew_node {
  static int emit(const Xpr& x, ProgramBuilder& b, bool transposed) {
    using S = typename Xpr::Scalar;
    static_assert(is_element_scalar_v<S>,
                  "egpu::gpu: the leaves of a coefficient-wise expression are float, double, std::complex<float> or "
                  "std::complex<double> (booleans only as comparisons inside the expression)");
    if constexpr (describable_v<Xpr>) {
      return b.leaf(x, transposed);
    } else {
      return b.temporary_leaf<S>(x.rows(), x.cols(), transposed, [&] { return typename Xpr::PlainObject(x); });
    }
  }
};

template <class X>
int ew_emit(const X& x, ProgramBuilder& b, bool transposed) {
  return ew_node<X>::emit(x, b, transposed);
}

template <class F, class X>
struct ew_node<Eigen::CwiseUnaryOp<F, X>> {
  static int emit(const Eigen::CwiseUnaryOp<F, X>& x, ProgramBuilder& b, bool transposed) {
    constexpr EwOp op = egpu_gpu_cannot_run_this_functor<F>::value;
    const int a = ew_emit(x.nestedExpression(), b, transposed);
    return b.emit(op, value_kind_of<typename Eigen::CwiseUnaryOp<F, X>::Scalar>::value, a);
  }
};

template <class F, class L, class R>
struct ew_node<Eigen::CwiseBinaryOp<F, L, R>> {
  static int emit(const Eigen::CwiseBinaryOp<F, L, R>& x, ProgramBuilder& b, bool transposed) {
    constexpr EwOp op = egpu_gpu_cannot_run_this_functor<F>::value;
    const int l = ew_emit(x.lhs(), b, transposed);
    const int r = ew_emit(x.rhs(), b, transposed);
    return b.emit(op, value_kind_of<typename Eigen::CwiseBinaryOp<F, L, R>::Scalar>::value, l, r);
  }
};

// A constant (a scalar in the expression: 2.0 * a, a + 1, select(a, 0.0)).
template <class S, class P>
struct ew_node<Eigen::CwiseNullaryOp<Eigen::internal::scalar_constant_op<S>, P>> {
  static int emit(const Eigen::CwiseNullaryOp<Eigen::internal::scalar_constant_op<S>, P>& x, ProgramBuilder& b,
                  bool) {
    return b.constant(x.functor().m_other);
  }
};

template <class X>
struct ew_node<Eigen::ArrayWrapper<X>> {
  static int emit(const Eigen::ArrayWrapper<X>& x, ProgramBuilder& b, bool transposed) {
    return ew_emit(x.nestedExpression(), b, transposed);
  }
};
template <class X>
struct ew_node<Eigen::MatrixWrapper<X>> {
  static int emit(const Eigen::MatrixWrapper<X>& x, ProgramBuilder& b, bool transposed) {
    return ew_emit(x.nestedExpression(), b, transposed);
  }
};

// transpose() of a subexpression: its leaves, transposed.
template <class X>
struct ew_node<Eigen::Transpose<X>> {
  static int emit(const Eigen::Transpose<X>& x, ProgramBuilder& b, bool transposed) {
    if constexpr (has_direct_access_v<Eigen::Transpose<X>>)
      return b.leaf(x, transposed);
    else
      return ew_emit(x.nestedExpression(), b, !transposed);
  }
};

template <class C, class T, class E>
struct ew_node<Eigen::Select<C, T, E>> {
  static int emit(const Eigen::Select<C, T, E>& x, ProgramBuilder& b, bool transposed) {
    const int c = ew_emit(x.conditionMatrix(), b, transposed);
    const int t = ew_emit(x.thenMatrix(), b, transposed);
    const int e = ew_emit(x.elseMatrix(), b, transposed);
    return b.emit(EwOp::select, value_kind_of<typename Eigen::Select<C, T, E>::Scalar>::value, c, t, e);
  }
};

// Broadcasting: a vector with direct access replicated along its length-one
// side is a leaf with a stride of 0 there; any other replicate is evaluated.
template <class X, int RowFactor, int ColFactor>
struct ew_node<Eigen::Replicate<X, RowFactor, ColFactor>> {
  using Xpr = Eigen::Replicate<X, RowFactor, ColFactor>;
  static int emit(const Xpr& x, ProgramBuilder& b, bool transposed) {
    using Nested = std::remove_const_t<std::remove_reference_t<decltype(x.nestedExpression())>>;
    const auto& v = x.nestedExpression();
    if constexpr (describable_v<Nested> && is_element_scalar_v<typename Nested::Scalar>) {
      const bool rows_ok = v.rows() == 1 || v.rows() == x.rows();
      const bool cols_ok = v.cols() == 1 || v.cols() == x.cols();
      if (rows_ok && cols_ok) return b.broadcast_leaf(v, x.rows(), x.cols(), transposed);
    }
    return b.temporary_leaf<typename Xpr::Scalar>(x.rows(), x.cols(), transposed,
                                                  [&] { return typename Xpr::PlainObject(x); });
  }
};

// A product inside the expression: computed by egpu's GEMM into a temporary
// (adapter/assign.hpp defines it; in device memory when the product reads a
// DeviceMatrix), which becomes a leaf; or, when the builder defers
// products, described for the caller (defer_product).
template <class Product>
using product_value_t = std::conditional_t<holds_device_v<Product>, DeviceMatrix<typename Product::Scalar>,
                                           typename Product::PlainObject>;
template <class Product>
product_value_t<Product> product_on_gpu(const Product& product);
template <class Product>
int defer_product(const Product& product, ProgramBuilder& b, bool transposed);

template <class L, class R, int Option>
struct ew_node<Eigen::Product<L, R, Option>> {
  static int emit(const Eigen::Product<L, R, Option>& x, ProgramBuilder& b, bool transposed) {
    using S = typename Eigen::Product<L, R, Option>::Scalar;
    if (b.deferred() != nullptr) return defer_product(x, b, transposed);
    return b.temporary_leaf<S>(x.rows(), x.cols(), transposed, [&] { return product_on_gpu(x); });
  }
};

// The program of x; leaves may point into `temporaries`. shape_only: see
// ProgramBuilder::shape_only.
template <class Xpr>
void describe_elementwise_into(ElementwiseProgram& program, const Xpr& x,
                               std::vector<std::shared_ptr<void>>& temporaries, bool shape_only = false,
                               std::vector<DeferredProduct>* deferred = nullptr) {
  program.rows = x.rows();
  program.cols = x.cols();
  program.leaves.clear();
  program.constants.clear();
  program.code.clear();
  ProgramBuilder builder(program, temporaries, shape_only, deferred);
  ew_emit(x, builder, false);
}
template <class Xpr>
ElementwiseProgram describe_elementwise(const Xpr& x, std::vector<std::shared_ptr<void>>& temporaries,
                                        bool shape_only = false, std::vector<DeferredProduct>* deferred = nullptr) {
  ElementwiseProgram program;
  describe_elementwise_into(program, x, temporaries, shape_only, deferred);
  return program;
}

// The model's decision for a coefficient-wise call of xpr into `out` (a
// reduction: out describes nothing): as a coefficient-wise call, or, when
// xpr holds products, as its largest product (the coefficient-wise rest of
// such a call costs little beside it). kind: 1 for =, 2 and 3 for += and -=.
template <class Xpr>
Decision decide_call(const Xpr& xpr, const MatrixDesc& out, int kind, const Options& options,
                     bool reduction = false) {
  using Scalar = typename Xpr::Scalar;
  using ValueScalar = std::conditional_t<is_element_scalar_v<Scalar>, Scalar, float>;  // count(): booleans
  std::vector<std::shared_ptr<void>> none;
  std::vector<DeferredProduct> products;
  const ElementwiseProgram shape = describe_elementwise(xpr, none, true, holds_product_v<Xpr> ? &products : nullptr);
  if (!products.empty()) {
    auto size = [](const DeferredProduct& p) { return double(p.desc->m) * double(p.desc->n) * double(p.desc->k); };
    const auto largest = std::max_element(products.begin(), products.end(),
                                          [&](const auto& a, const auto& b) { return size(a) < size(b); });
    GemmDesc desc = *largest->desc;
    desc.c = out;
    desc.beta_is_zero = kind == 1;
    return decide_product(desc, options, Eigen::nbThreads());
  }
  return decide_elementwise(shape, out, scalar_kind_of<ValueScalar>::value, reduction, options);
}

// dst's description for the dispatch, or (when dst has no direct access or
// will be resized) one that points nowhere.
template <class Dst>
MatrixDesc destination_desc(const Dst& dst, Eigen::Index rows, Eigen::Index cols) {
  if constexpr (describable_v<Dst>) {
    if (dst.rows() == rows && dst.cols() == cols) return describe_any(dst);
  }
  return MatrixDesc{nullptr, rows, cols, 1, rows};
}

}  // namespace egpu::detail

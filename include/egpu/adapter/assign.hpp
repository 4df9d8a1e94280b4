// `dst func= gpu(xpr)`: checks sizes, keeps Eigen's aliasing rules, falls
// back to CPU Eigen without a device, and otherwise describes the product or
// the coefficient-wise expression for the compiled library.
#pragma once

#include <Eigen/Dense>

#include <algorithm>
#include <complex>
#include <cstdint>
#include <memory>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "egpu/adapter/choose.hpp"
#include "egpu/adapter/describe.hpp"
#include "egpu/adapter/elementwise_parts.hpp"
#include "egpu/adapter/gemm_update_parts.hpp"
#include "egpu/adapter/gpu_expr.hpp"
#include "egpu/adapter/host_view.hpp"
#include "egpu/adapter/product_parts.hpp"
#include "egpu/adapter/reduce.hpp"
#include "egpu/detail/elementwise_program.hpp"
#include "egpu/detail/gemm_descriptor.hpp"
#include "egpu/device.hpp"
#include "egpu/error.hpp"

namespace egpu::detail {

template <class T>
constexpr bool is_supported_scalar_v =
    std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, std::complex<float>> ||
    std::is_same_v<T, std::complex<double>>;

template <class Func> struct functor_kind { static constexpr int value = 0; };  // other: *=, /= on arrays
template <class A, class B> struct functor_kind<Eigen::internal::assign_op<A, B>> { static constexpr int value = 1; };
template <class A, class B> struct functor_kind<Eigen::internal::add_assign_op<A, B>> { static constexpr int value = 2; };
template <class A, class B> struct functor_kind<Eigen::internal::sub_assign_op<A, B>> { static constexpr int value = 3; };

// Whether dst.resize(rows, cols) really gives dst that size: a Matrix or
// Array (or a transposed view of one) whose fixed dimensions, if any,
// already agree. Other destinations only assert their size.
template <class T>
struct resizable {
  using Plain = std::remove_const_t<T>;
  static bool to(Eigen::Index rows, Eigen::Index cols) {
    if constexpr (std::is_base_of_v<Eigen::PlainObjectBase<Plain>, Plain>)
      return (Plain::RowsAtCompileTime == Eigen::Dynamic || Plain::RowsAtCompileTime == rows) &&
             (Plain::ColsAtCompileTime == Eigen::Dynamic || Plain::ColsAtCompileTime == cols) &&
             (Plain::MaxRowsAtCompileTime == Eigen::Dynamic || rows <= Plain::MaxRowsAtCompileTime) &&
             (Plain::MaxColsAtCompileTime == Eigen::Dynamic || cols <= Plain::MaxColsAtCompileTime);
    else
      return false;
  }
};
template <class S>
struct resizable<DeviceMatrix<S>> {
  static bool to(Eigen::Index, Eigen::Index) { return true; }
};
template <class T>
struct resizable<Eigen::Transpose<T>> {
  static bool to(Eigen::Index rows, Eigen::Index cols) { return resizable<T>::to(cols, rows); }
};

inline std::string size_text(Eigen::Index rows, Eigen::Index cols) {
  std::ostringstream s;
  s << rows << "x" << cols;
  return s.str();
}

// dst must have the value's size, or be a resizable destination of `=`.
template <int Kind, class Dst>
void check_destination_size(const Dst& dst, Eigen::Index rows, Eigen::Index cols, const char* what) {
  if (dst.rows() != rows || dst.cols() != cols) {
    if (!(Kind == 1 && resizable<Dst>::to(rows, cols)))
      throw error("destination is " + size_text(dst.rows(), dst.cols()) + " but the " + what + " is " +
                  size_text(rows, cols));
  }
}

// The type a result goes through before it reaches dst: host memory, or
// device memory when dst or the expression is there.
template <class Dst, class Xpr, class Scalar>
using temporary_for_t = std::conditional_t<is_device_view_v<Dst> || holds_device_v<Xpr>, DeviceMatrix<Scalar>,
                                           Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic>>;

template <class Dst, class Xpr, class Func>
void assign_elementwise(Dst& dst, const Xpr& xpr, const Options& options, const Func& func,
                        Aliasing aliasing = Aliasing::possible);

// dst func= value, value a temporary egpu computed: by Eigen on the host, or
// by egpu where either is in device memory.
template <class Dst, class Value, class Func>
void assign_from_temporary(Dst& dst, const Value& value, const Options& options, const Func& func) {
  if constexpr (is_device_view_v<Dst> || is_device_view_v<Value>)
    assign_elementwise(dst, value, options, func);
  else
    Eigen::internal::call_assignment_no_alias(dst, value, func);
}

// `*=` and `/=` of arrays have no GPU form into device memory.
template <class Dst, int Kind>
constexpr void check_device_destination_functor() {
  static_assert(!(is_device_view_v<Dst> && Kind == 0),
                "egpu::gpu: into a DeviceMatrix the assignments are =, += and -=; write dA = egpu::gpu(dA.array() * x) "
                "for *=");
}

template <class Scalar>
std::complex<double> as_complex_double(const Scalar& s) {
  return std::complex<double>(s);
}

// A product's GEMM descriptor without its C: operands (or temporaries of
// them), sizes and alpha = factor times the operands' own factors.
template <class Product>
class ProductCall {
 public:
  using Scalar = typename Product::Scalar;
  using Lhs = typename Product::LhsNestedCleaned;
  using Rhs = typename Product::RhsNestedCleaned;

  ProductCall(const Product& product, const Scalar& factor) : m_a(product.lhs()), m_b(product.rhs()) {
    m_desc.scalar = scalar_kind_of<Scalar>::value;
    m_desc.m = product.lhs().rows();
    m_desc.n = product.rhs().cols();
    m_desc.k = product.lhs().cols();
    m_desc.a = m_a.desc();
    m_desc.b = m_b.desc();
    m_alpha = factor * m_a.factor() * m_b.factor();
  }
  GemmDesc& desc() { return m_desc; }
  Scalar alpha() const { return m_alpha; }
  // Whether an operand read from the user's memory overlaps `out`.
  bool reads(const MatrixDesc& out) const {
    const auto elem = scalar_size(m_desc.scalar);
    return (GemmOperand<Scalar, Lhs>::in_user_memory && may_share_elements(out, m_desc.a, elem)) ||
           (GemmOperand<Scalar, Rhs>::in_user_memory && may_share_elements(out, m_desc.b, elem));
  }

 private:
  GemmOperand<Scalar, Lhs> m_a;
  GemmOperand<Scalar, Rhs> m_b;
  GemmDesc m_desc;
  Scalar m_alpha{};
};

// Whether dst may share an element with a product operand (the matrix
// under its transposes, conjugation and factors), judged as the GPU path
// judges it (may_share_elements: blocks of one matrix exactly); an operand
// or a destination without direct access, or on the device, may.
template <class Dst, class Operand>
bool may_overlap(const Dst& dst, const Operand& operand) {
  using Traits = Eigen::internal::blas_traits<Operand>;
  using Matrix = std::remove_const_t<std::remove_reference_t<typename Traits::ExtractType>>;
  if constexpr (!has_direct_access_v<Dst> || !has_direct_access_v<Matrix> || is_device_view_v<Dst> ||
                is_device_view_v<Matrix>) {
    return true;
  } else {
    return objects_may_share_elements(dst, Traits::extract(operand));
  }
}
// Whether dst may overlap either operand of a product: Eigen's rule then
// evaluates the product into a temporary first.
template <class Dst, class Product>
bool may_overlap_operands(const Dst& dst, const Product& product) {
  return may_overlap(dst, product.lhs()) || may_overlap(dst, product.rhs());
}

// CPU Eigen's dst func= xpr through a temporary of xpr's value, for a
// destination that may share elements with xpr's operands (out of line:
// rare, and it keeps a second evaluation out of the small path).
template <class Dst, class Xpr, class Func>
EGPU_NOINLINE void through_temporary_on_cpu(Dst& dst, const Xpr& xpr, const Func& func) {
  const typename Xpr::PlainObject value = xpr;
  Eigen::internal::call_assignment_no_alias(dst, value, func);
}

// CPU Eigen's dst func= xpr for a product expression (A * B, s * (A * B),
// -(A * B), ...) that the dispatch keeps on the CPU: the user's expression
// as Eigen runs it without egpu (its own instantiation, no factor added);
// through a temporary where dst may share an element with an operand,
// Eigen's rule for `=`.
template <class Dst, class Xpr, class Func>
void product_expression_on_cpu(Dst& dst, const Xpr& xpr, const Func& func, bool aliased) {
  CpuScope scope;
  if (aliased)
    through_temporary_on_cpu(dst, xpr, func);
  else
    Eigen::internal::call_assignment_no_alias(dst, xpr, func);
}

// CPU Eigen's dst func= factor * product, with Eigen's aliasing rule: one
// expression form (factor * product) for every factor, each form being
// another instantiation of Eigen's GEMM in every caller.
template <class Dst, class Product, class Func>
void product_on_cpu(Dst& dst, const Product& product, const typename Product::Scalar& factor, const Func& func,
                    bool aliased) {
  product_expression_on_cpu(dst, factor * product, func, aliased);
}

template <class Dst, class Product, class Func>
void assign_product(Dst& dst, const Product& product, const typename Product::Scalar& factor,
                    const Options& options, const Func& func);

// egpu::error for operands whose inner sizes differ, or a destination of
// another size (where the assignment does not resize it).
template <int Kind, class Dst, class Product>
void check_product_sizes(const Dst& dst, const Product& product) {
  const auto& lhs = product.lhs();
  const auto& rhs = product.rhs();
  if (lhs.cols() != rhs.rows())
    throw error("product " + size_text(lhs.rows(), lhs.cols()) + " * " + size_text(rhs.rows(), rhs.cols()) +
                ": inner sizes differ");
  check_destination_size<Kind>(dst, lhs.rows(), rhs.cols(), "product");
}

template <class Dst, class Xpr, class Func>
void elementwise_on_cpu(Dst& dst, const Xpr& xpr, const Func& func, Aliasing aliasing = Aliasing::possible);

// A call on DeviceMatrix data where there is no GPU, on host views of its
// memory: CPU Eigen with egpu's checks and aliasing rules, as the
// dispatch's CPU side runs it (without instantiating the GPU path for the
// host views' types, which such a call never takes).
template <class Dst, class Xpr, class Func>
void assign_on_cpu(Dst& dst, const Xpr& xpr, const Func& func) {
  constexpr int kind = functor_kind<Func>::value;
  using Parts = product_parts<Xpr>;
  if constexpr (Parts::is_product) {
    const auto& product = Parts::product(xpr);
    using Scalar = typename std::remove_reference_t<decltype(product)>::Scalar;
    check_product_sizes<kind>(dst, product);
    const Scalar factor(Parts::factor(xpr));
    if constexpr (kind == 0) {
      // Another compound assignment (e.g. array *=): compute, then let Eigen combine.
      temporary_for_t<Dst, std::remove_reference_t<decltype(product)>, Scalar> result(product.rows(), product.cols());
      product_on_cpu(result, product, factor, Eigen::internal::assign_op<Scalar, Scalar>(), false);
      Eigen::internal::call_assignment_no_alias(dst, result, func);
    } else {
      product_on_cpu(dst, product, factor, func, may_overlap_operands(dst, product));
    }
  } else if constexpr (partial_redux_parts<Xpr>::matches) {
    check_destination_size<kind>(dst, xpr.rows(), xpr.cols(), "reduction");
    CpuScope scope;
    Eigen::internal::call_assignment_no_alias(dst, partial_reduction_on_cpu(xpr), func);
  } else {
    check_destination_size<kind>(dst, xpr.rows(), xpr.cols(), "expression");
    elementwise_on_cpu(dst, xpr, func);
  }
}

template <class Dst, class Product, class Func, class Cpu>
EGPU_NOINLINE void assign_product_described(Dst& dst, const Product& product, const typename Product::Scalar& factor,
                                            const Options& options, const Func& func, Cpu&& on_cpu, Gate gated,
                                            Aliasing aliasing);

// The product part: dst func= factor * (lhs * rhs); on_cpu(aliased) runs
// it on the CPU where the dispatch keeps it there, aliased telling whether
// dst may share an element with an operand (never under
// Aliasing::excluded, where Eigen's noalias() rule holds on the CPU).
template <class Dst, class Product, class Func, class Cpu>
void assign_product_or(Dst& dst, const Product& product, const typename Product::Scalar& factor,
                       const Options& options, const Func& func, Cpu&& on_cpu,
                       Aliasing aliasing = Aliasing::possible) {
  using Scalar = typename Product::Scalar;
  using Plain = temporary_for_t<Dst, Product, Scalar>;
  constexpr int kind = functor_kind<Func>::value;
  check_device_destination_functor<Dst, kind>();
  constexpr bool on_device = is_device_view_v<Dst> || holds_device_v<Product>;

  check_product_sizes<kind>(dst, product);
  const Eigen::Index m = product.lhs().rows(), n = product.rhs().cols(), k = product.lhs().cols();

  if constexpr (kind == 0) {
    // Another compound assignment (e.g. array *=): compute, then let Eigen combine.
    Plain result(m, n);
    assign_product(result, product, factor, options, Eigen::internal::assign_op<Scalar, Scalar>());
    Eigen::internal::call_assignment_no_alias(dst, result, func);
    return;
  } else {
    if (m == 0 || n == 0 || k == 0) {
      if constexpr (kind == 1) {
        dst.resize(m, n);
        if constexpr (is_device_view_v<Dst>)
          assign_elementwise(dst, Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic>::Zero(m, n), options, func);
        else
          dst.setZero();
      }
      return;
    }
    // (Device operands without a device were made host views by assign.)
    // Calls the gate keeps on the CPU skip the description: they cost CPU
    // Eigen's time and a few nanoseconds.
    const Gate gated = gate_for<on_device>(options, product_flops<Scalar>(m, n, k), 0);
    if constexpr (!on_device) {
      if (gated == Gate::cpu) return on_cpu(aliasing == Aliasing::possible && may_overlap_operands(dst, product));
    }
    assign_product_described(dst, product, factor, options, func, on_cpu, gated, aliasing);
  }
}

// The rest of assign_product_or (sizes checked, none 0, kind not 0), for
// the calls the gate leaves open or sends to the GPU: described, decided,
// run. Out of line, so that the gate's CPU path above stays a small
// function: its calls are the smallest there are, and this one's frame
// holds a whole description.
template <class Dst, class Product, class Func, class Cpu>
EGPU_NOINLINE void assign_product_described(Dst& dst, const Product& product, const typename Product::Scalar& factor,
                                            const Options& options, const Func& func, Cpu&& on_cpu, Gate gated,
                                            Aliasing aliasing) {
  using Scalar = typename Product::Scalar;
  using Plain = temporary_for_t<Dst, Product, Scalar>;
  constexpr int kind = functor_kind<Func>::value;
  constexpr bool on_device = is_device_view_v<Dst> || holds_device_v<Product>;
  constexpr bool dst_direct = describable_v<Dst> && std::is_same_v<typename Dst::Scalar, Scalar>;
  const Eigen::Index m = product.lhs().rows(), n = product.rhs().cols();
  ProductCall<Product> call(product, factor);
  bool aliased = false;
  if constexpr (dst_direct) aliased = call.reads(describe_any(dst));
  GemmDesc& desc = call.desc();
  const Decision decision = choose<on_device>(gated, [&] {
    desc.c = dst_direct && !aliased ? describe_any(dst) : MatrixDesc{nullptr, m, n, 1, m};
    desc.beta_is_zero = kind == 1;
    return decide_product(desc, options, Eigen::nbThreads());
  });
  const CallLog log(decision);
  if constexpr (!on_device) {
    if (!decision.gpu) return on_cpu(aliasing == Aliasing::possible && aliased);
  }
  const Scalar alpha = call.alpha();
  desc.alpha = as_complex_double(kind == 3 ? Scalar(-alpha) : alpha);

  if (!dst_direct || aliased) {
    // Eigen's rule for `=` (and what a destination without direct access
    // needs): the product goes to a temporary, then into dst.
    Plain result(m, n);
    desc.c = describe_any(result);
    desc.alpha = as_complex_double(alpha);
    desc.beta_is_zero = true;
    gemm(desc, options);
    assign_from_temporary(dst, result, options, func);
    return;
  }
  if constexpr (dst_direct) {
    if constexpr (kind == 1) dst.resize(m, n);
    desc.c = describe_any(dst);
    desc.beta = kind == 1 ? 0.0 : 1.0;
    desc.beta_is_zero = kind == 1;
    gemm(desc, options);
  }
}

template <class Dst, class Product, class Func>
void assign_product(Dst& dst, const Product& product, const typename Product::Scalar& factor,
                    const Options& options, const Func& func) {
  assign_product_or(dst, product, factor, options, func, [&](bool aliased) {
    // (Calls on device data never run here: see assign_product_or.)
    if constexpr (!is_device_view_v<Dst> && !holds_device_v<Product>)
      product_on_cpu(dst, product, factor, func, aliased);
  });
}

// Whether a leaf overlaps the destination other than as the destination
// itself, element for element (which Eigen's rule for coefficient-wise
// assignment allows): a transposed or shifted view of it, a broadcast of
// part of it.
inline bool aliases_otherwise(const ElementwiseProgram& program, const MatrixDesc& out, ScalarKind out_scalar) {
  for (const EwLeaf& leaf : program.leaves) {
    if (leaf.m.data == nullptr ||
        !may_share_elements(leaf.m, scalar_size(leaf.scalar), out, scalar_size(out_scalar)))
      continue;
    if (leaf.scalar != out_scalar || !same_view(leaf.m, out)) return true;
  }
  return false;
}

// aliases_otherwise for CPU Eigen's side of a call, without describing the
// expression (no allocation: small calls stay cheap), as bits: kOverlaps
// when a leaf overlaps dst other than as dst itself, element for element;
// kUnknown for a node it does not know (then describe the expression); 0
// when neither. dst_bytes: dst's bytes, found once for all the leaves.
template <class X> struct unary_node : std::false_type {};
template <class F, class X> struct unary_node<Eigen::CwiseUnaryOp<F, X>> : std::true_type {};
template <class X> struct unary_node<Eigen::ArrayWrapper<X>> : std::true_type {};
template <class X> struct unary_node<Eigen::MatrixWrapper<X>> : std::true_type {};
template <class X> struct binary_node : std::false_type {};
template <class F, class L, class R> struct binary_node<Eigen::CwiseBinaryOp<F, L, R>> : std::true_type {};
template <class X> struct nullary_node : std::false_type {};
template <class F, class P> struct nullary_node<Eigen::CwiseNullaryOp<F, P>> : std::true_type {};
constexpr int kOverlaps = 1, kUnknown = 2;
// A leaf whose bytes meet dst's, told exactly (out of line: the small path
// only compares the bytes).
template <class X, class Dst>
EGPU_NOINLINE int leaf_overlaps_otherwise(const X& x, const Dst& dst) {
  if (!may_share_elements(describe(x), sizeof(typename X::Scalar), describe(dst), sizeof(typename Dst::Scalar)))
    return 0;
  const bool same = std::is_same_v<typename X::Scalar, typename Dst::Scalar> && same_view(describe(x), describe(dst));
  return same ? 0 : kOverlaps;
}
template <class X, class Dst>
int overlaps_otherwise(const X& x, const Dst& dst, const ByteRange& dst_bytes) {
  if constexpr (has_direct_access_v<X> && !is_device_view_v<X>) {
    return object_byte_range(x).overlaps(dst_bytes) ? leaf_overlaps_otherwise(x, dst) : 0;
  } else if constexpr (nullary_node<X>::value) {
    return 0;
  } else if constexpr (unary_node<X>::value) {
    return overlaps_otherwise(x.nestedExpression(), dst, dst_bytes);
  } else if constexpr (binary_node<X>::value) {
    return overlaps_otherwise(x.lhs(), dst, dst_bytes) | overlaps_otherwise(x.rhs(), dst, dst_bytes);
  } else {
    return kUnknown;
  }
}

// For += and -= (Kind 2, 3): dst += f is dst = dst + f, so dst becomes one
// more leaf of the program, read element for element.
template <int Kind>
void read_destination(ElementwiseProgram& program, const MatrixDesc& out, ScalarKind scalar) {
  if constexpr (Kind == 2 || Kind == 3) {
    const int value = static_cast<int>(program.code.size()) - 1;
    program.leaves.push_back(EwLeaf{scalar, out});
    const int old =
        emit(program, EwOp::load, value_kind(scalar), -1, -1, -1, static_cast<int>(program.leaves.size()) - 1);
    emit(program, Kind == 2 ? EwOp::add : EwOp::sub, value_kind(scalar), old, value);
  }
}

// dst func= alpha * (A * B) + beta * dst as one GEMM with its beta, when the
// matrix term is dst itself (the same elements, same layout) and the
// product's operands do not overlap dst; returns false otherwise (the caller
// then runs the general coefficient-wise path).
template <class Dst, class Xpr, class Func>
bool assign_gemm_update(Dst& dst, const Xpr& xpr, const Options& options, const Func&) {
  using U = gemm_update_parts<Xpr>;
  using Parts = product_parts<typename U::P>;
  using Scalar = typename Dst::Scalar;
  constexpr int kind = functor_kind<Func>::value;
  const auto& product = Parts::product(U::product_term(xpr));
  using Product = std::remove_const_t<std::remove_reference_t<decltype(product)>>;
  const auto& term = U::matrix_term(xpr);
  const auto& c = scaled_matrix<typename U::C>::matrix(term);
  using CScalar = typename std::remove_reference_t<decltype(c)>::Scalar;
  if constexpr (!std::is_same_v<typename Product::Scalar, Scalar> || !std::is_same_v<CScalar, Scalar>) {
    return false;
  } else {
    const MatrixDesc out = describe_any(dst), cd = describe_any(c);
    if (!same_view(cd, out) || product.lhs().cols() != product.rhs().rows() || product.rows() != dst.rows() ||
        product.cols() != dst.cols() || product.lhs().cols() == 0 || dst.size() == 0)
      return false;
    ProductCall<Product> call(product, Scalar(U::product_sign) * Scalar(Parts::factor(U::product_term(xpr))));
    if (call.reads(out)) return false;
    const Scalar beta_c = Scalar(U::matrix_sign) * Scalar(scaled_matrix<typename U::C>::factor(term));
    // = : alpha AB + beta_c C;  += : alpha AB + (1 + beta_c) C;  -= : -alpha AB + (1 - beta_c) C.
    const Scalar alpha = kind == 3 ? Scalar(-call.alpha()) : call.alpha();
    const Scalar beta = kind == 1 ? beta_c : kind == 2 ? Scalar(Scalar(1) + beta_c) : Scalar(Scalar(1) - beta_c);
    GemmDesc& desc = call.desc();
    desc.c = out;
    desc.alpha = as_complex_double(alpha);
    desc.beta = as_complex_double(beta);
    desc.beta_is_zero = false;  // C is read even where beta is 0, so its NaN propagate as in Eigen
    gemm(desc, options);
    return true;
  }
}

template <class Dst, class Xpr, class Func>
bool assign_with_epilogue(Dst& dst, const Xpr& xpr, const Options& options, const Func& func);

// Whether an operand of xpr overlaps dst other than element for element
// (aliases_otherwise), told apart from the leaves' addresses where it can.
template <class Dst, class Xpr>
EGPU_NOINLINE bool elementwise_aliased_described(const Dst& dst, const Xpr& xpr) {
  std::vector<std::shared_ptr<void>> none;
  return aliases_otherwise(describe_elementwise(xpr, none, true), describe(dst),
                           scalar_kind_of<typename Dst::Scalar>::value);
}
template <class Dst, class Xpr>
bool elementwise_aliased(const Dst& dst, const Xpr& xpr) {
  const int quick = overlaps_otherwise(xpr, dst, object_byte_range(dst));
  if (quick & kOverlaps) return true;
  return (quick & kUnknown) && elementwise_aliased_described(dst, xpr);
}

// CPU Eigen's dst func= xpr, with egpu's aliasing rule: an operand
// overlapping dst other than element for element is read before dst is
// written. Under noalias(), Eigen's no-alias assignment, as written.
template <class Dst, class Xpr, class Func>
void elementwise_on_cpu(Dst& dst, const Xpr& xpr, const Func& func, Aliasing aliasing) {
  CpuScope scope;
  if (aliasing == Aliasing::excluded) return Eigen::internal::call_assignment_no_alias(dst, xpr, func);
  if constexpr (has_direct_access_v<Dst>) {
    if (elementwise_aliased(dst, xpr)) return through_temporary_on_cpu(dst, xpr, func);
  }
  Eigen::internal::call_assignment(dst, xpr, func);
}

template <class Dst, class Xpr, class Func>
EGPU_NOINLINE void assign_elementwise_described(Dst& dst, const Xpr& xpr, const Options& options, const Func& func,
                                              Gate gated, Aliasing aliasing);

// The coefficient-wise part: dst func= xpr.
template <class Dst, class Xpr, class Func>
void assign_elementwise(Dst& dst, const Xpr& xpr, const Options& options, const Func& func, Aliasing aliasing) {
  static_assert(is_supported_scalar_v<typename Xpr::Scalar>,
                "egpu::gpu: a coefficient-wise expression's value is float, double, std::complex<float> or "
                "std::complex<double>");
  constexpr int kind = functor_kind<Func>::value;
  check_device_destination_functor<Dst, kind>();
  const Eigen::Index rows = xpr.rows(), cols = xpr.cols();
  check_destination_size<kind>(dst, rows, cols, "expression");
  // (Device operands without a device were made host views by assign.)
  // As for products: the gate's CPU calls go straight to CPU Eigen.
  constexpr bool on_device = is_device_view_v<Dst> || holds_device_v<Xpr>;
  const Gate gated = gate_for<on_device>(options, 0, static_cast<double>(rows) * static_cast<double>(cols));
  if constexpr (!on_device) {
    if (gated == Gate::cpu) return elementwise_on_cpu(dst, xpr, func, aliasing);
  }
  assign_elementwise_described(dst, xpr, options, func, gated, aliasing);
}

// The rest of assign_elementwise (sizes checked), out of line as
// assign_product_described.
template <class Dst, class Xpr, class Func>
EGPU_NOINLINE void assign_elementwise_described(Dst& dst, const Xpr& xpr, const Options& options, const Func& func,
                                              Gate gated, Aliasing aliasing) {
  using Scalar = typename Xpr::Scalar;
  // The temporary of the destination's side: device memory for a device
  // destination.
  using Plain = std::conditional_t<is_device_view_v<Dst>, DeviceMatrix<Scalar>,
                                   Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic>>;
  constexpr int kind = functor_kind<Func>::value;
  const Eigen::Index rows = xpr.rows(), cols = xpr.cols();
  // Into a temporary, then into dst the way Eigen would: other compound
  // assignments (array *=), destinations without direct access or of
  // another scalar.
  auto through_temporary = [&] {
    Plain result(rows, cols);
    assign_elementwise(result, xpr, options, Eigen::internal::assign_op<Scalar, Scalar>());
    assign_from_temporary(dst, result, options, func);
  };
  constexpr bool dst_direct = describable_v<Dst> && std::is_same_v<typename Dst::Scalar, Scalar>;
  constexpr bool on_device = is_device_view_v<Dst> || holds_device_v<Xpr>;
  const Decision decision =
      choose<on_device>(gated, [&] { return decide_call(xpr, destination_desc(dst, rows, cols), kind, options); });
  const CallLog log(decision);
  if constexpr (!on_device) {
    if (!decision.gpu) return elementwise_on_cpu(dst, xpr, func, aliasing);
  }
  if constexpr (gemm_update_parts<Xpr>::matches && dst_direct && kind != 0) {
    if (assign_gemm_update(dst, xpr, options, func)) return;
  }
  if constexpr (kind != 0 && dst_direct && holds_product_v<Xpr>) {
    if (assign_with_epilogue(dst, xpr, options, func)) return;
  }
  if constexpr (kind == 0 || !dst_direct) {
    through_temporary();
  } else {
    constexpr ScalarKind scalar = scalar_kind_of<Scalar>::value;
    const bool resizes = dst.rows() != rows || dst.cols() != cols;
    {
      // Where the leaves are, products not computed yet: Eigen's `=`
      // evaluates an aliased expression first; so does egpu for every form
      // (a leaf overlapping dst any other way would be overwritten while
      // still being read). A resize frees dst's memory.
      std::vector<std::shared_ptr<void>> none;
      const ElementwiseProgram shape = describe_elementwise(xpr, none, true);
      if (!resizes && aliases_otherwise(shape, describe_any(dst), scalar)) return through_temporary();
      if (resizes) {
        const MatrixDesc old = describe_any(dst);
        for (const EwLeaf& leaf : shape.leaves)
          if (leaf.m.data != nullptr &&
              may_share_elements(old, scalar_size(scalar), leaf.m, scalar_size(leaf.scalar)))
            return through_temporary();
      }
    }
    // Products computed into temporaries here, before a resize: they may read dst.
    std::vector<std::shared_ptr<void>> temporaries;
    ElementwiseProgram program = describe_elementwise(xpr, temporaries);
    if (resizes) dst.resize(rows, cols);
    if (rows == 0 || cols == 0) return;
    const MatrixDesc out = describe_any(dst);
    read_destination<kind>(program, out, scalar);
    elementwise(program, out, scalar, kind != 1, options);
  }
}

// A product inside an expression whose caller may run it itself (the GEMM
// with an epilogue): described, not computed; its leaf points nowhere.
template <class Product>
int defer_product(const Product& product, ProgramBuilder& b, bool transposed) {
  using Scalar = typename Product::Scalar;
  static_assert(is_supported_scalar_v<Scalar>,
                "egpu::gpu: scalars are float, double, std::complex<float> and std::complex<double>");
  auto call = std::make_shared<ProductCall<Product>>(product, Scalar(1));
  const int load = transposed ? b.nowhere_leaf<Scalar>(product.cols(), product.rows())
                              : b.nowhere_leaf<Scalar>(product.rows(), product.cols());
  DeferredProduct d;
  d.desc = &call->desc();
  d.alpha = as_complex_double(call->alpha());
  d.transposed = transposed;
  d.leaf = b.leaf_of(load);
  d.reads = [c = call.get()](const MatrixDesc& out) { return c->reads(out); };
  b.keep_shared(call);
  b.deferred()->push_back(std::move(d));
  return load;
}

// dst func= f(A * B, D, ...), f coefficient-wise (tanh(A * B),
// (A * B).array() * D.array() + 1, A * B + D with D's scalar another): one
// GEMM whose tiles go through f on the device before they come down, the
// other operands' pieces of each tile going up beside it; dst is one more
// operand for += and -=. Returns false (nothing done) for any other
// expression: no product or several, a transposed one, one that reads dst
// (the general path keeps the product's aliasing rule), an operand that
// overlaps dst other than element for element.
template <class Dst, class Xpr, class Func>
bool assign_with_epilogue(Dst& dst, const Xpr& xpr, const Options& options, const Func&) {
  using Scalar = typename Dst::Scalar;
  constexpr int kind = functor_kind<Func>::value;
  constexpr ScalarKind scalar = scalar_kind_of<Scalar>::value;
  std::vector<std::shared_ptr<void>> temporaries;
  std::vector<DeferredProduct> deferred;
  ElementwiseProgram program = describe_elementwise(xpr, temporaries, false, &deferred);
  if (deferred.size() != 1 || deferred[0].transposed) return false;
  const DeferredProduct& product = deferred[0];
  GemmDesc& desc = *product.desc;
  // A nested reduction is left undone (pointing nowhere) while deferring.
  for (std::size_t l = 0; l < program.leaves.size(); ++l)
    if (static_cast<int>(l) != product.leaf && program.leaves[l].m.data == nullptr) return false;
  if (desc.scalar != scalar || program.code.back().type != value_kind(scalar) || desc.k == 0 || desc.m == 0 ||
      desc.n == 0)
    return false;
  // The operands other than the product, against dst's memory (before a
  // resize, its old memory): apart from dst itself read element for
  // element, none may touch it.
  auto overlaps = [&](const MatrixDesc& d, bool allow_same) {
    for (std::size_t l = 0; l < program.leaves.size(); ++l) {
      const EwLeaf& leaf = program.leaves[l];
      if (static_cast<int>(l) == product.leaf ||
          !may_share_elements(d, sizeof(Scalar), leaf.m, scalar_size(leaf.scalar)))
        continue;
      if (!allow_same || leaf.scalar != scalar || !same_view(leaf.m, d)) return 2;
      return 1;
    }
    return 0;
  };
  const bool resizes = dst.rows() != desc.m || dst.cols() != desc.n;
  if (resizes) {
    const MatrixDesc old = describe_any(dst);
    if (overlaps(old, false) != 0 || product.reads(old)) return false;
    dst.resize(desc.m, desc.n);
  }
  const MatrixDesc out = describe_any(dst);
  const int read = overlaps(out, true);
  if (read == 2 || product.reads(out)) return false;
  read_destination<kind>(program, out, scalar);
  const bool reads_c = read == 1 || kind == 2 || kind == 3;
  desc.c = out;
  program.leaves[static_cast<std::size_t>(product.leaf)].m = out;  // a valid description; each tile's own replaces it
  desc.alpha = product.alpha;
  desc.beta = 0.0;
  desc.beta_is_zero = true;
  desc.epilogue = &program;
  desc.epilogue_product = product.leaf;
  desc.epilogue_reads_c = reads_c;
  gemm(desc, options);
  return true;
}

// The value of a product inside a coefficient-wise expression.
template <class Product>
product_value_t<Product> product_on_gpu(const Product& product) {
  using Parts = product_parts<Product>;
  using Scalar = typename Product::Scalar;
  static_assert(is_supported_scalar_v<Scalar>,
                "egpu::gpu: scalars are float, double, std::complex<float> and std::complex<double>");
  product_value_t<Product> value(product.rows(), product.cols());
  assign_product(value, Parts::product(product), Scalar(Parts::factor(product)), Options(),
                 Eigen::internal::assign_op<Scalar, Scalar>());
  return value;
}

template <class Dst, class Xpr, class Func>
void assign(Dst& dst, const GpuExpr<Xpr>& src, const Func& func, Aliasing aliasing) {
  using Parts = product_parts<Xpr>;
  if constexpr (is_device_view_v<Dst> || holds_device_v<Xpr>) {
    if (!has_device()) {
      // DeviceMatrix memory is host memory: CPU Eigen runs the same call on
      // Maps of it. A DeviceMatrix destination that `=` resizes gets the
      // value in new memory first (the expression may read the old).
      if constexpr (is_device_matrix<Dst>::value && functor_kind<Func>::value == 1) {
        if (dst.rows() != src.rows() || dst.cols() != src.cols()) {
          Dst fresh(src.rows(), src.cols());
          assign(fresh, src, func);
          dst = std::move(fresh);
          return;
        }
      }
      decltype(auto) host_xpr = host_view(src.expression());
      if constexpr (is_device_view_v<Dst>) {
        auto host_dst = host_view(dst);
        assign_on_cpu(host_dst, host_xpr, func);
      } else {
        assign_on_cpu(dst, host_xpr, func);
      }
      return;
    }
  }
  if constexpr (Parts::is_product) {
    const auto& product = Parts::product(src.expression());
    using Scalar = typename std::remove_reference_t<decltype(product)>::Scalar;
    static_assert(is_supported_scalar_v<Scalar>,
                  "egpu::gpu: scalars are float, double, std::complex<float> and std::complex<double>");
    const Scalar factor(Parts::factor(src.expression()));
    if constexpr (is_device_view_v<Dst> || holds_device_v<Xpr>) {
      assign_product(dst, product, factor, src.options(), func);
    } else {
      // On the CPU, Eigen runs the expression as written.
      const auto on_cpu = [&](bool aliased) { product_expression_on_cpu(dst, src.expression(), func, aliased); };
      assign_product_or(dst, product, factor, src.options(), func, on_cpu, aliasing);
    }
  } else if constexpr (partial_redux_parts<Xpr>::matches) {
    check_destination_size<functor_kind<Func>::value>(dst, src.rows(), src.cols(), "reduction");
    assign_partial_reduction(dst, src.expression(), src.options(), func);
  } else {
    assign_elementwise(dst, src.expression(), src.options(), func, aliasing);
  }
}

}  // namespace egpu::detail

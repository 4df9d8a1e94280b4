// Turns Eigen objects with direct access, and views of a DeviceMatrix
// (itself, blocks, transposes), into the library's plain MatrixDesc, and
// operands of a product into (matrix, conjugate, factor) through Eigen's
// blas_traits, evaluating anything else into a temporary first (in device
// memory when it reads a DeviceMatrix).
#pragma once

#include <Eigen/Dense>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "egpu/detail/gemm_descriptor.hpp"
#include "egpu/device_matrix.hpp"

namespace egpu::detail {

template <class X>
constexpr bool has_direct_access_v = (int(X::Flags) & Eigen::DirectAccessBit) != 0;

// A vector's stride along its length-one side is never used; make it
// harmless for the overlap checks.
inline MatrixDesc vector_strides_fixed(MatrixDesc d) {
  if (d.rows == 1) d.row_stride = 1;
  if (d.cols == 1) d.col_stride = std::max<std::int64_t>(d.col_stride, d.rows * d.row_stride);
  return d;
}

// Element (i, j) of x is at x.data() + i * row_stride + j * col_stride.
template <class X>
MatrixDesc describe(const X& x) {
  MatrixDesc d;
  d.data = const_cast<void*>(static_cast<const void*>(x.data()));
  d.rows = x.rows();
  d.cols = x.cols();
  const std::int64_t inner = x.innerStride(), outer = x.outerStride();
  d.row_stride = X::IsRowMajor ? outer : inner;
  d.col_stride = X::IsRowMajor ? inner : outer;
  return vector_strides_fixed(d);
}

// ---- DeviceMatrix and its views ------------------------------------------------

// A DeviceMatrix, or a block or transpose of one (nested in any order).
template <class X> struct device_view : std::false_type {};
template <class X> struct device_view<const X> : device_view<X> {};
template <class S> struct device_view<DeviceMatrix<S>> : std::true_type {};
template <class X, int R, int C, bool I> struct device_view<Eigen::Block<X, R, C, I>> : device_view<X> {};
template <class X> struct device_view<Eigen::Transpose<X>> : device_view<X> {};
template <class X>
constexpr bool is_device_view_v = device_view<std::remove_cv_t<std::remove_reference_t<X>>>::value;

// holds<Is, X>: whether X, or any node under it, is one that Is<...> says
// is (through the nodes egpu::gpu describes).
template <template <class> class Is, class X> struct holds : Is<X> {};
template <template <class> class Is, class X> struct holds<Is, const X> : holds<Is, X> {};
template <template <class> class Is, class Node, class... Nested>
using holds_any = std::bool_constant<Is<Node>::value || (holds<Is, Nested>::value || ...)>;
template <template <class> class Is, class X>
struct holds<Is, Eigen::ArrayWrapper<X>> : holds_any<Is, Eigen::ArrayWrapper<X>, X> {};
template <template <class> class Is, class X>
struct holds<Is, Eigen::MatrixWrapper<X>> : holds_any<Is, Eigen::MatrixWrapper<X>, X> {};
template <template <class> class Is, class X>
struct holds<Is, Eigen::Transpose<X>> : holds_any<Is, Eigen::Transpose<X>, X> {};
template <template <class> class Is, class X, int R, int C, bool I>
struct holds<Is, Eigen::Block<X, R, C, I>> : holds_any<Is, Eigen::Block<X, R, C, I>, X> {};
template <template <class> class Is, class F, class X>
struct holds<Is, Eigen::CwiseUnaryOp<F, X>> : holds_any<Is, Eigen::CwiseUnaryOp<F, X>, X> {};
template <template <class> class Is, class X, int R, int C>
struct holds<Is, Eigen::Replicate<X, R, C>> : holds_any<Is, Eigen::Replicate<X, R, C>, X> {};
template <template <class> class Is, class X, class F, int D>
struct holds<Is, Eigen::PartialReduxExpr<X, F, D>> : holds_any<Is, Eigen::PartialReduxExpr<X, F, D>, X> {};
template <template <class> class Is, class F, class L, class R>
struct holds<Is, Eigen::CwiseBinaryOp<F, L, R>> : holds_any<Is, Eigen::CwiseBinaryOp<F, L, R>, L, R> {};
template <template <class> class Is, class L, class R, int O>
struct holds<Is, Eigen::Product<L, R, O>> : holds_any<Is, Eigen::Product<L, R, O>, L, R> {};
template <template <class> class Is, class C, class T, class E>
struct holds<Is, Eigen::Select<C, T, E>> : holds_any<Is, Eigen::Select<C, T, E>, C, T, E> {};

// Whether an expression reads or is a DeviceMatrix anywhere (any other node
// holding one is evaluated on the host, which does not compile).
template <class X>
constexpr bool holds_device_v = holds<device_view, std::remove_cv_t<std::remove_reference_t<X>>>::value;

// Whether an expression has a matrix product anywhere.
template <class X> struct product_node : std::false_type {};
template <class L, class R, int O> struct product_node<Eigen::Product<L, R, O>> : std::true_type {};
template <class X>
constexpr bool holds_product_v = holds<product_node, std::remove_cv_t<std::remove_reference_t<X>>>::value;

template <class S>
MatrixDesc device_desc(const DeviceMatrix<S>& x) {
  MatrixDesc d;
  d.data = x.device_data();
  d.rows = x.rows();
  d.cols = x.cols();
  d.row_stride = 1;
  d.col_stride = x.rows();
  d.on_device = x.on_device();
  return d;
}
template <class X, int R, int C, bool I>
MatrixDesc device_desc(const Eigen::Block<X, R, C, I>& x) {
  MatrixDesc d = device_desc(x.nestedExpression());
  using S = typename Eigen::Block<X, R, C, I>::Scalar;
  d.data = static_cast<S*>(d.data) + x.startRow() * d.row_stride + x.startCol() * d.col_stride;
  d.rows = x.rows();
  d.cols = x.cols();
  return d;
}
template <class X>
MatrixDesc device_desc(const Eigen::Transpose<X>& x) {
  MatrixDesc d = device_desc(x.nestedExpression());
  std::swap(d.rows, d.cols);
  std::swap(d.row_stride, d.col_stride);
  return d;
}

// The description of an operand or destination egpu reads in place: host
// memory with direct access, or a view of a DeviceMatrix.
template <class X>
constexpr bool describable_v = has_direct_access_v<X> || is_device_view_v<X>;
template <class X>
MatrixDesc describe_any(const X& x) {
  if constexpr (is_device_view_v<X>)
    return vector_strides_fixed(device_desc(x));
  else
    return describe(x);
}


// The bytes [first, last) a described matrix touches.
struct ByteRange {
  std::uintptr_t first = 0, last = 0;
  bool overlaps(const ByteRange& o) const { return first < o.last && o.first < last; }
};

inline ByteRange byte_range(const MatrixDesc& d, std::int64_t elem_size) {
  if (d.rows == 0 || d.cols == 0) return {};
  const auto base = reinterpret_cast<std::intptr_t>(d.data);
  // Each axis moves the address one way (a stride may be negative): the
  // extremes are the sums of each axis's own.
  const std::int64_t down = (d.rows - 1) * d.row_stride, across = (d.cols - 1) * d.col_stride;
  const std::int64_t lo = std::min<std::int64_t>(down, 0) + std::min<std::int64_t>(across, 0);
  const std::int64_t hi = std::max<std::int64_t>(down, 0) + std::max<std::int64_t>(across, 0);
  return {static_cast<std::uintptr_t>(base + lo * elem_size), static_cast<std::uintptr_t>(base + (hi + 1) * elem_size)};
}

// Whether two described matrices of elem_size-byte elements may share an
// element. Exact for two views with the same strides, one of them 1 and
// the other at least both views' extent along it (blocks of one matrix:
// the panels and the trailing block of a blocked factorization interleave
// in memory without sharing an element); otherwise whether their bounding
// byte ranges meet.
inline bool may_share_elements(const MatrixDesc& a, const MatrixDesc& b, std::int64_t elem_size) {
  if (!byte_range(a, elem_size).overlaps(byte_range(b, elem_size))) return false;
  if (a.row_stride != b.row_stride || a.col_stride != b.col_stride) return true;
  // Element (i, j) at i + j * line (inner index i, outer j), in elements.
  const bool by_columns = a.row_stride == 1;
  if (!by_columns && a.col_stride != 1) return true;
  const std::int64_t line = by_columns ? a.col_stride : a.row_stride;
  const std::int64_t inner_a = by_columns ? a.rows : a.cols, inner_b = by_columns ? b.rows : b.cols;
  const std::int64_t outer_a = by_columns ? a.cols : a.rows, outer_b = by_columns ? b.cols : b.rows;
  if (line < std::max(inner_a, inner_b)) return true;
  const std::intptr_t bytes = reinterpret_cast<std::intptr_t>(b.data) - reinterpret_cast<std::intptr_t>(a.data);
  if (bytes % elem_size != 0) return true;
  // a(i, j) is b(i', j') when (i - i') + (j - j') * line = d; |i - i'| <
  // line leaves two ways to split d.
  const std::int64_t d = static_cast<std::int64_t>(bytes / elem_size);
  const std::int64_t outer0 = d >= 0 ? d / line : -((-d + line - 1) / line), inner0 = d - outer0 * line;
  for (const auto& [di, dj] : {std::pair<std::int64_t, std::int64_t>{inner0, outer0}, {inner0 - line, outer0 + 1}})
    if (di > -inner_b && di < inner_a && dj > -outer_b && dj < outer_a) return true;
  return false;
}

// The same for elements of two sizes: then by the byte ranges alone.
inline bool may_share_elements(const MatrixDesc& a, std::int64_t a_elem_size, const MatrixDesc& b,
                               std::int64_t b_elem_size) {
  if (a_elem_size == b_elem_size) return may_share_elements(a, b, a_elem_size);
  return byte_range(a, a_elem_size).overlaps(byte_range(b, b_elem_size));
}

// byte_range(describe(x)) for an Eigen object with direct access in host
// memory (its strides are not negative), without building the
// description: the smallest calls ask it on every call (two checks took
// 4 ns this way on this project's build machine, 23 ns through describe()).
template <class X>
ByteRange object_byte_range(const X& x) {
  if (x.size() == 0) return {};
  const auto first = reinterpret_cast<std::uintptr_t>(x.data());
  const auto last_offset = static_cast<std::uintptr_t>((x.outerSize() - 1) * x.outerStride() +
                                                       (x.innerSize() - 1) * x.innerStride());
  return {first, first + (last_offset + 1) * sizeof(typename X::Scalar)};
}

// may_share_elements for two Eigen objects with direct access in host
// memory; objects whose bytes do not meet are told apart first, cheaply.
template <class X, class Y>
bool objects_may_share_elements(const X& x, const Y& y) {
  if (!object_byte_range(x).overlaps(object_byte_range(y))) return false;
  return may_share_elements(describe(x), sizeof(typename X::Scalar), describe(y), sizeof(typename Y::Scalar));
}

// One operand of a product as the GEMM sees it: op(X) = conj? (X) times a
// factor. X is the user's memory (host, or a DeviceMatrix view) when egpu
// can point at it, else a column-major temporary of the product's scalar
// type: in device memory when X reads a DeviceMatrix, evaluated there.
template <class Scalar, class Operand>
class GemmOperand {
  using Traits = Eigen::internal::blas_traits<Operand>;
  using Extracted = typename Traits::ExtractType;  // a reference or a light view
  using ExtractedPlain = std::remove_const_t<std::remove_reference_t<Extracted>>;
  static constexpr bool kInPlace =
      describable_v<ExtractedPlain> && std::is_same_v<typename ExtractedPlain::Scalar, Scalar>;
  static constexpr bool kOnDevice = !kInPlace && holds_device_v<ExtractedPlain>;
  using Temporary = std::conditional_t<kOnDevice, DeviceMatrix<Scalar>, Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic>>;

 public:
  explicit GemmOperand(const Operand& x)
      : m_extracted(Traits::extract(x)), m_factor(Scalar(Traits::extractScalarFactor(x))) {
    if constexpr (!kInPlace) m_temporary = m_extracted.template cast<Scalar>();
  }

  MatrixDesc desc() const {
    MatrixDesc d;
    if constexpr (kInPlace)
      d = describe_any(m_extracted);
    else
      d = describe_any(m_temporary);
    d.conj = Traits::NeedToConjugate;
    return d;
  }
  Scalar factor() const { return m_factor; }
  // Whether desc() points at the user's memory (and so may alias the destination).
  static constexpr bool in_user_memory = kInPlace;

 private:
  Extracted m_extracted;
  Scalar m_factor;
  Temporary m_temporary;
};

}  // namespace egpu::detail

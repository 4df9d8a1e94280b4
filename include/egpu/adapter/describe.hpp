// Turns Eigen objects with direct access into the library's plain
// MatrixDesc, and operands of a product into (matrix, conjugate, factor)
// through Eigen's blas_traits, evaluating anything without direct access
// into a temporary first.
#pragma once

#include <Eigen/Dense>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "egpu/detail/gemm_descriptor.hpp"

namespace egpu::detail {

template <class X>
constexpr bool has_direct_access_v = (int(X::Flags) & Eigen::DirectAccessBit) != 0;

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
  // A vector's stride along its length-one side is never used; make it
  // harmless for the overlap checks.
  if (d.rows == 1) d.row_stride = 1;
  if (d.cols == 1) d.col_stride = std::max<std::int64_t>(d.col_stride, d.rows * d.row_stride);
  return d;
}

// Whether a and b are the same view of the same memory: the same first
// element, shape and strides (element types are compared by the caller).
inline bool same_view(const MatrixDesc& a, const MatrixDesc& b) {
  return a.data == b.data && a.rows == b.rows && a.cols == b.cols && a.row_stride == b.row_stride &&
         a.col_stride == b.col_stride;
}

// The bytes [first, last) a described matrix touches.
struct ByteRange {
  std::uintptr_t first = 0, last = 0;
  bool overlaps(const ByteRange& o) const { return first < o.last && o.first < last; }
};

inline ByteRange byte_range(const MatrixDesc& d, std::int64_t elem_size) {
  if (d.rows == 0 || d.cols == 0) return {};
  const auto base = reinterpret_cast<std::intptr_t>(d.data);
  std::intptr_t lo = 0, hi = 0;
  for (std::int64_t corner : {(d.rows - 1) * d.row_stride, (d.cols - 1) * d.col_stride,
                              (d.rows - 1) * d.row_stride + (d.cols - 1) * d.col_stride}) {
    lo = std::min<std::intptr_t>(lo, corner * elem_size);
    hi = std::max<std::intptr_t>(hi, corner * elem_size);
  }
  return {static_cast<std::uintptr_t>(base + lo), static_cast<std::uintptr_t>(base + hi + elem_size)};
}

// One operand of a product as the GEMM sees it: op(X) = conj? (X) times a
// factor. X is the user's memory when Eigen can point at it, else a
// column-major temporary of the product's scalar type.
template <class Scalar, class Operand>
class GemmOperand {
  using Traits = Eigen::internal::blas_traits<Operand>;
  using Extracted = typename Traits::ExtractType;  // a reference or a light view
  using ExtractedPlain = std::remove_const_t<std::remove_reference_t<Extracted>>;
  static constexpr bool kDirect =
      has_direct_access_v<ExtractedPlain> && std::is_same_v<typename ExtractedPlain::Scalar, Scalar>;
  using Temporary = Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic>;

 public:
  explicit GemmOperand(const Operand& x)
      : m_extracted(Traits::extract(x)), m_factor(Scalar(Traits::extractScalarFactor(x))) {
    if constexpr (!kDirect) m_temporary = m_extracted.template cast<Scalar>();
  }

  MatrixDesc desc() const {
    MatrixDesc d;
    if constexpr (kDirect)
      d = describe(m_extracted);
    else
      d = describe(m_temporary);
    d.conj = Traits::NeedToConjugate;
    return d;
  }
  Scalar factor() const { return m_factor; }
  // Whether desc() points at the user's memory (and so may alias the destination).
  static constexpr bool in_user_memory = kDirect;

 private:
  Extracted m_extracted;
  Scalar m_factor;
  Temporary m_temporary;
};

}  // namespace egpu::detail

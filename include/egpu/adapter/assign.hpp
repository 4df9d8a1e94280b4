// `dst func= gpu(xpr)`: checks sizes, keeps Eigen's aliasing rule, falls
// back to CPU Eigen without a device, and otherwise describes the product
// for the compiled library.
#pragma once

#include <Eigen/Dense>

#include <complex>
#include <sstream>
#include <string>
#include <type_traits>

#include "egpu/adapter/describe.hpp"
#include "egpu/adapter/gpu_expr.hpp"
#include "egpu/adapter/product_parts.hpp"
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
template <class T>
struct resizable<Eigen::Transpose<T>> {
  static bool to(Eigen::Index rows, Eigen::Index cols) { return resizable<T>::to(cols, rows); }
};

inline std::string size_text(Eigen::Index rows, Eigen::Index cols) {
  std::ostringstream s;
  s << rows << "x" << cols;
  return s.str();
}

template <class Scalar>
std::complex<double> as_complex_double(const Scalar& s) {
  return std::complex<double>(s);
}

// The product part: dst func= factor * (lhs * rhs).
template <class Dst, class Product, class Func>
void assign_product(Dst& dst, const Product& product, const typename Product::Scalar& factor,
                    const Options& options, const Func& func) {
  using Scalar = typename Product::Scalar;
  using Lhs = typename Product::LhsNestedCleaned;
  using Rhs = typename Product::RhsNestedCleaned;
  using Plain = Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic>;
  constexpr int kind = functor_kind<Func>::value;

  const Lhs& lhs = product.lhs();
  const Rhs& rhs = product.rhs();
  if (lhs.cols() != rhs.rows())
    throw error("product " + size_text(lhs.rows(), lhs.cols()) + " * " + size_text(rhs.rows(), rhs.cols()) +
                ": inner sizes differ");
  const Eigen::Index m = lhs.rows(), n = rhs.cols(), k = lhs.cols();
  if (dst.rows() != m || dst.cols() != n) {
    if (!(kind == 1 && resizable<Dst>::to(m, n)))
      throw error("destination is " + size_text(dst.rows(), dst.cols()) + " but the product is " + size_text(m, n));
  }

  if constexpr (kind == 0) {
    // Another compound assignment (e.g. array *=): compute, then let Eigen combine.
    Plain result(m, n);
    assign_product(result, product, factor, options, Eigen::internal::assign_op<Scalar, Scalar>());
    Eigen::internal::call_assignment_no_alias(dst, result, func);
    return;
  } else {
    if (!has_device()) {
      Eigen::internal::call_assignment(dst, factor * product, func);
      return;
    }
    if (m == 0 || n == 0 || k == 0) {
      if constexpr (kind == 1) {
        dst.resize(m, n);
        dst.setZero();
      }
      return;
    }

    GemmOperand<Scalar, Lhs> a(lhs);
    GemmOperand<Scalar, Rhs> b(rhs);
    GemmDesc desc;
    desc.scalar = scalar_kind_of<Scalar>::value;
    desc.m = m;
    desc.n = n;
    desc.k = k;
    desc.a = a.desc();
    desc.b = b.desc();
    const Scalar alpha = factor * a.factor() * b.factor();
    desc.alpha = as_complex_double(kind == 3 ? Scalar(-alpha) : alpha);

    constexpr bool dst_direct =
        has_direct_access_v<Dst> && std::is_same_v<typename Dst::Scalar, Scalar>;
    bool aliased = false;
    if constexpr (dst_direct) {
      const auto elem = scalar_size(desc.scalar);
      const ByteRange out = byte_range(describe(dst), elem);
      aliased = (GemmOperand<Scalar, Lhs>::in_user_memory && out.overlaps(byte_range(desc.a, elem))) ||
                (GemmOperand<Scalar, Rhs>::in_user_memory && out.overlaps(byte_range(desc.b, elem)));
    }
    if (!dst_direct || aliased) {
      // Eigen's rule for `=` (and what a destination without direct access
      // needs): the product goes to a temporary, then into dst.
      Plain result(m, n);
      desc.c = describe(result);
      desc.alpha = as_complex_double(alpha);
      desc.beta_is_zero = true;
      gemm(desc, options);
      Eigen::internal::call_assignment_no_alias(dst, result, func);
      return;
    }
    if constexpr (dst_direct) {
      if constexpr (kind == 1) dst.resize(m, n);
      desc.c = describe(dst);
      desc.beta = kind == 1 ? 0.0 : 1.0;
      desc.beta_is_zero = kind == 1;
      gemm(desc, options);
    }
  }
}

template <class Dst, class Xpr, class Func>
void assign(Dst& dst, const GpuExpr<Xpr>& src, const Func& func) {
  using Parts = product_parts<Xpr>;
  static_assert(Parts::is_product,
                "egpu::gpu: this version runs matrix products (A * B with optional transpose(), adjoint(), "
                "conjugate() and scalar factors); other expressions are not supported yet");
  if constexpr (Parts::is_product) {
    const auto& product = Parts::product(src.expression());
    using Scalar = typename std::remove_reference_t<decltype(product)>::Scalar;
    static_assert(is_supported_scalar_v<Scalar>,
                  "egpu::gpu: scalars are float, double, std::complex<float> and std::complex<double>");
    assign_product(dst, product, Scalar(Parts::factor(src.expression())), src.options(), func);
  }
}

}  // namespace egpu::detail

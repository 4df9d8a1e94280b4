// A host interpreter of ElementwiseProgram for the tests: each coefficient
// through the program, each instruction computed in its own type with
// Eigen's scalar functor for it (the one Eigen's own coefficient loop
// calls). It reads only what the program says (leaf pointers and strides,
// constants, instructions), so a wrong description gives a wrong result.
#pragma once

#include <Eigen/Dense>

#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "egpu/detail/elementwise_program.hpp"

namespace egpu_test {

using egpu::detail::ElementwiseProgram;
using egpu::detail::EwInstr;
using egpu::detail::EwOp;
using egpu::detail::ValueKind;

// One value of any type a program computes.
struct EwValue {
  ValueKind kind = ValueKind::f64;
  float f = 0;
  double d = 0;
  std::complex<float> cf;
  std::complex<double> cd;
  bool b = false;

  template <class T> T get() const {
    if constexpr (std::is_same_v<T, float>) return f;
    else if constexpr (std::is_same_v<T, double>) return d;
    else if constexpr (std::is_same_v<T, std::complex<float>>) return cf;
    else if constexpr (std::is_same_v<T, std::complex<double>>) return cd;
    else return b;
  }
  template <class T> static EwValue of(T v) {
    EwValue r;
    if constexpr (std::is_same_v<T, float>) r.kind = ValueKind::f32, r.f = v;
    else if constexpr (std::is_same_v<T, double>) r.kind = ValueKind::f64, r.d = v;
    else if constexpr (std::is_same_v<T, std::complex<float>>) r.kind = ValueKind::c32, r.cf = v;
    else if constexpr (std::is_same_v<T, std::complex<double>>) r.kind = ValueKind::c64, r.cd = v;
    else r.kind = ValueKind::boolean, r.b = v;
    return r;
  }
  // As the scalar type T (Eigen's cast, a static_cast; Eigen has no cast from
  // complex to real, nor does a program).
  template <class T> T as() const {
    switch (kind) {
      case ValueKind::f32: return Eigen::internal::cast<float, T>(f);
      case ValueKind::f64: return Eigen::internal::cast<double, T>(d);
      case ValueKind::c32: return from_complex<T>(cf);
      case ValueKind::c64: return from_complex<T>(cd);
      default: return Eigen::internal::cast<bool, T>(b);
    }
  }
  template <class T, class C> static T from_complex(const C& c) {
    if constexpr (Eigen::NumTraits<T>::IsComplex) return Eigen::internal::cast<C, T>(c);
    else throw std::logic_error("reference: a cast from complex to real");
  }
};

// Calls f with a value-initialised object of the C++ type of kind k.
template <class F> auto with_kind(ValueKind k, F&& f) {
  switch (k) {
    case ValueKind::f32: return f(float());
    case ValueKind::f64: return f(double());
    case ValueKind::c32: return f(std::complex<float>());
    case ValueKind::c64: return f(std::complex<double>());
    default: return f(bool());
  }
}

namespace ew_ref {
namespace ei = Eigen::internal;
template <class T> constexpr bool is_cplx = Eigen::NumTraits<T>::IsComplex;

template <class T> EwValue unary(EwOp op, T x) {
  using R = typename Eigen::NumTraits<T>::Real;
  auto v = [](auto r) { return EwValue::of(r); };
  if constexpr (std::is_same_v<T, bool>) {
    if (op == EwOp::logical_not) return v(!x);
  } else {
    switch (op) {
      case EwOp::negate: return v(ei::scalar_opposite_op<T>()(x));
      case EwOp::abs: return v(R(ei::scalar_abs_op<T>()(x)));
      case EwOp::abs2: return v(R(ei::scalar_abs2_op<T>()(x)));
      case EwOp::sqrt: return v(ei::scalar_sqrt_op<T>()(x));
      case EwOp::rsqrt: return v(ei::scalar_rsqrt_op<T>()(x));
      case EwOp::square: return v(ei::scalar_square_op<T>()(x));
      case EwOp::cube: return v(ei::scalar_cube_op<T>()(x));
      case EwOp::inverse: return v(ei::scalar_inverse_op<T>()(x));
      case EwOp::exp: return v(ei::scalar_exp_op<T>()(x));
      case EwOp::expm1: return v(ei::scalar_expm1_op<T>()(x));
      case EwOp::log: return v(ei::scalar_log_op<T>()(x));
      case EwOp::log1p: return v(ei::scalar_log1p_op<T>()(x));
      case EwOp::log10: return v(ei::scalar_log10_op<T>()(x));
      case EwOp::sin: return v(ei::scalar_sin_op<T>()(x));
      case EwOp::cos: return v(ei::scalar_cos_op<T>()(x));
      case EwOp::tan: return v(ei::scalar_tan_op<T>()(x));
      case EwOp::asin: return v(ei::scalar_asin_op<T>()(x));
      case EwOp::acos: return v(ei::scalar_acos_op<T>()(x));
      case EwOp::atan: return v(ei::scalar_atan_op<T>()(x));
      case EwOp::sinh: return v(ei::scalar_sinh_op<T>()(x));
      case EwOp::cosh: return v(ei::scalar_cosh_op<T>()(x));
      case EwOp::tanh: return v(ei::scalar_tanh_op<T>()(x));
      case EwOp::real: return v(R(ei::scalar_real_op<T>()(x)));
      case EwOp::imag: return v(R(ei::scalar_imag_op<T>()(x)));
      case EwOp::conj: return v(ei::scalar_conjugate_op<T>()(x));
      case EwOp::arg: return v(R(ei::scalar_arg_op<T>()(x)));
      default: break;
    }
    if constexpr (!is_cplx<T>) {
      switch (op) {
        case EwOp::floor: return v(ei::scalar_floor_op<T>()(x));
        case EwOp::ceil: return v(ei::scalar_ceil_op<T>()(x));
        case EwOp::round: return v(ei::scalar_round_op<T>()(x));
        default: break;
      }
    }
  }
  throw std::logic_error(std::string("reference: no ") + egpu::detail::op_name(op) + " for this type");
}

// The scalar pairs Eigen lets a binary functor mix: equal types, or a real
// type with the complex of it.
template <class L, class R>
constexpr bool mixable = !std::is_same_v<L, bool> && !std::is_same_v<R, bool> &&
                         (std::is_same_v<L, R> || std::is_same_v<std::complex<L>, R> ||
                          std::is_same_v<L, std::complex<R>>);

template <class L, class R> EwValue binary(EwOp op, L x, R y) {
  auto v = [](auto r) { return EwValue::of(r); };
  if constexpr (std::is_same_v<L, bool> && std::is_same_v<R, bool>) {
    if (op == EwOp::logical_and) return v(x && y);
    if (op == EwOp::logical_or) return v(x || y);
  } else if constexpr (mixable<L, R>) {
    switch (op) {
      case EwOp::add: return v(ei::scalar_sum_op<L, R>()(x, y));
      case EwOp::sub: return v(ei::scalar_difference_op<L, R>()(x, y));
      case EwOp::mul: return v(ei::scalar_product_op<L, R>()(x, y));
      case EwOp::div: return v(ei::scalar_quotient_op<L, R>()(x, y));
      default: break;
    }
    if constexpr (std::is_same_v<L, R>) {
      switch (op) {
        case EwOp::pow: return v(ei::scalar_pow_op<L, R>()(x, y));
        case EwOp::eq: return v(ei::scalar_cmp_op<L, R, ei::cmp_EQ>()(x, y));
        case EwOp::ne: return v(ei::scalar_cmp_op<L, R, ei::cmp_NEQ>()(x, y));
        default: break;
      }
      if constexpr (!is_cplx<L>) {
        switch (op) {
          case EwOp::min: return v(ei::scalar_min_op<L, R, Eigen::PropagateFast>()(x, y));
          case EwOp::max: return v(ei::scalar_max_op<L, R, Eigen::PropagateFast>()(x, y));
          case EwOp::lt: return v(ei::scalar_cmp_op<L, R, ei::cmp_LT>()(x, y));
          case EwOp::le: return v(ei::scalar_cmp_op<L, R, ei::cmp_LE>()(x, y));
          case EwOp::gt: return v(ei::scalar_cmp_op<L, R, ei::cmp_GT>()(x, y));
          case EwOp::ge: return v(ei::scalar_cmp_op<L, R, ei::cmp_GE>()(x, y));
          default: break;
        }
      }
    }
  }
  throw std::logic_error(std::string("reference: no ") + egpu::detail::op_name(op) + " for these types");
}
}  // namespace ew_ref

// `v` scaled by 1 + units * eps of its own type (booleans unchanged).
inline EwValue scaled_by_ulps(const EwValue& v, double units) {
  EwValue r = v;
  const double f = units * double(std::numeric_limits<float>::epsilon()),
               d = units * double(std::numeric_limits<double>::epsilon());
  switch (v.kind) {
    case ValueKind::f32: r.f = v.f * (1 + float(f)); break;
    case ValueKind::f64: r.d = v.d * (1 + d); break;
    case ValueKind::c32: r.cf = v.cf * (1 + float(f)); break;
    case ValueKind::c64: r.cd = v.cd * (1 + d); break;
    default: break;
  }
  return r;
}

// The value of every instruction of the program at (i, j). With
// `rounding_units`, the result of every operation (not of a load, constant,
// cast or select) is scaled by 1 + rounding_units * eps of its type: a
// model of one implementation's rounding against another's at each step.
inline std::vector<EwValue> evaluate_all(const ElementwiseProgram& p, std::int64_t i, std::int64_t j,
                                         double rounding_units = 0) {
  std::vector<EwValue> values(p.code.size());
  for (std::size_t t = 0; t < p.code.size(); ++t) {
    const EwInstr& in = p.code[t];
    auto arg = [&](int k) -> const EwValue& { return values.at(static_cast<std::size_t>(k)); };
    switch (in.op) {
      case EwOp::load: {
        const auto& leaf = p.leaves.at(static_cast<std::size_t>(in.index));
        const std::int64_t at = i * leaf.m.row_stride + j * leaf.m.col_stride;
        values[t] = with_kind(in.type, [&](auto zero) {
          using T = decltype(zero);
          return EwValue::of(static_cast<const T*>(leaf.m.data)[at]);
        });
        break;
      }
      case EwOp::constant: {
        const std::complex<double> c = p.constants.at(static_cast<std::size_t>(in.index));
        values[t] = with_kind(in.type, [&](auto zero) {
          using T = decltype(zero);
          if constexpr (Eigen::NumTraits<T>::IsComplex) return EwValue::of(T(c));
          else return EwValue::of(static_cast<T>(c.real()));
        });
        break;
      }
      case EwOp::cast:
        values[t] = with_kind(in.type, [&](auto zero) { return EwValue::of(arg(in.x).as<decltype(zero)>()); });
        break;
      case EwOp::select:
        values[t] = arg(in.x).b ? arg(in.y) : arg(in.z);
        break;
      default:
        if (in.y < 0) {
          values[t] = with_kind(arg(in.x).kind, [&](auto zero) {
            return ew_ref::unary(in.op, arg(in.x).get<decltype(zero)>());
          });
        } else {
          values[t] = with_kind(arg(in.x).kind, [&](auto l) {
            return with_kind(arg(in.y).kind, [&](auto r) {
              return ew_ref::binary(in.op, arg(in.x).get<decltype(l)>(), arg(in.y).get<decltype(r)>());
            });
          });
        }
        if (rounding_units != 0) values[t] = scaled_by_ulps(values[t], rounding_units);
    }
  }
  return values;
}

// The program's value at (i, j) (rounding_units: evaluate_all's).
inline EwValue evaluate_at(const ElementwiseProgram& p, std::int64_t i, std::int64_t j, double rounding_units = 0) {
  return evaluate_all(p, i, j, rounding_units).back();
}

// Whether a complex value with an infinite or NaN part arises anywhere in the
// program at (i, j): there C's complex arithmetic (Annex G) recovers
// infinities that plain formulas turn into NaN.
inline bool complex_non_finite_inside(const ElementwiseProgram& p, std::int64_t i, std::int64_t j) {
  for (const EwValue& v : evaluate_all(p, i, j)) {
    if (v.kind == ValueKind::c32 && !(std::isfinite(v.cf.real()) && std::isfinite(v.cf.imag()))) return true;
    if (v.kind == ValueKind::c64 && !(std::isfinite(v.cd.real()) && std::isfinite(v.cd.imag()))) return true;
  }
  return false;
}

}  // namespace egpu_test

// Random coefficient-wise programs for the tests: expression trees of random
// operations and scalar types (depth up to a limit), drawn as Eigen's type
// rules allow them (validate() accepts every one), over leaves of random
// layout (column-major, row-major, padded blocks, broadcast rows and
// columns) holding random values with NaN, +-Inf and zeros sprinkled in, and
// random constants. The program owns its leaves' host memory.
#pragma once

#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "egpu/detail/elementwise_program.hpp"
#include "support/elementwise_forms.hpp"
#include "support/elementwise_reference.hpp"
#include "support/test_support.hpp"

namespace egpu_test {

struct RandomProgram {
  egpu::detail::ElementwiseProgram program;
  std::vector<std::shared_ptr<std::vector<unsigned char>>> storage;  // the leaves' bytes
};

class RandomProgramMaker {
 public:
  using EwOp = egpu::detail::EwOp;
  using ValueKind = egpu::detail::ValueKind;
  using ScalarKind = egpu::detail::ScalarKind;

  RandomProgramMaker(std::int64_t rows, std::int64_t cols, int max_depth) : m_depth(max_depth) {
    m_r.program.rows = rows;
    m_r.program.cols = cols;
  }

  // A program whose value has the given (non-boolean) type.
  RandomProgram make(ValueKind result) {
    node(result, m_depth);
    return std::move(m_r);
  }

 private:
  static ValueKind real_of(ValueKind k) { return k == ValueKind::c32 ? ValueKind::f32 : k == ValueKind::c64 ? ValueKind::f64 : k; }
  static ValueKind complex_of(ValueKind k) { return k == ValueKind::f32 ? ValueKind::c32 : k == ValueKind::f64 ? ValueKind::c64 : k; }
  static ValueKind other_precision(ValueKind k) {
    switch (k) {
      case ValueKind::f32: return ValueKind::f64;
      case ValueKind::f64: return ValueKind::f32;
      case ValueKind::c32: return ValueKind::c64;
      default: return ValueKind::c32;
    }
  }
  template <class T> static T pick(std::initializer_list<T> choices) {
    return *(choices.begin() + uniform_index(0, static_cast<Index>(choices.size()) - 1));
  }

  int emit(EwOp op, ValueKind type, int x = -1, int y = -1, int z = -1, int index = -1) {
    return egpu::detail::emit(m_r.program, op, type, x, y, z, index);
  }

  template <class S> int leaf_of() {
    const std::int64_t rows = m_r.program.rows, cols = m_r.program.cols;
    egpu::detail::MatrixDesc m;
    m.rows = rows;
    m.cols = cols;
    std::int64_t extent = rows * cols, offset = 0;
    switch (uniform_index(0, 5)) {
      case 0: case 1: m.row_stride = 1, m.col_stride = rows; break;               // column-major
      case 2: m.row_stride = cols, m.col_stride = 1; break;                       // row-major
      case 3:                                                                     // padded block
        offset = 1, m.row_stride = 1, m.col_stride = rows + 3, extent = 1 + (rows + 3) * cols;
        break;
      case 4: m.row_stride = 1, m.col_stride = 0, extent = rows; break;           // a column, broadcast
      default: m.row_stride = 0, m.col_stride = 1, extent = cols; break;          // a row, broadcast
    }
    auto bytes = std::make_shared<std::vector<unsigned char>>(static_cast<std::size_t>(extent + 1) * sizeof(S));
    S* data = reinterpret_cast<S*>(bytes->data());
    for (std::int64_t k = 0; k <= extent; ++k) data[k] = sprinkled<S>();
    m.data = data + offset;
    m_r.storage.push_back(bytes);
    m_r.program.leaves.push_back({egpu::detail::scalar_kind_of<S>::value, m});
    return emit(EwOp::load, egpu::detail::value_kind(egpu::detail::scalar_kind_of<S>::value), -1, -1, -1,
                static_cast<int>(m_r.program.leaves.size()) - 1);
  }
  int leaf(ValueKind k) {
    switch (k) {
      case ValueKind::f32: return leaf_of<float>();
      case ValueKind::f64: return leaf_of<double>();
      case ValueKind::c32: return leaf_of<std::complex<float>>();
      default: return leaf_of<std::complex<double>>();
    }
  }
  int constant(ValueKind k) {
    const double re = 4 * (std::uniform_real_distribution<double>(-1, 1)(rng()));
    const double im = egpu::detail::is_complex(k) ? 4 * std::uniform_real_distribution<double>(-1, 1)(rng()) : 0;
    m_r.program.constants.push_back({re, im});
    return emit(EwOp::constant, k, -1, -1, -1, static_cast<int>(m_r.program.constants.size()) - 1);
  }

  // An instruction whose value has type k, at most `depth` levels deep.
  int node(ValueKind k, int depth) {
    if (k == ValueKind::boolean) return boolean(depth);
    if (depth <= 0 || coin(0.15)) return coin(0.8) ? leaf(k) : constant(k);
    const bool complex = egpu::detail::is_complex(k);
    switch (uniform_index(0, 5)) {
      case 0: case 1: {  // a function of one value of type k
        const EwOp op = complex ? pick({EwOp::negate, EwOp::sqrt, EwOp::rsqrt, EwOp::square, EwOp::cube, EwOp::inverse,
                                        EwOp::exp, EwOp::expm1, EwOp::log, EwOp::log1p, EwOp::log10, EwOp::sin,
                                        EwOp::cos, EwOp::tan, EwOp::asin, EwOp::acos, EwOp::atan, EwOp::sinh,
                                        EwOp::cosh, EwOp::tanh, EwOp::conj})
                                : pick({EwOp::negate, EwOp::abs, EwOp::abs2, EwOp::sqrt, EwOp::rsqrt, EwOp::square,
                                        EwOp::cube, EwOp::inverse, EwOp::exp, EwOp::expm1, EwOp::log, EwOp::log1p,
                                        EwOp::log10, EwOp::sin, EwOp::cos, EwOp::tan, EwOp::asin, EwOp::acos,
                                        EwOp::atan, EwOp::sinh, EwOp::cosh, EwOp::tanh, EwOp::floor, EwOp::ceil,
                                        EwOp::round, EwOp::real, EwOp::imag, EwOp::conj, EwOp::arg});
        return emit(op, k, node(k, depth - 1));
      }
      case 2: {  // two values of type k
        const EwOp op = complex ? pick({EwOp::add, EwOp::sub, EwOp::mul, EwOp::div, EwOp::pow})
                                : pick({EwOp::add, EwOp::sub, EwOp::mul, EwOp::div, EwOp::min, EwOp::max, EwOp::pow});
        const int x = node(k, depth - 1);
        return emit(op, k, x, node(k, depth - 1));
      }
      case 3: {  // complex: a real and a complex mixed; real: a part of a complex value
        if (complex) {
          const EwOp op = pick({EwOp::add, EwOp::sub, EwOp::mul, EwOp::div});
          const bool real_left = coin();
          const int x = node(real_left ? real_of(k) : k, depth - 1);
          return emit(op, k, x, node(real_left ? k : real_of(k), depth - 1));
        }
        return emit(pick({EwOp::abs, EwOp::abs2, EwOp::real, EwOp::imag, EwOp::arg}), k,
                    node(complex_of(k), depth - 1));
      }
      case 4: {  // select
        const int c = boolean(depth - 1);
        const int t = node(k, depth - 1);
        return emit(EwOp::select, k, c, t, node(k, depth - 1));
      }
      default: {  // a cast: from the other precision, or from real to complex
        const ValueKind from = complex && coin() ? real_of(pick({k, other_precision(k)})) : other_precision(k);
        return emit(EwOp::cast, k, node(from, depth - 1));
      }
    }
  }
  int boolean(int depth) {
    if (depth > 1 && coin(0.3)) {
      if (coin(0.3)) return emit(EwOp::logical_not, ValueKind::boolean, boolean(depth - 1));
      const int x = boolean(depth - 1);
      return emit(pick({EwOp::logical_and, EwOp::logical_or}), ValueKind::boolean, x, boolean(depth - 1));
    }
    const ValueKind k = pick({ValueKind::f32, ValueKind::f64, ValueKind::c32, ValueKind::c64});
    const EwOp op = egpu::detail::is_complex(k) ? pick({EwOp::eq, EwOp::ne})
                                                : pick({EwOp::eq, EwOp::ne, EwOp::lt, EwOp::le, EwOp::gt, EwOp::ge});
    const int x = node(k, depth - 1);
    return emit(op, ValueKind::boolean, x, node(k, depth - 1));
  }

  int m_depth;
  RandomProgram m_r;
};

// A random program of the given shape, result type and depth limit.
inline RandomProgram random_program(std::int64_t rows, std::int64_t cols, egpu::detail::ValueKind result,
                                    int max_depth) {
  return RandomProgramMaker(rows, cols, max_depth).make(result);
}

// A copy of r whose leaf values are scaled by (1 + units * eps), eps the
// given one, or each leaf type's own when eps is 0; its constants too (a
// chain of constants alone is computed by the GPU's functions as well, and
// may feed an ill-conditioned one such as tan of a large value). The bounds
// of the GPU tests come from how much such copies differ.
inline RandomProgram perturbed(const RandomProgram& r, double units, double eps) {
  namespace ed = egpu::detail;
  RandomProgram p = r;
  for (const auto& in : r.program.code)
    if (in.op == ed::EwOp::constant) {
      const bool single = in.type == ed::ValueKind::f32 || in.type == ed::ValueKind::c32;
      const double own = single ? double(std::numeric_limits<float>::epsilon()) : double(std::numeric_limits<double>::epsilon());
      p.program.constants[static_cast<std::size_t>(in.index)] *= 1.0 + units * (eps > 0 ? eps : own);
    }
  for (std::size_t k = 0; k < r.storage.size(); ++k) {
    p.storage[k] = std::make_shared<std::vector<unsigned char>>(*r.storage[k]);
    auto& leaf = p.program.leaves[k];
    const std::ptrdiff_t offset = static_cast<const unsigned char*>(leaf.m.data) - r.storage[k]->data();
    leaf.m.data = p.storage[k]->data() + offset;
    auto scale = [&](auto* zero) {
      using S = std::remove_pointer_t<decltype(zero)>;
      using R = typename Eigen::NumTraits<S>::Real;
      auto* v = reinterpret_cast<S*>(p.storage[k]->data());
      const R f = R(1) + R(units * (eps > 0 ? eps : double(std::numeric_limits<R>::epsilon())));
      for (std::size_t e = 0; e < p.storage[k]->size() / sizeof(S); ++e) v[e] *= f;
    };
    switch (leaf.scalar) {
      case ed::ScalarKind::f32: scale(static_cast<float*>(nullptr)); break;
      case ed::ScalarKind::f64: scale(static_cast<double*>(nullptr)); break;
      case ed::ScalarKind::c32: scale(static_cast<std::complex<float>*>(nullptr)); break;
      case ed::ScalarKind::c64: scale(static_cast<std::complex<double>*>(nullptr)); break;
    }
  }
  return p;
}

// The program as text, for a failure's report.
inline std::string program_text(const egpu::detail::ElementwiseProgram& p) {
  std::ostringstream s;
  for (std::size_t t = 0; t < p.code.size(); ++t) {
    const auto& in = p.code[t];
    s << " v" << t << "=" << egpu::detail::op_name(in.op) << "(";
    if (in.op == egpu::detail::EwOp::load)
      s << "leaf " << in.index;
    else if (in.op == egpu::detail::EwOp::constant)
      s << p.constants[static_cast<std::size_t>(in.index)];
    else
      s << "v" << in.x << (in.y >= 0 ? ",v" + std::to_string(in.y) : "") << (in.z >= 0 ? ",v" + std::to_string(in.z) : "");
    s << ")";
  }
  return s.str();
}

// Coefficients the GPU tests do not judge: (1) a complex value with an
// infinite or NaN part arises inside the program (the results of complex
// operations on non-finite values are not specified: the host's library
// follows C's Annex G, the GPU plain formulas; see ew_prelude.cuh); (2) the
// program takes arg of a real NaN, whose sign bit (which std::arg reads)
// IEEE 754 leaves to the hardware; (3) the program takes arg, or a function
// with a branch cut, of a complex value with a zero part: the sign of that
// zero picks the side of the cut, and the signs of zeros that complex
// products and quotients give are the formulas' (ew_prelude.cuh), not the
// host library's; (4) the program takes real or imag of a complex value
// whose part taken is zero: the sign of that zero is the formulas' too (a
// division of two values on the real axis gives -0 or +0 by the formula:
// complex<float> division on the host, computed in double by the textbook
// formula, and Smith's on the GPU give opposite signs there), and a later
// division by it turns that sign into the sign of an infinity.
inline bool exempt(const egpu::detail::ElementwiseProgram& p, std::int64_t i, std::int64_t j) {
  using egpu::detail::EwOp;
  using egpu::detail::ValueKind;
  const std::vector<EwValue> values = evaluate_all(p, i, j);
  for (const auto& in : p.code) {
    const bool cut = in.op == EwOp::arg || in.op == EwOp::log || in.op == EwOp::log10 || in.op == EwOp::log1p ||
                     in.op == EwOp::sqrt || in.op == EwOp::rsqrt || in.op == EwOp::pow || in.op == EwOp::asin ||
                     in.op == EwOp::acos || in.op == EwOp::atan;
    const bool part = in.op == EwOp::real || in.op == EwOp::imag;
    if (!cut && !part) continue;
    const EwValue& x = values[static_cast<std::size_t>(in.x)];
    if (part) {
      const bool real = in.op == EwOp::real;
      if ((x.kind == ValueKind::c32 && (real ? x.cf.real() : x.cf.imag()) == 0) ||
          (x.kind == ValueKind::c64 && (real ? x.cd.real() : x.cd.imag()) == 0))
        return true;
      continue;
    }
    if (in.op == EwOp::arg && ((x.kind == ValueKind::f32 && std::isnan(x.f)) || (x.kind == ValueKind::f64 && std::isnan(x.d))))
      return true;
    if ((x.kind == ValueKind::c32 && (x.cf.real() == 0 || x.cf.imag() == 0)) ||
        (x.kind == ValueKind::c64 && (x.cd.real() == 0 || x.cd.imag() == 0)))
      return true;
  }
  return complex_non_finite_inside(p, i, j);
}

}  // namespace egpu_test

// Random coefficient-wise programs for the tests: expression trees of random
// operations and scalar types (depth up to a limit), drawn as Eigen's type
// rules allow them (validate() accepts every one), over leaves of random
// layout (column-major, row-major, padded blocks, broadcast rows and
// columns) holding random values with NaN, +-Inf and zeros sprinkled in, and
// random constants. The program owns its leaves' host memory.
#pragma once

#include <complex>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "egpu/detail/elementwise_program.hpp"
#include "support/elementwise_forms.hpp"
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

}  // namespace egpu_test

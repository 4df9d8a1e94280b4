// Host matrices of egpu-bench's subcommands: random fills, NaN poisoning and
// the relative error, all spread over every core (at N=16384 one core would
// take seconds for each).
#pragma once

#include <Eigen/Core>

#include <cmath>
#include <complex>
#include <cstddef>
#include <limits>
#include <mutex>
#include <string>

#include "bench_common.hpp"

namespace egpu_bench {

template <class Scalar>
using Real = typename Eigen::NumTraits<Scalar>::Real;

// Uniform in [-1, 1) (real and imaginary parts): never all zeros.
template <class Derived>
void fill_random(Eigen::PlainObjectBase<Derived>& m, unsigned long long seed) {
  using Scalar = typename Derived::Scalar;
  constexpr std::size_t parts = sizeof(Scalar) / sizeof(Real<Scalar>);
  fill_random(reinterpret_cast<Real<Scalar>*>(m.data()), static_cast<std::size_t>(m.size()) * parts, seed);
}

// NaN everywhere: an element a product never writes shows as an error.
template <class Derived>
void fill_nan(Eigen::PlainObjectBase<Derived>& m) {
  using Scalar = typename Derived::Scalar;
  const Scalar nan = Scalar(std::numeric_limits<Real<Scalar>>::quiet_NaN());
  Scalar* p = m.data();
  parallel_for(static_cast<std::size_t>(m.size()), [=](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) p[i] = nan;
  });
}

// ||c - ref||_F / ||ref||_F; NaN when c holds a NaN.
template <class Derived>
double relative_error(const Eigen::PlainObjectBase<Derived>& c, const Eigen::PlainObjectBase<Derived>& ref) {
  using Scalar = typename Derived::Scalar;
  const Scalar* pc = c.data();
  const Scalar* pr = ref.data();
  double diff = 0, norm = 0;
  std::mutex lock;
  parallel_for(static_cast<std::size_t>(ref.size()), [&](std::size_t begin, std::size_t end) {
    double d = 0, r = 0;
    for (std::size_t i = begin; i < end; ++i) {
      d += static_cast<double>(std::norm(pc[i] - pr[i]));
      r += static_cast<double>(std::norm(pr[i]));
    }
    std::lock_guard<std::mutex> guard(lock);
    diff += d;
    norm += r;
  });
  return std::sqrt(diff) / std::sqrt(norm);
}

// Two correct products differ by rounding that grows about like sqrt(k);
// anything far above that is a wrong answer, not rounding.
template <class Scalar>
double tolerance(long k) {
  return 50.0 * static_cast<double>(std::numeric_limits<Real<Scalar>>::epsilon()) *
         std::sqrt(static_cast<double>(k));
}

// Real flops of an n x n x n product: a complex multiply-add is 8.
inline double product_flops(long n, const std::string& scalar) {
  const double per_multiply_add = (scalar == "c32" || scalar == "c64") ? 8.0 : 2.0;
  return per_multiply_add * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n);
}

inline std::size_t scalar_bytes(const std::string& scalar) {
  return scalar == "f32" ? 4 : (scalar == "f64" || scalar == "c32") ? 8 : 16;
}

}  // namespace egpu_bench

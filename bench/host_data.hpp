// Host matrices of egpu-bench's subcommands: random fills, NaN poisoning,
// the relative error and the largest elementwise difference, all spread
// over every core (at N=16384 one core would take seconds for each).
#pragma once

#include <Eigen/Core>

#include <algorithm>
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

// The largest |x - ref| / max(|ref|, 1) over n real elements: relative where
// the reference is large, absolute near zero (where a sum may cancel). NaN
// where exactly one of the two is NaN; both NaN (pow of a negative number)
// and equal infinities agree.
template <class T>
double max_difference(const T* x, const T* ref, std::size_t n) {
  double worst = 0;
  std::mutex lock;
  parallel_for(n, [&](std::size_t begin, std::size_t end) {
    double w = 0;
    for (std::size_t i = begin; i < end; ++i) {
      const double xi = static_cast<double>(x[i]), ri = static_cast<double>(ref[i]);
      if (xi == ri || (std::isnan(xi) && std::isnan(ri))) continue;
      const double d = std::abs(xi - ri) / std::max(1.0, std::abs(ri));
      if (std::isnan(d)) {
        w = d;
        break;
      }
      w = std::max(w, d);
    }
    std::lock_guard<std::mutex> guard(lock);
    if (!std::isnan(worst) && (std::isnan(w) || w > worst)) worst = w;
  });
  return worst;
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

// Shared helpers of egpu's tests: random data (fresh seeds, never zeros),
// NaN poisoning, the error bound of a product, and the Boost.Test
// precondition that skips GPU tests on machines without a usable GPU.
#pragma once

#include <Eigen/Dense>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "egpu/detail/testing.hpp"
#include "egpu/device.hpp"
#include "egpu/error.hpp"
#include "egpu/pin.hpp"

namespace egpu_test {

using Eigen::Index;

template <class S> using real_t = typename Eigen::NumTraits<S>::Real;
template <class S> constexpr bool is_complex_v = Eigen::NumTraits<S>::IsComplex;

// A wider scalar for reference results: float -> double, complex<float> ->
// complex<double>; double stays double.
template <class S> struct wider { using type = S; };
template <> struct wider<float> { using type = double; };
template <> struct wider<std::complex<float>> { using type = std::complex<double>; };
template <class S> using wider_t = typename wider<S>::type;

template <class S> const char* scalar_name() {
  if constexpr (std::is_same_v<S, float>) return "float";
  else if constexpr (std::is_same_v<S, double>) return "double";
  else if constexpr (std::is_same_v<S, std::complex<float>>) return "complex<float>";
  else return "complex<double>";
}

// Poison for outputs, so that a coefficient still holding it was not
// written: a signaling NaN with a payload of 0xa5 bytes. No operation makes
// one (GPU and CPU arithmetic return quiet NaNs, and negating a NaN only
// flips its sign), and the test data holds quiet NaNs only.
template <class T> void fill_poison(T* data, std::size_t count) {
  using R = typename Eigen::NumTraits<T>::Real;
  unsigned char bits[sizeof(R)];
  if constexpr (sizeof(R) == 4) {
    const std::uint32_t p = 0x7fa5a5a5u;
    std::memcpy(bits, &p, sizeof bits);
  } else {
    const std::uint64_t p = 0x7ff5a5a5a5a5a5a5ull;
    std::memcpy(bits, &p, sizeof bits);
  }
  auto* bytes = reinterpret_cast<unsigned char*>(data);
  for (std::size_t k = 0; k < count * sizeof(T); k += sizeof(R)) std::memcpy(bytes + k, bits, sizeof(R));
}
template <class T> bool is_poison(const T& v) {
  T p;
  fill_poison(&p, 1);
  return std::memcmp(&v, &p, sizeof(T)) == 0;
}

// Runs work(id, fault) on `threads` host threads at once and returns what
// they reported through fault(message) (Boost.Test's checks belong to the
// main thread); an exception leaving a thread is reported too.
template <class Work>
std::vector<std::string> run_on_threads(int threads, Work&& work) {
  std::mutex mutex;
  std::vector<std::string> faults;
  auto fault = [&](const std::string& message) {
    std::lock_guard<std::mutex> lock(mutex);
    faults.push_back(message);
  };
  std::vector<std::thread> pool;
  for (int id = 0; id < threads; ++id)
    pool.emplace_back([&, id] {
      try {
        work(id, fault);
      } catch (const std::exception& e) {
        fault("thread " + std::to_string(id) + " threw: " + e.what());
      }
    });
  for (auto& t : pool) t.join();
  return faults;
}

// Page-locks the objects whose bit is set in `mask` (bit k: the k-th
// object) for the life of the result; `names` says which, for messages.
struct PinnedSubset {
  std::vector<egpu::PinGuard> guards;
  std::string names;
};
template <class... X>
PinnedSubset pin_subset(int mask, const std::vector<std::string>& labels, X&... objects) {
  PinnedSubset p;
  int bit = 0;
  auto one = [&](auto& object) {
    if (mask & (1 << bit)) {
      p.guards.push_back(egpu::pin(object));
      p.names += " " + labels[static_cast<std::size_t>(bit)];
    }
    ++bit;
  };
  (one(objects), ...);
  return p;
}

// One call, run(), with a failure injected after `operations` pipeline
// operations (egpu::detail::inject_failure_after): how it ended.
struct Attempt {
  bool threw = false, other_exception = false;
  std::string message;
};
template <class Run> Attempt attempt(int operations, Run&& run) {
  Attempt out;
  egpu::detail::inject_failure_after(operations);
  try {
    run();
  } catch (const egpu::error& e) {
    out.threw = true;
    out.message = e.what();
  } catch (const std::exception& e) {
    out.other_exception = true;
    out.message = e.what();
  }
  egpu::detail::inject_failure_after(-1);
  return out;
}

// One process-wide generator. Fresh seed each run (printed, so a failure can
// be replayed with EGPU_TEST_SEED=<seed>).
inline std::mt19937_64& rng() {
  static std::mt19937_64 gen = [] {
    std::uint64_t seed = std::random_device{}();
    seed = (seed << 32) ^ std::random_device{}();
    if (const char* s = std::getenv("EGPU_TEST_SEED"); s != nullptr && *s != '\0') seed = std::strtoull(s, nullptr, 0);
    std::printf("egpu_test: seed %llu (replay with EGPU_TEST_SEED)\n", static_cast<unsigned long long>(seed));
    std::fflush(stdout);
    return std::mt19937_64(seed);
  }();
  return gen;
}

inline Index uniform_index(Index lo, Index hi) {  // [lo, hi]
  return std::uniform_int_distribution<Index>(lo, hi)(rng());
}
inline bool coin(double p_true = 0.5) { return std::bernoulli_distribution(p_true)(rng()); }

// Scale of the case counts: EGPU_TEST_SCALE=0.1 under compute-sanitizer.
inline double test_scale() {
  const char* s = std::getenv("EGPU_TEST_SCALE");
  if (s == nullptr || *s == '\0') return 1.0;
  const double v = std::atof(s);
  return v > 0 ? v : 1.0;
}

// A side of a shape shrunk with EGPU_TEST_SCALE so that the shape's size
// (`dims` sides of it shrinking alike) goes with the scale; odd stays odd.
inline Index scaled_dim(Index d, int dims) {
  const double s = test_scale();
  if (s >= 1.0 || d <= 3) return d;
  Index x = std::max<Index>(2, static_cast<Index>(std::lround(double(d) * std::pow(s, 1.0 / dims))));
  if (d % 2 == 1) x |= 1;
  return x;
}
inline int scaled_count(int n) {
  const double v = n * test_scale();
  return v < 1 ? 1 : static_cast<int>(v);
}

// A nonzero value of magnitude in [0.25, 1], random sign (and phase).
template <class S> S random_scalar() {
  using R = real_t<S>;
  std::uniform_real_distribution<double> mag(0.25, 1.0);
  auto one = [&] { return static_cast<R>(coin() ? mag(rng()) : -mag(rng())); };
  if constexpr (is_complex_v<S>) return S(one(), one());
  else return one();
}

template <class Derived> void fill_random(Eigen::DenseBase<Derived>& x) {
  using S = typename Derived::Scalar;
  for (Index j = 0; j < x.cols(); ++j)
    for (Index i = 0; i < x.rows(); ++i) x.coeffRef(i, j) = random_scalar<S>();
}
template <class Derived> void fill_random(Eigen::DenseBase<Derived>&& x) { fill_random(x); }

template <class M> M random_matrix(Index rows, Index cols) {
  M x(rows, cols);
  fill_random(x);
  return x;
}

template <class S> S nan_value() {
  using R = real_t<S>;
  if constexpr (is_complex_v<S>) return S(std::numeric_limits<R>::quiet_NaN(), std::numeric_limits<R>::quiet_NaN());
  else return std::numeric_limits<R>::quiet_NaN();
}

// Fills an output with NaN: an `=` that does not overwrite every element,
// or that reads the old contents, shows up as NaN.
template <class Derived> void poison(Eigen::DenseBase<Derived>& x) {
  using S = typename Derived::Scalar;
  for (Index j = 0; j < x.cols(); ++j)
    for (Index i = 0; i < x.rows(); ++i) x.coeffRef(i, j) = nan_value<S>();
}
template <class Derived> void poison(Eigen::DenseBase<Derived>&& x) { poison(x); }

template <class Derived> bool all_finite(const Eigen::DenseBase<Derived>& x) {
  for (Index j = 0; j < x.cols(); ++j)
    for (Index i = 0; i < x.rows(); ++i)
      if (!(std::isfinite(std::real(x.coeff(i, j))) && std::isfinite(std::imag(x.coeff(i, j))))) return false;
  return true;
}

// The Frobenius norm, NaN-propagating, in double.
template <class Derived> double frob(const Eigen::DenseBase<Derived>& x) {
  long double s = 0;
  for (Index j = 0; j < x.cols(); ++j)
    for (Index i = 0; i < x.rows(); ++i) s += static_cast<long double>(std::norm(std::complex<double>(x.coeff(i, j))));
  return static_cast<double>(std::sqrt(s));
}

// ||got - ref||_F, NaN if got holds a NaN.
template <class D1, class D2> double diff_norm(const Eigen::DenseBase<D1>& got, const Eigen::DenseBase<D2>& ref) {
  long double s = 0;
  for (Index j = 0; j < got.cols(); ++j)
    for (Index i = 0; i < got.rows(); ++i)
      s += static_cast<long double>(
          std::norm(std::complex<double>(got.coeff(i, j)) - std::complex<double>(ref.coeff(i, j))));
  return static_cast<double>(std::sqrt(s));
}

// The error bound of C = alpha op(A) op(B) + beta C0 computed in precision
// S: eps(S) * (k |alpha| ||A|| ||B|| + |beta| ||C0||) (Frobenius norms), the
// classical gamma_k bound with room for complex arithmetic and for the
// reference's own rounding. ratio() <= kRatioLimit passes.
constexpr double kRatioLimit = 4.0;

// Unit roundoff of the arithmetic under test over eps(S): 1 for exact
// products; 2^13 for float products on TF32 tensor cores (10-bit mantissa
// inputs). Set for a scope with ScopedEpsScale.
inline double& eps_scale() {
  static double scale = 1.0;
  return scale;
}
struct ScopedEpsScale {
  double saved;
  explicit ScopedEpsScale(double s) : saved(eps_scale()) { eps_scale() = s; }
  ~ScopedEpsScale() { eps_scale() = saved; }
  ScopedEpsScale(const ScopedEpsScale&) = delete;
  ScopedEpsScale& operator=(const ScopedEpsScale&) = delete;
};

template <class S> double error_bound(Index k, double alpha_abs, double norm_a, double norm_b, double beta_abs,
                                      double norm_c0) {
  const double eps = static_cast<double>(std::numeric_limits<real_t<S>>::epsilon()) * eps_scale();
  return eps * (static_cast<double>(k) * alpha_abs * norm_a * norm_b + beta_abs * norm_c0 + 1.0) +
         std::numeric_limits<double>::min();
}

// Cases run and the worst error ratio seen (NaN counts as 1e300), by name,
// for the one-line summaries the GPU tests print at exit.
struct Tally {
  long cases = 0;
  double worst = 0;
  void add(double ratio) {
    ++cases;
    worst = std::max(worst, ratio != ratio ? 1e300 : ratio);
  }
  void merge(const Tally& t) {
    cases += t.cases;
    worst = std::max(worst, t.worst);
  }
};
inline std::map<std::string, Tally>& tallies() {
  static std::map<std::string, Tally> t;
  return t;
}

// err / bound; NaN (which fails every `<=`) when the result holds NaN.
inline double error_ratio(double err, double bound) { return err / bound; }

// Boost.Test precondition for GPU test cases: skipped (not passed) on a
// machine without a usable GPU.
inline boost::test_tools::assertion_result gpu_available(boost::unit_test::test_unit_id) {
  boost::test_tools::assertion_result result(false);
  try {
    if (egpu::has_device()) return boost::test_tools::assertion_result(true);
    result.message() << "no usable GPU (egpu::has_device() is false)";
  } catch (const egpu::error& e) {
    result.message() << "no usable GPU (" << e.what() << ")";
  }
  return result;
}

// Tests that run twice, on a GPU and with EGPU_DEVICE=cpu (CPU Eigen).
inline bool forced_cpu() {
  const char* d = std::getenv("EGPU_DEVICE");
  return d != nullptr && std::string(d) == "cpu";
}
// Runs on a GPU, or on the CPU when EGPU_DEVICE=cpu asks for it; skipped
// on a machine without a GPU otherwise.
inline boost::test_tools::assertion_result gpu_or_forced_cpu(boost::unit_test::test_unit_id id) {
  if (forced_cpu()) return boost::test_tools::assertion_result(true);
  return gpu_available(id);
}
// Cases about the device itself (asynchrony, its memory): skipped under
// EGPU_DEVICE=cpu.
inline boost::test_tools::assertion_result device_only(boost::unit_test::test_unit_id id) {
  if (forced_cpu()) {
    boost::test_tools::assertion_result r(false);
    r.message() << "EGPU_DEVICE=cpu: no device";
    return r;
  }
  return gpu_available(id);
}

}  // namespace egpu_test

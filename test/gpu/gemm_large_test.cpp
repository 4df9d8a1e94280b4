// Large products on the GPU, checked without an O(n^3) host reference:
// random probe vectors (||C x - A (B x)||, Freivalds) and sampled entries
// against host dot products in long double.
//  - N = 4096 square, fp32 and fp64, both backends; N = 8192 fp32, whose
//    default plan differs (quarter tiles, a lead k piece); N = 8192 fp64
//    page-locked in each pair of layouts of A and B (thin tiles or square);
//  - a product whose C has more than 2^31 elements (float, 46400^2, k = 16):
//    64-bit indexing all the way; skipped with a message when host or
//    device memory is short;
//  - tiled (out-of-core) runs through Options::device_memory_limit.
// Skipped without a usable GPU.
#define BOOST_TEST_MODULE gemm_large
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <new>
#include <string>
#include <type_traits>

#include "egpu/egpu.hpp"
#include "support/test_support.hpp"

using namespace egpu_test;

namespace {

const char* backend_name(egpu::Backend b) { return b == egpu::Backend::own ? "own" : "cublas"; }

template <class S> long double mag2(const S& x) { return static_cast<long double>(std::norm(std::complex<double>(x))); }

// Checks C ~= alpha * A * B + beta * C0 (C0 given when accumulating) for op = N.
// Returns the worst error ratio over the probes and samples.
template <class M>
double check_product(const M& c, const M& a, const M& b, typename M::Scalar alpha,
                     const typename std::remove_const<M>::type* c0, int samples,
                     const std::string& what) {
  using S = typename M::Scalar;
  using W = std::conditional_t<is_complex_v<S>, std::complex<double>, double>;
  using VW = Eigen::Matrix<W, Eigen::Dynamic, 1>;
  const Index m = a.rows(), k = a.cols(), n = b.cols();
  BOOST_TEST(c.rows() == m, what);
  BOOST_TEST(c.cols() == n, what);
  if (c.rows() != m || c.cols() != n) return 1e300;
  const double eps = static_cast<double>(std::numeric_limits<real_t<S>>::epsilon());
  double worst = 0;
  // Probes: ||C x - alpha A (B x) - C0 x|| <= bound * ||x||.
  const double na = frob(a), nb = frob(b), nc0 = c0 ? frob(*c0) : 0.0;
  for (int probe = 0; probe < 3; ++probe) {
    VW x = random_matrix<VW>(n, 1);
    VW r = c.template cast<W>() * x - W(alpha) * (a.template cast<W>() * (b.template cast<W>() * x));
    if (c0) r -= c0->template cast<W>() * x;
    const double bound =
        error_bound<S>(k, std::abs(alpha), na, nb, c0 ? 1.0 : 0.0, nc0) * frob(x) * 2 + eps * frob(x);
    const double ratio = frob(r) / bound;
    worst = std::max(worst, ratio != ratio ? 1e300 : ratio);
    BOOST_TEST(ratio <= kRatioLimit, what << ": probe " << probe << " error ratio " << ratio);
  }
  // Samples: entry (i, j) against a long double dot product.
  for (int s = 0; s < samples; ++s) {
    const Index i = uniform_index(0, m - 1), j = uniform_index(0, n - 1);
    std::complex<long double> dot = 0;
    long double scale = 0;
    for (Index p = 0; p < k; ++p) {
      const std::complex<double> x = std::complex<double>(a(i, p)), y = std::complex<double>(b(p, j));
      dot += std::complex<long double>(x) * std::complex<long double>(y);
      scale += std::sqrt(mag2(a(i, p)) * mag2(b(p, j)));
    }
    std::complex<long double> expect = std::complex<long double>(std::complex<double>(alpha)) * dot;
    if (c0) expect += std::complex<long double>(std::complex<double>((*c0)(i, j)));
    const std::complex<long double> got(std::complex<double>(c(i, j)));
    const double err = static_cast<double>(std::abs(got - expect));
    const double bound = eps * (static_cast<double>(k) * std::abs(alpha) * static_cast<double>(scale) +
                                (c0 ? std::abs((*c0)(i, j)) : 0.0) + 1e-30);
    const double ratio = err / bound;
    worst = std::max(worst, ratio != ratio ? 1e300 : ratio);
    if (!(ratio <= kRatioLimit)) {
      BOOST_TEST(ratio <= kRatioLimit, what << ": C(" << i << "," << j << ") error ratio " << ratio);
      break;
    }
  }
  return worst;
}

template <class S> void square(Index n, egpu::Backend backend) {
  using M = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic>;
  egpu::Options opt;
  opt.backend = backend;
  const M a = random_matrix<M>(n, n), b = random_matrix<M>(n, n);
  M c(n, n);
  poison(c);
  c.noalias() = egpu::gpu(a * b, opt);
  const std::string what =
      std::string(backend_name(backend)) + " " + scalar_name<S>() + " N=" + std::to_string(n) + " noalias() =";
  BOOST_TEST(all_finite(c), what << ": NaN or Inf left in C");
  double worst = check_product(c, a, b, S(1), nullptr, 2000, what);
  // Accumulate with a scalar factor on top.
  const M c0 = c;
  const S alpha = random_scalar<S>();
  c.noalias() += egpu::gpu(alpha * a * b, opt);
  worst = std::max(worst, check_product(c, a, b, alpha, &c0, 500, what + " then += alpha*A*B"));
  std::printf("gemm_large: %s %s N=%ld: worst error ratio %.3g\n", backend_name(backend), scalar_name<S>(),
              static_cast<long>(n), worst);
}

// Page-locked double at N = 8192 in each pair of layouts of A and B: the
// plans take thin tiles along the side the host's runs do not go (square
// ones for A column-major, B row-major), in core.
template <int ALayout, int BLayout> void page_locked_8192_double(egpu::Backend backend) {
  using MA = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, ALayout>;
  using MB = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, BLayout>;
  using M = Eigen::MatrixXd;
  const Index n = 8192;
  egpu::Options opt;
  opt.backend = backend;
  MA a = random_matrix<MA>(n, n);
  MB b = random_matrix<MB>(n, n);
  M c(n, n);
  poison(c);
  const std::string what = std::string(backend_name(backend)) + " double N=8192 page-locked, A " +
                           (ALayout == Eigen::RowMajor ? "row" : "column") + "-major, B " +
                           (BLayout == Eigen::RowMajor ? "row" : "column") + "-major";
  {
    auto guard_a = egpu::pin(a);
    auto guard_b = egpu::pin(b);
    auto guard_c = egpu::pin(c);
    c.noalias() = egpu::gpu(a * b, opt);
  }
  BOOST_TEST(all_finite(c), what << ": NaN or Inf left in C");
  const M ac = a, bc = b;
  const double worst = check_product(c, ac, bc, 1.0, nullptr, 1000, what);
  std::printf("gemm_large: %s: worst error ratio %.3g\n", what.c_str(), worst);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(large, *boost::unit_test::precondition(gpu_available))

BOOST_AUTO_TEST_CASE(square_4096_float_own) { square<float>(4096, egpu::Backend::own); }
BOOST_AUTO_TEST_CASE(square_4096_double_own) { square<double>(4096, egpu::Backend::own); }
BOOST_AUTO_TEST_CASE(square_4096_float_cublas) { square<float>(4096, egpu::Backend::cublas); }
BOOST_AUTO_TEST_CASE(square_4096_double_cublas) { square<double>(4096, egpu::Backend::cublas); }
BOOST_AUTO_TEST_CASE(square_8192_float_own) { square<float>(8192, egpu::Backend::own); }
BOOST_AUTO_TEST_CASE(square_8192_float_cublas) { square<float>(8192, egpu::Backend::cublas); }
BOOST_AUTO_TEST_CASE(page_locked_8192_double_column_column) {
  page_locked_8192_double<Eigen::ColMajor, Eigen::ColMajor>(egpu::Backend::own);
  page_locked_8192_double<Eigen::ColMajor, Eigen::ColMajor>(egpu::Backend::cublas);
}
BOOST_AUTO_TEST_CASE(page_locked_8192_double_row_column) {
  page_locked_8192_double<Eigen::RowMajor, Eigen::ColMajor>(egpu::Backend::own);
}
BOOST_AUTO_TEST_CASE(page_locked_8192_double_column_row) {
  page_locked_8192_double<Eigen::ColMajor, Eigen::RowMajor>(egpu::Backend::own);
}
BOOST_AUTO_TEST_CASE(page_locked_8192_double_row_row) {
  page_locked_8192_double<Eigen::RowMajor, Eigen::RowMajor>(egpu::Backend::cublas);
}

// C with more than 2^31 elements: every index computation must be 64-bit.
BOOST_AUTO_TEST_CASE(more_than_2_31_elements) {
  const Index m = 46400, n = 46400, k = 16;
  static_assert(46400LL * 46400LL > (1LL << 31), "C must exceed 2^31 elements");
  Eigen::MatrixXf a = random_matrix<Eigen::MatrixXf>(m, k), b = random_matrix<Eigen::MatrixXf>(k, n);
  Eigen::MatrixXf c;
  try {
    c.resize(m, n);
  } catch (const std::bad_alloc&) {
    BOOST_TEST_MESSAGE("skipped: not enough host memory for a 46400 x 46400 float C (8.6 GB)");
    return;
  }
  for (egpu::Backend backend : {egpu::Backend::own, egpu::Backend::cublas}) {
    const std::string what = std::string(backend_name(backend)) + " float 46400x46400x16";
    c.setConstant(std::numeric_limits<float>::quiet_NaN());
    egpu::Options opt;
    opt.backend = backend;
    try {
      c.noalias() = egpu::gpu(a * b, opt);
    } catch (const egpu::error& e) {
      const std::string msg = e.what();
      const bool memory = msg.find("memory") != std::string::npos || msg.find("alloc") != std::string::npos;
      if (memory) {
        BOOST_TEST_MESSAGE("skipped " << what << ": " << msg);
        continue;
      }
      BOOST_TEST(false, what << " threw: " << msg);
      continue;
    }
    // Random samples, plus whole columns around linear index 2^31 and the last column.
    double worst = 0;
    auto check_entry = [&](Index i, Index j) {
      long double dot = 0, scale = 0;
      for (Index p = 0; p < k; ++p) {
        dot += static_cast<long double>(a(i, p)) * b(p, j);
        scale += std::abs(static_cast<long double>(a(i, p)) * b(p, j));
      }
      const double err = static_cast<double>(std::abs(static_cast<long double>(c(i, j)) - dot));
      const double bound = std::numeric_limits<float>::epsilon() * (k * static_cast<double>(scale) + 1e-30);
      const double ratio = err / bound;
      worst = std::max(worst, ratio != ratio ? 1e300 : ratio);
      return ratio <= kRatioLimit;
    };
    bool ok = true;
    for (int s = 0; s < 20000 && ok; ++s) ok = check_entry(uniform_index(0, m - 1), uniform_index(0, n - 1));
    const std::int64_t boundary = std::int64_t(1) << 31;
    const Index j_boundary = static_cast<Index>(boundary / m);
    for (Index j : {j_boundary - 1, j_boundary, j_boundary + 1, n - 1})
      for (Index i = 0; i < m && ok; ++i) ok = check_entry(i, j);
    for (Index j = 0; j < n && ok; j += 97) ok = check_entry(m - 1, j);
    BOOST_TEST(ok, what << ": wrong entries (worst error ratio " << worst << ")");
    std::printf("gemm_large: %s: worst error ratio %.3g over the samples\n", what.c_str(), worst);
  }
}

// Out-of-core: a budget far below the product's size tiles it through the
// device (C tiles, k panels); results unchanged, accumulation included.
template <class S> void tiled(egpu::Backend backend, std::size_t limit, Index m, Index n, Index k) {
  using M = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic>;
  egpu::Options opt;
  opt.backend = backend;
  opt.device_memory_limit = limit;
  const M a = random_matrix<M>(m, k), b = random_matrix<M>(k, n);
  M c(m, n);
  poison(c);
  const std::string what = std::string(backend_name(backend)) + " " + scalar_name<S>() + " tiled " +
                           std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) + " through " +
                           std::to_string(limit) + " bytes";
  c.noalias() = egpu::gpu(a * b, opt);
  BOOST_TEST(all_finite(c), what << ": NaN left in C");
  double worst = check_product(c, a, b, S(1), nullptr, 1000, what);
  const M c0 = c;
  const S alpha = random_scalar<S>();
  c -= egpu::gpu(alpha * a * b, opt);
  worst = std::max(worst, check_product(c, a, b, S(-alpha), &c0, 300, what + " then -= alpha*A*B"));
  std::printf("gemm_large: %s: worst error ratio %.3g\n", what.c_str(), worst);
}

BOOST_AUTO_TEST_CASE(out_of_core_own) {
  tiled<double>(egpu::Backend::own, std::size_t(64) << 20, 3001, 2999, 3000);          // C tiles
  tiled<std::complex<float>>(egpu::Backend::own, std::size_t(8) << 20, 1500, 1700, 2500);  // k split too
  tiled<float>(egpu::Backend::own, std::size_t(1) << 20, 700, 600, 1200);
}
BOOST_AUTO_TEST_CASE(out_of_core_cublas) {
  tiled<double>(egpu::Backend::cublas, std::size_t(64) << 20, 3001, 2999, 3000);
  tiled<std::complex<double>>(egpu::Backend::cublas, std::size_t(8) << 20, 1200, 1100, 1900);
}

BOOST_AUTO_TEST_SUITE_END()

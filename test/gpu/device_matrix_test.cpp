// egpu::DeviceMatrix against CPU Eigen on the same fresh random data:
//  - uploads and downloads, bit for bit: from column- and row-major
//    matrices, strided blocks and page-locked memory; into poisoned blocks;
//    0xN, 1xN, Nx1;
//  - products on device data and on host/device mixes (transposes,
//    adjoints, scalar factors, blocks as operands and destinations, `=`,
//    `+=`, `-=`, a host destination), both backends, all four scalars;
//  - coefficient-wise expressions, products inside them, the GEMM update
//    `0.5 * dA^T B + dC`, reductions full and partial (into host and device
//    destinations), NaN and Inf carried through;
//  - random chains of those on a pool of device matrices, checked against
//    the same chain on their host mirrors (double and complex<float>: the
//    chains add no code per scalar that the cases above do not cover);
//  - a failure injected into a queued call surfaces at the next wait,
//    naming it, and later calls work; out of device memory; matrices
//    destroyed while work on them is queued; two host threads.
// The same executable runs twice: on a GPU (skipped without one), and with
// EGPU_DEVICE=cpu, where a DeviceMatrix holds host memory and every call
// runs on CPU Eigen (test/CMakeLists.txt).
#define BOOST_TEST_MODULE device_matrix
#include <boost/test/unit_test.hpp>
#include <boost/mpl/list.hpp>

#include <cmath>
#include <complex>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "egpu/detail/testing.hpp"
#include "egpu/egpu.hpp"
#include "support/test_support.hpp"

using namespace egpu_test;

namespace {

template <class S> using Mat = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic>;
template <class S> using RowMat = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class S> using Dev = egpu::DeviceMatrix<S>;
using Scalars = boost::mpl::list<float, double, std::complex<float>, std::complex<double>>;
using TwoScalars = boost::mpl::list<double, std::complex<float>>;

// |got - ref| <= bound * eps(S) * (scale + |ref|) element by element, each
// real and imaginary part that is NaN or infinite in the reference the same
// in the result (a NaN or Inf anywhere else fails).
template <class S, class D1, class D2>
void check_close(const Eigen::MatrixBase<D1>& got, const Eigen::MatrixBase<D2>& ref, double scale,
                 const std::string& what, double bound = 64) {
  BOOST_REQUIRE_MESSAGE(got.rows() == ref.rows() && got.cols() == ref.cols(), what << ": size");
  const double eps = static_cast<double>(std::numeric_limits<real_t<S>>::epsilon());
  for (Index j = 0; j < got.cols(); ++j)
    for (Index i = 0; i < got.rows(); ++i) {
      const std::complex<double> g(got(i, j)), r(ref(i, j));
      const double tol = bound * eps * (scale + (std::isfinite(std::abs(r)) ? std::abs(r) : 0.0));
      for (const auto& [gp, rp] : {std::pair<double, double>{g.real(), r.real()}, {g.imag(), r.imag()}}) {
        const bool ok = std::isnan(rp) ? std::isnan(gp) : std::isinf(rp) ? gp == rp : std::abs(gp - rp) <= tol;
        BOOST_REQUIRE_MESSAGE(ok, what << ": (" << i << ", " << j << ") got " << g << " ref " << r << " tol " << tol);
      }
    }
}

template <class S, class D1, class D2>
void check_equal(const Eigen::MatrixBase<D1>& got, const Eigen::MatrixBase<D2>& ref, const std::string& what) {
  BOOST_REQUIRE_MESSAGE(got.rows() == ref.rows() && got.cols() == ref.cols(), what << ": size");
  for (Index j = 0; j < got.cols(); ++j)
    for (Index i = 0; i < got.rows(); ++i) {
      const S g = got(i, j), r = ref(i, j);
      BOOST_REQUIRE_MESSAGE(std::memcmp(&g, &r, sizeof(S)) == 0, what << ": (" << i << ", " << j << ") differs");
    }
}

Index random_dim() { return coin(0.2) ? uniform_index(0, 3) : uniform_index(1, scaled_dim(160, 1)); }

}  // namespace

BOOST_AUTO_TEST_SUITE(on_a_gpu_or_cpu_eigen, *boost::unit_test::precondition(gpu_or_forced_cpu))

BOOST_AUTO_TEST_CASE_TEMPLATE(uploads_and_downloads_bit_for_bit, S, Scalars) {
  for (int round = 0; round < 12; ++round) {
    const Index m = random_dim(), n = random_dim();
    Mat<S> a = random_matrix<Mat<S>>(m, n);
    if (m * n > 2) a(m - 1, n - 1) = nan_value<S>();
    const Dev<S> from_col(a);
    const RowMat<S> r = a;
    const Dev<S> from_row = r;
    Mat<S> big = random_matrix<Mat<S>>(m + 3, n + 2);
    big.block(1, 2, m, n) = a;
    const Dev<S> from_block(big.block(1, 2, m, n));
    BOOST_REQUIRE(from_col.rows() == m && from_col.cols() == n);
    check_equal<S>(from_col.to_host(), a, "from a column-major matrix");
    check_equal<S>(from_row.to_host(), a, "from a row-major matrix");
    check_equal<S>(from_block.to_host(), a, "from a strided block");
    // Into a poisoned block of a row-major matrix: every element written, nothing around it.
    RowMat<S> out(m + 2, n + 4);
    fill_poison(out.data(), static_cast<std::size_t>(out.size()));
    from_col.copy_to(out.block(1, 3, m, n));
    check_equal<S>(out.block(1, 3, m, n), a, "copy_to a row-major block");
    for (Index j = 0; j < out.cols(); ++j)
      for (Index i = 0; i < out.rows(); ++i)
        if (i < 1 || i >= 1 + m || j < 3 || j >= 3 + n) BOOST_REQUIRE(is_poison(out(i, j)));
  }
  // Page-locked source and destination.
  Mat<S> a = random_matrix<Mat<S>>(300, 70), back(300, 70);
  const auto guard_a = egpu::pin(a);
  const auto guard_back = egpu::pin(back);
  const Dev<S> d(a);
  d.copy_to(back);
  check_equal<S>(back, a, "pinned");
}

BOOST_AUTO_TEST_CASE_TEMPLATE(products_on_device_and_mixed, S, Scalars) {
  for (const egpu::Backend backend : {egpu::Backend::own, egpu::Backend::cublas}) {
    egpu::Options opt;
    opt.backend = backend;
    for (int round = 0; round < 6; ++round) {
      const Index m = random_dim(), k = random_dim(), n = random_dim();
      const Mat<S> a = random_matrix<Mat<S>>(m, k), b = random_matrix<Mat<S>>(k, n), c0 = random_matrix<Mat<S>>(m, n);
      const Mat<S> at = a.adjoint();
      const RowMat<S> b_row = b;
      const Dev<S> da(a), db(b), dat(at);
      const S alpha = random_scalar<S>();
      const double scale = static_cast<double>(k) + 1;
      const std::string name = std::string(scalar_name<S>()) + (backend == egpu::Backend::own ? " own " : " cublas ") +
                               std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n);

      Dev<S> dc = egpu::gpu(da * db, opt);
      check_close<S>(dc.to_host(), (a * b).eval(), scale, name + " dC = dA dB");
      dc = egpu::gpu(alpha * dat.adjoint() * b_row, opt);  // device adjoint, host row-major
      check_close<S>(dc.to_host(), (alpha * a * b).eval(), scale, name + " dC = alpha dAt^H B");
      Dev<S> acc(c0);
      acc += egpu::gpu(a * db, opt);
      acc -= egpu::gpu(da * (S(2) * b), opt);
      check_close<S>(acc.to_host(), (c0 - a * b).eval(), 3 * scale, name + " += and -=");
      Mat<S> host(m, n);
      poison(host);
      host.noalias() = egpu::gpu(da * b, opt);
      check_close<S>(host, (a * b).eval(), scale, name + " host destination");
      if (m >= 2 && n >= 2 && k >= 1) {
        // Blocks: operands and destination.
        Dev<S> big(c0);
        big.block(1, 1, m - 1, n - 1) = egpu::gpu(da.block(1, 0, m - 1, k) * db.block(0, 1, k, n - 1), opt);
        Mat<S> ref = c0;
        ref.block(1, 1, m - 1, n - 1) = a.block(1, 0, m - 1, k) * b.block(0, 1, k, n - 1);
        check_close<S>(big.to_host(), ref, scale, name + " blocks");
        // Aliasing: the destination is an operand.
        Dev<S> sq(a.topLeftCorner(std::min(m, k), std::min(m, k)));
        const Mat<S> s0 = sq.to_host();
        sq = egpu::gpu(sq * sq, opt);
        check_close<S>(sq.to_host(), (s0 * s0).eval(), scale, name + " dS = dS dS");
      }
      // The GEMM update with beta, device C.
      Dev<S> upd(c0);
      upd = egpu::gpu(S(0.5) * dat.transpose().conjugate() * b + upd, opt);
      check_close<S>(upd.to_host(), (S(0.5) * a * b + c0).eval(), scale, name + " 0.5 dA B + dC");
    }
  }
}

BOOST_AUTO_TEST_CASE_TEMPLATE(coefficient_wise_and_reductions, S, Scalars) {
  using R = real_t<S>;
  for (int round = 0; round < 8; ++round) {
    const Index m = random_dim(), n = random_dim();
    Mat<S> a = random_matrix<Mat<S>>(m, n), b = random_matrix<Mat<S>>(m, n);
    if (m * n > 3) {
      a(0, 0) = nan_value<S>();
      b(m - 1, 0) = S(std::numeric_limits<R>::infinity());
    }
    const Eigen::Matrix<S, Eigen::Dynamic, 1> v = random_matrix<Eigen::Matrix<S, Eigen::Dynamic, 1>>(m, 1);
    const Dev<S> da(a), db(b);
    const std::string name = std::string(scalar_name<S>()) + " " + std::to_string(m) + "x" + std::to_string(n);

    Dev<S> dc = egpu::gpu(da.array() * db.array() + da.array().square());
    Mat<S> ref = (a.array() * b.array() + a.array().square()).matrix();
    check_close<S>(dc.to_host(), ref, 1, name + " a*b + a^2");
    dc += egpu::gpu((db.array().colwise() + v.array()) * S(2));  // host broadcast vector
    ref += ((b.array().colwise() + v.array()) * S(2)).matrix();
    check_close<S>(dc.to_host(), ref, 4, name + " += broadcast");
    dc = egpu::gpu(dc.array() - da.transpose().transpose().array());  // the destination read element for element
    ref = (ref.array() - a.array()).matrix();
    check_close<S>(dc.to_host(), ref, 4, name + " dC = dC - dA");

    // Reductions: a value on the host, partial ones into host and device destinations.
    if (m * n > 0) {
      const Mat<S> finite = random_matrix<Mat<S>>(m, n);
      const Dev<S> df(finite);
      const double size = static_cast<double>(m * n);
      const S sum = egpu::gpu(df.array() * df.array()).sum();
      check_close<S>(Mat<S>::Constant(1, 1, sum), Mat<S>::Constant(1, 1, (finite.array() * finite.array()).sum()),
                     size, name + " sum");
      const R sq = egpu::gpu(df).squaredNorm();
      BOOST_REQUIRE_MESSAGE(std::abs(double(sq) - double(finite.squaredNorm())) <= 64 * size * double(std::numeric_limits<R>::epsilon()) * double(finite.squaredNorm()),
                            name << " squaredNorm");
      const Mat<S> cols_host = egpu::gpu(df.colwise().sum());
      check_close<S>(cols_host, finite.colwise().sum().eval(), static_cast<double>(m), name + " colwise sums to host");
      Dev<S> rows_dev(m, 1);
      rows_dev = egpu::gpu(df.rowwise().sum());
      check_close<S>(rows_dev.to_host(), finite.rowwise().sum().eval(), static_cast<double>(n), name + " rowwise sums to device");
      if constexpr (!is_complex_v<S>) {
        BOOST_REQUIRE(std::isnan(egpu::gpu(da).maxCoeff()) == a.hasNaN());
        BOOST_REQUIRE(egpu::gpu(df).maxCoeff() == finite.maxCoeff());
      }
    }
    // A product inside an expression with device and host operands.
    const Index k = random_dim();
    const Mat<S> p = random_matrix<Mat<S>>(m, k), q = random_matrix<Mat<S>>(k, n);
    const Dev<S> dp(p);
    // (tanh for real values; complex tanh has poles, so square there.)
    if constexpr (is_complex_v<S>) {
      Dev<S> f = egpu::gpu((dp * q).array().square().matrix() + db);
      const Mat<S> f_ref = ((p * q).array().square().matrix() + b).eval();
      check_close<S>(f.to_host(), f_ref, 4 * (static_cast<double>(k) + 2), name + " (dP Q)^2 + dB");
    } else {
      Dev<S> f = egpu::gpu((dp * q).array().tanh().matrix() + db);
      const Mat<S> f_ref = ((p * q).array().tanh().matrix() + b).eval();
      check_close<S>(f.to_host(), f_ref, static_cast<double>(k) + 2, name + " tanh(dP Q) + dB");
    }
  }
}

// Random chains on a pool of device matrices and their host mirrors: the
// same operations on both, compared at the end.
BOOST_AUTO_TEST_CASE_TEMPLATE(random_chains, S, TwoScalars) {
  const int chains = scaled_count(6);
  for (int chain = 0; chain < chains; ++chain) {
    const Index n = uniform_index(1, scaled_dim(96, 1));
    std::vector<Mat<S>> host;
    std::vector<Dev<S>> dev;
    for (int i = 0; i < 4; ++i) {
      host.push_back(random_matrix<Mat<S>>(n, n));
      dev.emplace_back(host.back());
    }
    const Mat<S> h = random_matrix<Mat<S>>(n, n);
    const S scale(real_t<S>(1) / static_cast<real_t<S>>(n));
    std::string log;
    for (int step = 0; step < 24; ++step) {
      const int x = static_cast<int>(uniform_index(0, 3)), y = static_cast<int>(uniform_index(0, 3)),
                z = static_cast<int>(uniform_index(0, 3));
      const int op = static_cast<int>(uniform_index(0, 6));
      log += " " + std::to_string(op) + ":" + std::to_string(x) + std::to_string(y) + std::to_string(z);
      switch (op) {
        case 0:  // a product into another matrix (or the same: aliasing)
          dev[z] = egpu::gpu(scale * dev[x] * dev[y]);
          host[z] = scale * host[x] * host[y];
          break;
        case 1:  // coefficient-wise, bounded values
          dev[z] = egpu::gpu((dev[x].array() * S(0.5) + dev[y].array() * S(0.25)).tanh().matrix());
          host[z] = (host[x].array() * S(0.5) + host[y].array() * S(0.25)).tanh().matrix();
          break;
        case 2:  // accumulate a mixed product
          dev[z] += egpu::gpu(scale * dev[x] * h);
          host[z] += scale * host[x] * h;
          break;
        case 3:  // a block of one into a block of another
          if (n >= 2) {
            dev[z].block(0, 1, n - 1, n - 1) = egpu::gpu(dev[x].block(1, 0, n - 1, n - 1).transpose());
            const Mat<S> t = host[x].block(1, 0, n - 1, n - 1).transpose();
            host[z].block(0, 1, n - 1, n - 1) = t;
          }
          break;
        case 4:  // a reduction feeding a scalar back into the chain
        {
          const S s = egpu::gpu(dev[x]).sum() * scale * scale;
          const S hs = host[x].sum() * scale * scale;
          dev[z] = egpu::gpu(dev[y] * s);
          host[z] = host[y] * hs;
          break;
        }
        case 5:  // the iterative kernel's step
          dev[z] = egpu::gpu(dev[z] + S(0.1) * (scale * dev[x] * dev[z]).array().tanh().matrix());
          host[z] = (host[z] + S(0.1) * (scale * host[x] * host[z]).array().tanh().matrix()).eval();
          break;
        default:  // a host copy back in
          dev[z] = host[x];
          host[z] = host[x];
          break;
      }
    }
    for (int i = 0; i < 4; ++i)
      check_close<S>(dev[static_cast<std::size_t>(i)].to_host(), host[static_cast<std::size_t>(i)], 16 * static_cast<double>(n),
                     std::string(scalar_name<S>()) + " chain n=" + std::to_string(n) + log, 256);
  }
}

BOOST_AUTO_TEST_CASE(two_host_threads) {
  const auto faults = run_on_threads(2, [](int id, auto fault) {
    const Index n = 100 + 37 * id;
    const Mat<double> a = random_matrix<Mat<double>>(n, n);
    const Dev<double> da(a);
    Dev<double> x = egpu::gpu(da.array() * 0.0 + 1.0);
    Mat<double> ref = Mat<double>::Ones(n, n);
    for (int step = 0; step < 20; ++step) {
      x = egpu::gpu(x + 0.01 * (da * x).array().tanh().matrix());
      ref = (ref + 0.01 * (a * ref).array().tanh().matrix()).eval();
    }
    const double err = (x.to_host() - ref).norm() / ref.norm();
    if (!(err < 1e-12)) fault("thread " + std::to_string(id) + ": relative error " + std::to_string(err));
  });
  for (const auto& f : faults) BOOST_ERROR(f);
  BOOST_TEST(faults.empty());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(on_a_gpu, *boost::unit_test::precondition(device_only))

BOOST_AUTO_TEST_CASE(queued_failure_surfaces_at_the_next_wait) {
  const Mat<double> a = random_matrix<Mat<double>>(200, 200);
  const Dev<double> da(a);
  Dev<double> dc = egpu::gpu(da * da);
  egpu::detail::inject_queued_failure();
  dc = egpu::gpu(da * da);  // queued: returns without an error
  bool threw = false;
  try {
    egpu::synchronize();
  } catch (const egpu::error& e) {
    threw = true;
    BOOST_TEST_MESSAGE("the wait said: " << e.what());
    BOOST_REQUIRE(std::string(e.what()).find("product 200x200x200") != std::string::npos);
    BOOST_REQUIRE(std::string(e.what()).find("injected") != std::string::npos);
  }
  BOOST_REQUIRE(threw);
  // Later calls work, and a download is a wait that reports the next one.
  dc = egpu::gpu(da * da);
  check_close<double>(dc.to_host(), (a * a).eval(), 200, "after the failure");
  egpu::detail::inject_queued_failure();
  dc = egpu::gpu(da.array() + 1.0);
  BOOST_REQUIRE_THROW((void)dc.to_host(), egpu::error);
  check_close<double>(dc.to_host(), (a.array() + 1.0).matrix().eval(), 1, "then again");
}

BOOST_AUTO_TEST_CASE(out_of_device_memory) {
  const Mat<double> a = random_matrix<Mat<double>>(64, 64);
  const Dev<double> da(a);
  const std::size_t before = egpu::detail::device_bytes_in_use();
  try {
    Dev<double> huge(Index(1) << 20, Index(1) << 20);  // 8 TiB
    BOOST_FAIL("an 8 TiB DeviceMatrix was allocated");
  } catch (const egpu::error& e) {
    const std::string what = e.what();
    BOOST_TEST_MESSAGE("out of memory: " << what);
    BOOST_REQUIRE(what.find("8796093022208 bytes") != std::string::npos);
    BOOST_REQUIRE(what.find("free") != std::string::npos);
  }
  BOOST_REQUIRE_EQUAL(egpu::detail::device_bytes_in_use(), before);
  check_equal<double>(da.to_host(), a, "earlier data");
}

BOOST_AUTO_TEST_CASE(destroyed_while_queued_and_accounted) {
  const std::size_t before = egpu::detail::device_bytes_in_use();
  const Mat<double> a = random_matrix<Mat<double>>(512, 512);
  Dev<double> keep(512, 512);
  {
    const Dev<double> da(a);
    for (int i = 0; i < 8; ++i) {
      Dev<double> t = egpu::gpu(da * da);  // freed at once, in stream order, while still queued
      keep = egpu::gpu(t.array() * 0.5);
    }
  }
  check_close<double>(keep.to_host(), (0.5 * (a * a)).eval(), 512, "through temporaries");
  keep.resize(0, 0);
  BOOST_REQUIRE_EQUAL(egpu::detail::device_bytes_in_use(), before);
}

BOOST_AUTO_TEST_SUITE_END()

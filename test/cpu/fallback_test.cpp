// The real library without a GPU: CTest runs this with EGPU_DEVICE=cpu
// (EGPU_QUIET=1), so every product and coefficient-wise expression runs on
// CPU Eigen and must give Eigen's result; sizes are still checked;
// reductions are Eigen's too, except that minCoeff and maxCoeff of values
// holding a NaN are NaN, full and partial, as on the GPU. A second
// CTest entry runs only `bad_device_request_throws` with EGPU_DEVICE=banana.
#define BOOST_TEST_MODULE fallback
#include <boost/test/unit_test.hpp>
#include <boost/mpl/list.hpp>

#include <cmath>
#include <complex>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "egpu/egpu.hpp"
#include "support/elementwise_forms.hpp"
#include "support/gemm_cases.hpp"
#include "support/test_support.hpp"

using namespace egpu_test;
using Scalars = boost::mpl::list<float, double, std::complex<float>, std::complex<double>>;

namespace {
bool env_is(const char* name, const char* value) {
  const char* v = std::getenv(name);
  return v != nullptr && std::strcmp(v, value) == 0;
}
boost::test_tools::assertion_result cpu_requested(boost::unit_test::test_unit_id) {
  boost::test_tools::assertion_result r(env_is("EGPU_DEVICE", "cpu"));
  r.message() << "needs EGPU_DEVICE=cpu (CTest sets it)";
  return r;
}
boost::test_tools::assertion_result banana_requested(boost::unit_test::test_unit_id) {
  boost::test_tools::assertion_result r(env_is("EGPU_DEVICE", "banana"));
  r.message() << "needs EGPU_DEVICE=banana (the fallback_bad_device CTest entry sets it)";
  return r;
}
}  // namespace

BOOST_AUTO_TEST_SUITE(cpu_fallback, *boost::unit_test::precondition(cpu_requested))

BOOST_AUTO_TEST_CASE(no_device) {
  BOOST_TEST(!egpu::has_device());
  BOOST_TEST(egpu::device_name() == "cpu");
}

BOOST_AUTO_TEST_CASE_TEMPLATE(results_equal_cpu_eigen, S, Scalars) {
  for (egpu::Backend backend : {egpu::Backend::own, egpu::Backend::cublas}) {
    egpu::Options opt;
    opt.backend = backend;
    const Tally t = run_random_cases<S>(scaled_count(120), scaled_count(2 * special_kinds), 64, opt);
    std::printf("fallback: %s: %ld cases, worst error ratio %.3g (limit %.1f)\n", scalar_name<S>(), t.cases, t.worst,
                kRatioLimit);
  }
}

BOOST_AUTO_TEST_CASE(exactly_eigens_result) {
  // On the CPU path the call is Eigen's own product: bit-identical.
  Eigen::MatrixXd a = random_matrix<Eigen::MatrixXd>(37, 41), b = random_matrix<Eigen::MatrixXd>(41, 29);
  Eigen::MatrixXd c = random_matrix<Eigen::MatrixXd>(37, 29);
  Eigen::MatrixXd e = c;
  c.noalias() += egpu::gpu(2.0 * a * b);
  e.noalias() += 2.0 * a * b;
  BOOST_TEST((c == e));
  c = egpu::gpu(a * b);
  e = a * b;
  BOOST_TEST((c == e));
}

// Bytes equal, except that a NaN matches any NaN: the sign and payload of a
// NaN made from NaN and Inf operands depend on the instruction order the
// compiler picked for that instantiation, in Eigen's own code too.
template <class R> bool same_real_bits(R x, R y) {
  return (std::isnan(x) && std::isnan(y)) || std::memcmp(&x, &y, sizeof(R)) == 0;
}
template <class R> bool same_real_bits(const std::complex<R>& x, const std::complex<R>& y) {
  return same_real_bits(x.real(), y.real()) && same_real_bits(x.imag(), y.imag());
}
template <class X, class Y> bool same_bits(const X& x, const Y& y) {
  if (x.rows() != y.rows() || x.cols() != y.cols()) return false;
  for (Index j = 0; j < x.cols(); ++j)
    for (Index i = 0; i < x.rows(); ++i)
      if (!same_real_bits(x(i, j), y(i, j))) return false;
  return true;
}

// A product kept on the CPU is the expression as written, run by Eigen,
// with Eigen's rules: every form of scalar factor bit for bit; `=`, `+=`
// and `-=` without noalias() through a temporary where the destination is
// an operand; a vector destination of the other orientation taking the
// value transposed. Sizes on both sides of Eigen's switch from its
// coefficient-based product to its blocked one.
BOOST_AUTO_TEST_CASE_TEMPLATE(products_on_the_cpu_keep_eigens_rules, S, Scalars) {
  using R = real_t<S>;
  using M = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic>;
  using Col = Eigen::Matrix<S, Eigen::Dynamic, 1>;
  using Row = Eigen::Matrix<S, 1, Eigen::Dynamic>;
  const S s = random_scalar<S>() + S(R(2));
  for (const Index n : {Index(3), Index(29)}) {
    const M a = random_matrix<M>(n + 2, n), b = random_matrix<M>(n, n + 1);
    M c = random_matrix<M>(n + 2, n + 1), e = c;
    c = egpu::gpu(a * b);
    e = a * b;
    BOOST_TEST(same_bits(c, e), "=, n " << n);
    c = egpu::gpu(s * (a * b));
    e = s * (a * b);
    BOOST_TEST(same_bits(c, e), "= s * (A * B), n " << n);
    c += egpu::gpu((a * b) * s);
    e += (a * b) * s;
    BOOST_TEST(same_bits(c, e), "+= (A * B) * s, n " << n);
    c.noalias() -= egpu::gpu(-(a * b));
    e.noalias() -= -(a * b);
    BOOST_TEST(same_bits(c, e), "noalias() -= -(A * B), n " << n);
    c.noalias() = egpu::gpu(s * a.conjugate() * b);
    e.noalias() = s * a.conjugate() * b;
    BOOST_TEST(same_bits(c, e), "noalias() = s * conj(A) * B, n " << n);

    // The destination is an operand.
    const M t = random_matrix<M>(n, n);
    M q = random_matrix<M>(n, n), qe = q;
    q = egpu::gpu(q * t);
    qe = qe * t;
    BOOST_TEST(same_bits(q, qe), "Q = Q * T, n " << n);
    q += egpu::gpu(t * q);
    qe += t * qe;
    BOOST_TEST(same_bits(q, qe), "Q += T * Q, n " << n);
    q -= egpu::gpu(s * q.adjoint() * q);
    qe -= s * qe.adjoint() * qe;
    BOOST_TEST(same_bits(q, qe), "Q -= s * Q^H * Q, n " << n);
    M x = random_matrix<M>(n + 1, n + 1), xe = x;
    x.bottomRightCorner(n, n) = egpu::gpu(x.topLeftCorner(n, n) * t);
    xe.bottomRightCorner(n, n) = xe.topLeftCorner(n, n) * t;
    BOOST_TEST(same_bits(x, xe), "a block shifted by one = its neighbour * T, n " << n);

    // Vector destinations of the other orientation.
    const Col v = random_matrix<Col>(n, 1);
    const Row w = random_matrix<Row>(1, n + 2);
    Row r = random_matrix<Row>(1, n + 2), re = r;
    r = egpu::gpu(a * v);
    re = a * v;
    BOOST_TEST(same_bits(r, re), "row = A * v, n " << n);
    Col y = random_matrix<Col>(n, 1), ye = y;
    y = egpu::gpu(w * a);
    ye = w * a;
    BOOST_TEST(same_bits(y, ye), "column = w * A, n " << n);
    y += egpu::gpu(w * a * s);
    ye += w * a * s;
    BOOST_TEST(same_bits(y, ye), "column += w * A * s, n " << n);
    r = egpu::gpu(v.transpose() * b);
    re = v.transpose() * b;
    BOOST_TEST(same_bits(r, re), "row = v^T * B (same orientation), n " << n);
    Row rv = random_matrix<Row>(1, n), rve = rv;
    rv = egpu::gpu(v * s + v);
    rve = v * s + v;
    BOOST_TEST(same_bits(rv, rve), "row = coefficient-wise column, n " << n);
  }
}

// Coefficient-wise expressions (NaN, Inf and zeros in the data) give CPU
// Eigen's result bit for bit: each egpu result next to Eigen's own
// assignment into a destination of the same kind.
BOOST_AUTO_TEST_CASE_TEMPLATE(coefficient_wise_is_eigens_result, S, Scalars) {
  using R = real_t<S>;
  using A = Eigen::Array<S, Eigen::Dynamic, Eigen::Dynamic>;
  using M = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic>;
  using RowM = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const Index rows = 37, cols = 23;
  const A a = sprinkled<A>(rows, cols), b = sprinkled<A>(rows, cols);
  const M ma = sprinkled<M>(rows, cols), mb = sprinkled<M>(rows, cols);
  const Eigen::Matrix<S, Eigen::Dynamic, 1> v = sprinkled<Eigen::Matrix<S, Eigen::Dynamic, 1>>(rows, 1);
  const Eigen::Matrix<S, 1, Eigen::Dynamic> r = sprinkled<Eigen::Matrix<S, 1, Eigen::Dynamic>>(1, cols);

  A c = random_matrix<A>(rows, cols), e = c;
  c = egpu::gpu(a * b + a.exp());
  e = a * b + a.exp();
  BOOST_TEST(same_bits(c, e), "=");
  c += egpu::gpu(R(2) * a.sin() - b / (R(1) + a.abs()));
  e += R(2) * a.sin() - b / (R(1) + a.abs());
  BOOST_TEST(same_bits(c, e), "+=");
  c -= egpu::gpu(a.abs2() * b.sqrt());
  e -= a.abs2() * b.sqrt();
  BOOST_TEST(same_bits(c, e), "-=");
  c = egpu::gpu((a.abs() > R(1)).select(a, b * R(0.5)));
  e = (a.abs() > R(1)).select(a, b * R(0.5));
  BOOST_TEST(same_bits(c, e), "select");
  const Eigen::ArrayXXcd f = egpu::gpu(a.template cast<std::complex<double>>() * b.template cast<std::complex<double>>());
  const Eigen::ArrayXXcd fe = a.template cast<std::complex<double>>() * b.template cast<std::complex<double>>();
  BOOST_TEST(same_bits(f, fe), "cast");

  M mc(rows, cols), me(rows, cols);
  mc.noalias() = egpu::gpu(ma.colwise() - v);
  me.noalias() = ma.colwise() - v;
  BOOST_TEST(same_bits(mc, me), "noalias() =, colwise broadcast");
  RowM rc = egpu::gpu(ma.rowwise() + r);
  const RowM re = ma.rowwise() + r;
  BOOST_TEST(same_bits(rc, re), "row-major, rowwise broadcast");
  rc -= egpu::gpu(ma.transpose().transpose().cwiseProduct(mb));
  RowM re2 = re;
  re2 -= ma.transpose().transpose().cwiseProduct(mb);
  BOOST_TEST(same_bits(rc, re2), "row-major -=");

  M big = random_matrix<M>(rows + 4, cols + 3), big_e = big;
  big.block(2, 1, rows, cols) = egpu::gpu(ma.cwiseProduct(mb) + ma.cwiseAbs2());
  big_e.block(2, 1, rows, cols) = ma.cwiseProduct(mb) + ma.cwiseAbs2();
  BOOST_TEST(same_bits(big, big_e), "block =");
  big.block(1, 3, rows, cols) += egpu::gpu(ma - mb);
  big_e.block(1, 3, rows, cols) += ma - mb;
  BOOST_TEST(same_bits(big, big_e), "block +=");

  // Sizes are checked without a GPU too.
  BOOST_CHECK_THROW((big.block(0, 0, rows, cols - 1) = egpu::gpu(ma - mb)), egpu::error);
  BOOST_TEST(same_bits(big, big_e), "a failed size check wrote into the matrix");

  // egpu's aliasing rule holds on the CPU as well: an operand overlapping the
  // destination other than element for element is read before it is written.
  M sq = sprinkled<M>(cols, cols);
  const M sb = sprinkled<M>(cols, cols);
  const M sq_e = (sq.transpose() + sb).eval();
  sq = egpu::gpu(sq.transpose() + sb);
  BOOST_TEST(same_bits(sq, sq_e), "transposed self");
  M shifted = sprinkled<M>(rows + 1, cols);
  M shifted_e = shifted;
  shifted_e.bottomRows(rows) = (shifted.topRows(rows) * R(2)).eval();
  shifted.bottomRows(rows) = egpu::gpu(shifted.topRows(rows) * R(2));
  BOOST_TEST(same_bits(shifted, shifted_e), "block shifted by a row");
}

// Reductions without a device are CPU Eigen's, bit for bit (a NaN matching
// any NaN): the members of gpu(x) and partial reductions, `=` and `+=`.
BOOST_AUTO_TEST_CASE_TEMPLATE(reductions_are_eigens, S, Scalars) {
  using R = real_t<S>;
  using M = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic>;
  using Row = Eigen::Matrix<S, 1, Eigen::Dynamic>;
  using Col = Eigen::Matrix<S, Eigen::Dynamic, 1>;
  const Index rows = 37, cols = 23;
  const M m = random_matrix<M>(rows, cols);
  const auto x = m.array() * m.array().conjugate() + m.array().exp();
  BOOST_TEST(same_real_bits(egpu::gpu(m).sum(), m.sum()), "sum()");
  BOOST_TEST(same_real_bits(egpu::gpu(x).sum(), x.sum()), "sum() of an expression");
  BOOST_TEST(same_real_bits(egpu::gpu(m).mean(), m.mean()), "mean()");
  BOOST_TEST(same_real_bits(egpu::gpu(m).prod(), m.prod()), "prod()");
  BOOST_TEST(same_real_bits(egpu::gpu(m).squaredNorm(), m.squaredNorm()), "squaredNorm()");
  BOOST_TEST(same_real_bits(egpu::gpu(m).norm(), m.norm()), "norm()");
  const auto positive = m.array().real() > R(0);
  BOOST_TEST(egpu::gpu(positive).count() == positive.count(), "count()");
  BOOST_TEST(egpu::gpu(positive).any() == positive.any(), "any()");
  BOOST_TEST(egpu::gpu(positive).all() == positive.all(), "all()");
  if constexpr (!is_complex_v<S>) {
    BOOST_TEST(same_real_bits(egpu::gpu(m).minCoeff(), m.minCoeff()), "minCoeff()");
    BOOST_TEST(same_real_bits(egpu::gpu(m).maxCoeff(), m.maxCoeff()), "maxCoeff()");
    const Row mins = egpu::gpu(m.colwise().minCoeff());
    BOOST_TEST(same_bits(mins, Row(m.colwise().minCoeff())), "colwise().minCoeff()");
  }
  const Row sums = egpu::gpu(m.colwise().sum());
  BOOST_TEST(same_bits(sums, Row(m.colwise().sum())), "colwise().sum()");
  const Col means = egpu::gpu(m.rowwise().mean());
  BOOST_TEST(same_bits(means, Col(m.rowwise().mean())), "rowwise().mean()");
  const Eigen::Matrix<R, Eigen::Dynamic, 1> norms = egpu::gpu(m.rowwise().norm());
  BOOST_TEST(same_bits(norms, Eigen::Matrix<R, Eigen::Dynamic, 1>(m.rowwise().norm())), "rowwise().norm()");
  Row acc = random_matrix<Row>(1, cols), acc_e = acc;
  acc += egpu::gpu(m.colwise().prod());
  acc_e += m.colwise().prod();
  BOOST_TEST(same_bits(acc, acc_e), "+= colwise().prod()");
  // Sizes and empty operands are checked without a device too.
  Row shorter = random_matrix<Row>(1, cols - 1);
  BOOST_CHECK_THROW(shorter += egpu::gpu(m.colwise().sum()), egpu::error);
  const M none(0, 4);
  BOOST_CHECK_THROW(egpu::gpu(none).mean(), egpu::error);
  BOOST_TEST(same_real_bits(egpu::gpu(none).sum(), S(0)), "sum() of nothing");
}

// minCoeff and maxCoeff of values holding a NaN are NaN, as on the GPU
// (Eigen's own default leaves them unspecified).
BOOST_AUTO_TEST_CASE(min_and_max_propagate_nan) {
  for (Index at = 0; at < 37; at += 4) {
    Eigen::MatrixXd a = random_matrix<Eigen::MatrixXd>(37, 5);
    a(at, 2) = std::numeric_limits<double>::quiet_NaN();
    BOOST_TEST(std::isnan(egpu::gpu(a).minCoeff()), "NaN at row " << at);
    BOOST_TEST(std::isnan(egpu::gpu(a).maxCoeff()), "NaN at row " << at);
    Eigen::ArrayXXf f = a.cast<float>().array();
    BOOST_TEST(std::isnan(egpu::gpu(f * 2.0f).minCoeff()), "float, NaN at row " << at);
  }
}

// The same for partial reductions: the column (row) holding the NaN gives
// NaN, the others Eigen's value.
BOOST_AUTO_TEST_CASE(partial_min_and_max_propagate_nan) {
  for (Index at = 0; at < 37; at += 4) {
    Eigen::MatrixXd a = random_matrix<Eigen::MatrixXd>(37, 5);
    a(at, 2) = std::numeric_limits<double>::quiet_NaN();
    const Eigen::RowVectorXd mins = egpu::gpu(a.colwise().minCoeff());
    const Eigen::VectorXd maxs = egpu::gpu(a.rowwise().maxCoeff());
    for (Index j = 0; j < 5; ++j)
      BOOST_TEST((j == 2 ? std::isnan(mins(j)) : mins(j) == a.col(j).minCoeff()),
                 "colwise().minCoeff(), NaN at row " << at << ", column " << j << ": " << mins(j));
    for (Index i = 0; i < 37; ++i)
      BOOST_TEST((i == at ? std::isnan(maxs(i)) : maxs(i) == a.row(i).maxCoeff()),
                 "rowwise().maxCoeff(), NaN at row " << at << ", row " << i << ": " << maxs(i));
  }
}

BOOST_AUTO_TEST_CASE(size_checks_still_throw) {
  Eigen::MatrixXd a = random_matrix<Eigen::MatrixXd>(4, 5), b = random_matrix<Eigen::MatrixXd>(5, 3);
  Eigen::MatrixXd c = random_matrix<Eigen::MatrixXd>(4, 4);
  const Eigen::MatrixXd c0 = c;
  BOOST_CHECK_THROW(c += egpu::gpu(a * b), egpu::error);
  BOOST_CHECK_THROW(c -= egpu::gpu(a * b), egpu::error);
  BOOST_TEST((c == c0));
  Eigen::MatrixXd big = random_matrix<Eigen::MatrixXd>(6, 6);
  const Eigen::MatrixXd big0 = big;
  BOOST_CHECK_THROW((big.block<3, 3>(0, 0) = egpu::gpu(a * b)), egpu::error);
  BOOST_CHECK_THROW((big.block(0, 0, 4, 2).noalias() = egpu::gpu(a * b)), egpu::error);
  BOOST_TEST((big == big0));
}

BOOST_AUTO_TEST_CASE(fixed_size_destination_mismatch_throws) {
  // A fixed-size Matrix cannot be resized: a 4x4 destination for a 4x3
  // product is a size mismatch, not a resize. (Eigen itself only asserts in
  // debug builds; in release its copy would read past the 4x3 result.)
  Eigen::MatrixXd a = random_matrix<Eigen::MatrixXd>(4, 5), b = random_matrix<Eigen::MatrixXd>(5, 3);
  Eigen::Matrix<double, 4, 4> fixed = Eigen::Matrix<double, 4, 4>::Ones();
  BOOST_CHECK_THROW(fixed = egpu::gpu(a * b), egpu::error);
  BOOST_CHECK_THROW(fixed.noalias() = egpu::gpu(a * b), egpu::error);
  BOOST_TEST((fixed == Eigen::Matrix<double, 4, 4>::Ones()));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_CASE(bad_device_request_throws, *boost::unit_test::precondition(banana_requested)) {
  BOOST_CHECK_THROW(egpu::has_device(), egpu::error);
  Eigen::MatrixXd a = random_matrix<Eigen::MatrixXd>(4, 5), b = random_matrix<Eigen::MatrixXd>(5, 3), c(4, 3);
  BOOST_CHECK_THROW(c.noalias() = egpu::gpu(a * b), egpu::error);
  BOOST_CHECK_THROW(c += egpu::gpu(a * b), egpu::error);
  // Asked again, the answer is the same (not a silent fallback the second time).
  BOOST_CHECK_THROW(egpu::has_device(), egpu::error);
  BOOST_CHECK_THROW(c = egpu::gpu(a * b), egpu::error);
}

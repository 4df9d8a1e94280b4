// The real library without a GPU: CTest runs this with EGPU_DEVICE=cpu
// (EGPU_QUIET=1), so every product runs on CPU Eigen and must give Eigen's
// result; sizes are still checked. A second CTest entry runs only
// `bad_device_request_throws` with EGPU_DEVICE=banana.
#define BOOST_TEST_MODULE fallback
#include <boost/test/unit_test.hpp>
#include <boost/mpl/list.hpp>

#include <complex>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "egpu/egpu.hpp"
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

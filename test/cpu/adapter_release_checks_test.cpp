// Size checks that Eigen's own eigen_assert would catch first in a debug
// build (an inner-size mismatch is asserted while `A * B` is built): with
// EIGEN_NO_DEBUG, as in a release build, egpu must still throw egpu::error
// rather than run a product of the wrong size. Its own executable, so that
// EIGEN_NO_DEBUG does not change Eigen's inline functions elsewhere.
#define EIGEN_NO_DEBUG 1
#define BOOST_TEST_MODULE adapter_release_checks
#include <boost/test/unit_test.hpp>

#include "egpu/egpu.hpp"
#include "support/recording_backend.hpp"
#include "support/test_support.hpp"

using namespace egpu_test;
namespace rec = egpu_test::recording;

BOOST_AUTO_TEST_CASE(inner_size_mismatch_throws) {
  Eigen::MatrixXd a = random_matrix<Eigen::MatrixXd>(4, 5), b = random_matrix<Eigen::MatrixXd>(6, 3);
  Eigen::MatrixXd c = random_matrix<Eigen::MatrixXd>(4, 3);
  const Eigen::MatrixXd c0 = c;
  rec::clear();
  BOOST_CHECK_THROW(c.noalias() = egpu::gpu(a * b), egpu::error);
  BOOST_CHECK_THROW(c = egpu::gpu(a * b), egpu::error);
  BOOST_CHECK_THROW(c += egpu::gpu(a * b), egpu::error);
  BOOST_CHECK_THROW(c -= egpu::gpu(2.0 * a * b), egpu::error);
  BOOST_CHECK_THROW(c.noalias() = egpu::gpu(a.transpose() * b.transpose()), egpu::error);
  BOOST_TEST(rec::calls().empty());
  BOOST_TEST((c == c0));
  Eigen::MatrixXcf x = random_matrix<Eigen::MatrixXcf>(3, 2), y = random_matrix<Eigen::MatrixXcf>(3, 2);
  Eigen::MatrixXcf z(3, 2);
  BOOST_CHECK_THROW(z.noalias() = egpu::gpu(x * y), egpu::error);
  BOOST_TEST(rec::calls().empty());
}

BOOST_AUTO_TEST_CASE(destination_mismatch_throws_in_release) {
  Eigen::MatrixXd a = random_matrix<Eigen::MatrixXd>(4, 5), b = random_matrix<Eigen::MatrixXd>(5, 3);
  Eigen::MatrixXd big = random_matrix<Eigen::MatrixXd>(8, 8);
  const Eigen::MatrixXd big0 = big;
  rec::clear();
  BOOST_CHECK_THROW((big.block<3, 3>(0, 0) = egpu::gpu(a * b)), egpu::error);
  BOOST_CHECK_THROW(big.topLeftCorner(5, 3) += egpu::gpu(a * b), egpu::error);
  BOOST_CHECK_THROW(big.col(0) = egpu::gpu(a * b), egpu::error);
  Eigen::Matrix<double, 4, 4> fixed = Eigen::Matrix<double, 4, 4>::Ones();
  BOOST_CHECK_THROW(fixed = egpu::gpu(a * b), egpu::error);
  BOOST_TEST(rec::calls().empty());
  BOOST_TEST((big == big0));
  BOOST_TEST((fixed == Eigen::Matrix<double, 4, 4>::Ones()));
}

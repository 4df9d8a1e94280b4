// Compiled by CTest with -fsyntax-only, once per case: EGPU_CASE_SUPPORTED
// must compile; EGPU_CASE_COMPLEX_MINCOEFF and EGPU_CASE_PARTIAL_ALL must
// fail with the adapter's message naming what is not supported
// (test/CMakeLists.txt checks it).
#include "egpu/egpu.hpp"

int main() {
  const Eigen::ArrayXXd a = Eigen::ArrayXXd::Ones(2, 3);
  const Eigen::MatrixXcd z = Eigen::MatrixXcd::Ones(2, 3);
#if defined(EGPU_CASE_SUPPORTED)
  const Eigen::RowVectorXd norms = egpu::gpu(z.colwise().norm());
  const double s = egpu::gpu(a * 2.0).sum() + egpu::gpu(a).minCoeff() + norms(0) +
                   static_cast<double>(egpu::gpu(a > 1.0).count());
  return static_cast<int>(s);
#elif defined(EGPU_CASE_COMPLEX_MINCOEFF)
  return static_cast<int>(egpu::gpu(z).minCoeff().real());
#elif defined(EGPU_CASE_PARTIAL_ALL)
  const Eigen::ArrayXXd all = egpu::gpu(a.colwise().all());
  return static_cast<int>(all(0));
#endif
}

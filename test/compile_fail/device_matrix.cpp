// Compiled by CTest with -fsyntax-only, once per case: EGPU_CASE_SUPPORTED
// (the forms of the README) must compile; every other case reads a
// DeviceMatrix's coefficients on the host and must fail with
// DeviceMatrix's message (test/CMakeLists.txt checks it).
#include "egpu/egpu.hpp"

int main() {
  const Eigen::MatrixXd A = Eigen::MatrixXd::Ones(3, 3);
  egpu::DeviceMatrix<double> dA(A), dB = A;
#if defined(EGPU_CASE_SUPPORTED)
  egpu::DeviceMatrix<double> dC = egpu::gpu(dA * dB);
  dC += egpu::gpu(dA.array() * dB.array().exp());
  dC = egpu::gpu(0.5 * dA.transpose() * A + dC);
  dC.block(0, 0, 2, 2) = egpu::gpu(dA.block(1, 1, 2, 2) * A.topLeftCorner(2, 2));
  dC = egpu::gpu((dA * dB).array().tanh().matrix() + dC);
  Eigen::MatrixXd C = dC.to_host();
  dC.copy_to(C.block(0, 0, 3, 3));
  C.noalias() = egpu::gpu(A * dB);
  const Eigen::RowVectorXd sums = egpu::gpu(dC.colwise().sum());
  egpu::DeviceMatrix<std::complex<float>> dz(2, 2);
  dz = egpu::gpu(dz.adjoint() * dz);
  egpu::synchronize();
  return static_cast<int>(egpu::gpu(dC).squaredNorm() + sums(0) + C(0, 0));
#elif defined(EGPU_CASE_HOST_EXPRESSION)
  const Eigen::MatrixXd X = dA + dB;
  return static_cast<int>(X(0, 0));
#elif defined(EGPU_CASE_COEFFICIENT)
  return static_cast<int>(dA(0, 0));
#elif defined(EGPU_CASE_BLOCK)
  const Eigen::MatrixXd X = dA.block(0, 0, 2, 2);
  return static_cast<int>(X(0, 0));
#elif defined(EGPU_CASE_REF)
  const Eigen::Ref<const Eigen::MatrixXd> r = dA;
  return static_cast<int>(r(0, 0));
#elif defined(EGPU_CASE_REDUCTION)
  return static_cast<int>(dA.sum());
#endif
}

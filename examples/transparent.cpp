// Transparent mode: ordinary Eigen code, no egpu in it. Built with
// egpu::transparent (see CMakeLists.txt), its products go through egpu's
// dispatch: large ones to the GPU, small ones to CPU Eigen; without a GPU
// all of it runs on CPU Eigen. EGPU_VERBOSE=1 prints each decision.
// Checks its results against coefficient-based products (which transparent
// mode leaves alone) and exits non-zero when one is wrong.
#include <Eigen/Dense>

#include <cstdio>

int main() {
  const Eigen::Index n = 1500;
  const Eigen::MatrixXd A = Eigen::MatrixXd::Random(n, n), B = Eigen::MatrixXd::Random(n, n);
  Eigen::MatrixXd C = A * B;              // a product like any other
  C.noalias() -= 0.5 * A.transpose() * B;  // folded into one call
  const Eigen::MatrixXd want = A.lazyProduct(B) - 0.5 * A.transpose().lazyProduct(B);
  const double error = (C - want).norm() / want.norm();

  // A decomposition whose blocked updates are products.
  const Eigen::MatrixXd M = A + double(n) * Eigen::MatrixXd::Identity(n, n);
  const Eigen::VectorXd x = Eigen::VectorXd::Random(n);
  const Eigen::VectorXd solved = M.partialPivLu().solve(M.lazyProduct(x));
  const double lu_error = (solved - x).norm() / x.norm();

  std::printf("C = A * B - 0.5 A^T B: rel. error %.1e; PartialPivLU solve: rel. error %.1e\n", error, lu_error);
  return error < 1e-12 && lu_error < 1e-10 ? 0 : 1;
}

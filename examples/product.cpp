// egpu's contract in one program: products written like Eigen's, run on the
// GPU (or on CPU Eigen when there is none), checked here against CPU Eigen.
// Exits non-zero when any result is wrong.
#include <egpu/egpu.hpp>

#include <complex>
#include <cstdio>
#include <limits>

namespace {

int failures = 0;

// Relative Frobenius error of `got` against Eigen's `want`.
template <class Got, class Want>
void check(const char* what, const Got& got, const Want& want) {
  using Real = typename Eigen::NumTraits<typename Got::Scalar>::Real;
  const double error = static_cast<double>((got - want).norm() / want.norm());
  const double limit = 1000 * static_cast<double>(std::numeric_limits<Real>::epsilon());
  const bool ok = error <= limit;  // NaN fails
  std::printf("%-48s rel. error %.1e  %s\n", what, error, ok ? "ok" : "WRONG");
  failures += ok ? 0 : 1;
}

int run() {
  std::printf("egpu runs on: %s%s\n", egpu::device_name().c_str(),
              egpu::has_device() ? "" : " (no usable GPU: CPU Eigen)");

  const Eigen::Index m = 300, k = 200, n = 250;
  const Eigen::MatrixXd A = Eigen::MatrixXd::Random(m, k), B = Eigen::MatrixXd::Random(k, n);
  const Eigen::MatrixXd At = Eigen::MatrixXd::Random(k, m);  // used as At.transpose(): m x k

  // Plain product, no aliasing promised away: C = A * B.
  Eigen::MatrixXd C(m, n);
  C.noalias() = egpu::gpu(A * B);
  Eigen::MatrixXd want = A * B;
  check("C.noalias() = gpu(A * B)", C, want);

  // Accumulate (beta = 1), transpose and a scalar folded into one call.
  C.noalias() += egpu::gpu(2.0 * At.transpose() * B);
  want += 2.0 * At.transpose() * B;
  check("C.noalias() += gpu(2 * At^T * B)", C, want);

  C.noalias() -= egpu::gpu(A * B);
  want -= A * B;
  check("C.noalias() -= gpu(A * B)", C, want);

  // `=` without noalias() is aliasing-safe, as in Eigen.
  Eigen::MatrixXd S = Eigen::MatrixXd::Random(m, m);
  const Eigen::MatrixXd S_want = S * S;
  S = egpu::gpu(S * S);
  check("S = gpu(S * S)   (aliased)", S, S_want);

  // Complex, adjoint, row-major destination.
  using MatC = Eigen::MatrixXcf;
  const MatC X = MatC::Random(k, m), Y = MatC::Random(k, n);
  Eigen::Matrix<std::complex<float>, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> Z(m, n);
  Z.noalias() = egpu::gpu(X.adjoint() * Y);
  check("Z(row-major).noalias() = gpu(X^H * Y)  complex", Z, MatC(X.adjoint() * Y));

  // The cuBLAS backend, for reference and comparison.
  egpu::Options options;
  options.backend = egpu::Backend::cublas;
  const Eigen::MatrixXf F = Eigen::MatrixXf::Random(m, k), G = Eigen::MatrixXf::Random(k, n);
  Eigen::MatrixXf H(m, n);
  H.noalias() = egpu::gpu(F * G, options);
  check("H.noalias() = gpu(F * G, cublas)  float", H, Eigen::MatrixXf(F * G));

  std::printf(failures ? "%d WRONG\n" : "all results agree with CPU Eigen\n", failures);
  return failures ? 1 : 0;
}

}  // namespace

int main() {
  try {
    return run();
  } catch (const egpu::error& e) {  // sizes, CUDA or cuBLAS failures
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}

// The program `egpu-bench transparent` times: ordinary Eigen code (square
// double products C = A * B, PartialPivLU and LLT factorizations), built
// three ways by bench/CMakeLists.txt without a change to this file:
//   cpu     plain CPU Eigen, OpenMP on every core
//   nvblas  Eigen with EIGEN_USE_BLAS, linked to NVBLAS (CPU BLAS: OpenBLAS)
//   egpu    egpu::transparent (EGPU_TRANSPARENT, egpu/egpu.hpp first)
// The egpu build also times C.noalias() = egpu::gpu(A * B) from N = 1024,
// the call transparent mode is measured against.
// Prints one CSV line per case: variant,case,n,seconds,check (check: the
// relative residual, a sample of product entries against dot products, or
// ||A x - b|| / ||b|| of a solve with the factorization).
#include <Eigen/Dense>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#ifndef EGPU_TRANSPARENT_VARIANT
#define EGPU_TRANSPARENT_VARIANT "cpu"
#endif

namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

template <class F>
double median_seconds(F&& f, int repeats) {
  std::vector<double> t;
  for (int r = 0; r < repeats; ++r) {
    const double t0 = now();
    f();
    t.push_back(now() - t0);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

std::vector<long> parse_list(const char* text) {
  std::vector<long> out;
  std::string s(text);
  for (std::size_t p = 0; p < s.size();) {
    const std::size_t q = s.find(',', p);
    out.push_back(std::stol(s.substr(p, q - p)));
    p = q == std::string::npos ? s.size() : q + 1;
  }
  return out;
}

void line(const char* what, long n, double seconds, double check) {
  std::printf("%s,%s,%ld,%.6g,%.3g\n", EGPU_TRANSPARENT_VARIANT, what, n, seconds, check);
  std::fflush(stdout);
}

}  // namespace

// usage: <program> PRODUCT_SIZES DECOMPOSITION_SIZES REPEATS   (sizes: "2,8,32")
int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s PRODUCT_SIZES DECOMPOSITION_SIZES REPEATS\n", argv[0]);
    return 2;
  }
  const std::vector<long> products = parse_list(argv[1]), decompositions = parse_list(argv[2]);
  const int repeats = std::max(1, std::atoi(argv[3]));
  std::srand(12345);
  for (long n : products) {
    const Eigen::MatrixXd A = Eigen::MatrixXd::Random(n, n), B = Eigen::MatrixXd::Random(n, n);
    Eigen::MatrixXd C = A * B;  // warm-up (first GPU use, page faults)
    const int r = n >= 8192 ? std::min(repeats, 3) : n <= 64 ? repeats * 1000 : repeats;
    const double t = median_seconds([&] { C = A * B; }, r);
    double err = 0;
    for (long k = 0; k < 16; ++k) {
      const long i = (k * 7919) % n, j = (k * 104729) % n;
      const double want = A.row(i).dot(B.col(j));
      err = std::max(err, std::abs(C(i, j) - want) / (std::abs(want) + 1e-300));
    }
    line("product", n, t, err);
#ifdef EGPU_TRANSPARENT
    // The same product written for egpu: what transparent mode is held to.
    if (n >= 1024) {
      const double explicit_t = median_seconds([&] { C.noalias() = egpu::gpu(A * B); }, r);
      line("product egpu::gpu written out", n, explicit_t, err);
    }
#endif
  }
  for (long n : decompositions) {
    Eigen::MatrixXd R = Eigen::MatrixXd::Random(n, n);
    const Eigen::VectorXd b = Eigen::VectorXd::Random(n);
    {
      const Eigen::MatrixXd A = R + double(n) * Eigen::MatrixXd::Identity(n, n);
      Eigen::PartialPivLU<Eigen::MatrixXd> lu;
      const double t = median_seconds([&] { lu.compute(A); }, 1);
      const Eigen::VectorXd x = lu.solve(b);
      line("PartialPivLU", n, t, (A * x - b).norm() / b.norm());
    }
    {
      // Symmetric and diagonally dominant: positive definite.
      const Eigen::MatrixXd S = (R + R.transpose()) * 0.5 + double(n) * Eigen::MatrixXd::Identity(n, n);
      R.resize(0, 0);
      Eigen::LLT<Eigen::MatrixXd> llt;
      const double t = median_seconds([&] { llt.compute(S); }, 1);
      const Eigen::VectorXd x = llt.solve(b);
      line("LLT", n, t, (S * x - b).norm() / b.norm());
    }
  }
  return 0;
}

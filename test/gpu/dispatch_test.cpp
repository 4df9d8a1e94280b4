// The CPU/GPU dispatch: `where` forced to the CPU and to the GPU gives
// CPU Eigen's results on both (products, coefficient-wise expressions,
// reductions; four scalars; odd shapes, blocks, row-major, 1 x N, N x 1);
// the automatic choice keeps small calls on the CPU and sends large ones
// to the GPU (products counted by the library); DeviceMatrix data runs on
// the GPU whatever `where` says. The rates come from a calibration file
// the test writes (round figures, so the choices are known), unless
// EGPU_CALIBRATION names another. Also run: with EGPU_VERBOSE=1 (the log's
// lines), with an odd calibration file (notices, defaults) and with
// EGPU_DEVICE=cpu (everything on CPU Eigen).
#define BOOST_TEST_MODULE dispatch
#include <boost/test/unit_test.hpp>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "egpu/egpu.hpp"
#include "support/test_support.hpp"

namespace {

using namespace egpu_test;

// Writes the round rates (dispatch_test's known choices) for this device.
struct Calibration {
  Calibration() {
    if (std::getenv("EGPU_CALIBRATION") != nullptr) return;
    const std::string path = "dispatch_test_calibration.txt";
    std::ofstream out(path);
    out << "device = " << egpu::device_name() << "\n"
        << "cpu_threads = " << Eigen::nbThreads() << "\n"
        << "gpu_call_seconds = 100e-6\n"
        << "h2d_pinned_bytes_per_second = 50e9\nd2h_pinned_bytes_per_second = 50e9\n"
        << "h2d_pageable_bytes_per_second = 10e9\nd2h_pageable_bytes_per_second = 10e9\n"
        << "pinned_latency_seconds = 0\npageable_latency_seconds = 0\n"
        << "gpu_gemm_flops_f32 = 40e12\ngpu_gemm_flops_f64 = 50e12\n"
        << "gpu_gemm_flops_c32 = 40e12\ngpu_gemm_flops_c64 = 50e12\n"
        << "cpu_gemm_flops_f32 = 2e12\ncpu_gemm_flops_f64 = 1e12\n"
        << "cpu_gemm_flops_c32 = 2e12\ncpu_gemm_flops_c64 = 1e12\n"
        << "cpu_memory_bytes_per_second = 10e9\ncpu_cheap_op_seconds = 1e-9\ncpu_costly_op_seconds = 5e-9\n";
    setenv("EGPU_CALIBRATION", path.c_str(), 1);
  }
};
BOOST_TEST_GLOBAL_FIXTURE(Calibration);

egpu::Options where(egpu::Where w) {
  egpu::Options o;
  o.where = w;
  return o;
}

std::size_t gpu_products() { return egpu::detail::products_run_on_gpu(); }

template <class S, int Layout>
void one_shape(Index m, Index n, Index k) {
  using M = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic, Layout>;
  using Wide = Eigen::Matrix<wider_t<S>, Eigen::Dynamic, Eigen::Dynamic>;
  const M a = random_matrix<M>(m + 3, k + 2), b = random_matrix<M>(k, n);
  const auto ab = a.block(1, 2, m, k);  // a strided block
  const Wide ref = ab.template cast<wider_t<S>>().eval() * b.template cast<wider_t<S>>().eval() * wider_t<S>(2);
  const double bound = error_bound<S>(k, 2.0, frob(ab), frob(b), 0, 0);
  for (egpu::Where w : {egpu::Where::cpu, egpu::Where::gpu}) {
    const bool gpu = w == egpu::Where::gpu && egpu::has_device();
    const std::size_t before = gpu_products();
    M c(m, n);
    poison(c);
    c.noalias() = egpu::gpu(S(2) * ab * b, where(w));
    BOOST_TEST(diff_norm(c.template cast<wider_t<S>>(), ref) <= bound, scalar_name<S>() << " " << m << "x" << n
                                                                                      << "x" << k);
    BOOST_TEST(gpu_products() - before == (gpu && m * n * k > 0 ? 1u : 0u));

    // Coefficient-wise and a reduction, against CPU Eigen.
    const M x = random_matrix<M>(m, n), y = random_matrix<M>(m, n);
    M e(m, n);
    poison(e);
    e = egpu::gpu(x.array() * y.array() + x.array().exp(), where(w));
    const M e_ref = x.array() * y.array() + x.array().exp();
    BOOST_TEST(diff_norm(e, e_ref) <= 1e-5 * (1 + frob(e_ref)));
    const S sum = egpu::gpu(x.array() * y.array(), where(w)).sum();
    const S sum_ref = (x.array() * y.array()).sum();
    BOOST_TEST(std::abs(sum - sum_ref) <= 1e-4 * (1 + std::abs(sum_ref)));
  }
}

template <class S>
void shapes() {
  for (auto [m, n, k] : {std::array<Index, 3>{1, 1, 1}, {17, 5, 33}, {1, 40, 7}, {40, 1, 7}, {0, 5, 3},
                         {65, 67, 129}, {8, 8, 0}})
  {
    one_shape<S, Eigen::ColMajor>(m, n, k);
    one_shape<S, Eigen::RowMajor>(m, n, k);
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(forced_cpu_and_gpu_agree, *boost::unit_test::precondition(gpu_or_forced_cpu)) {
  shapes<float>();
  shapes<double>();
  shapes<std::complex<float>>();
  shapes<std::complex<double>>();
}

BOOST_AUTO_TEST_CASE(automatic_keeps_small_calls_on_the_cpu_and_sends_large_ones_to_the_gpu,
                     *boost::unit_test::precondition(gpu_available)) {
  // With the test's rates: f64 N=8 is below the gate; at N=2000, pageable,
  // the model gives the CPU 16 ms and the GPU 9.9 ms.
  for (Index n : {8, 2000}) {
    const Eigen::MatrixXd a = random_matrix<Eigen::MatrixXd>(n, n), b = random_matrix<Eigen::MatrixXd>(n, n);
    Eigen::MatrixXd c(n, n);
    poison(c);
    const std::size_t before = gpu_products();
    c.noalias() = egpu::gpu(a * b);
    BOOST_TEST(gpu_products() - before == (n > 8 ? 1u : 0u), "N=" << n);
    const Eigen::MatrixXd ref = a * b;
    BOOST_TEST(diff_norm(c, ref) <= error_bound<double>(n, 1, frob(a), frob(b), 0, 0));
  }
}

BOOST_AUTO_TEST_CASE(device_data_runs_on_the_gpu_whatever_where_says, *boost::unit_test::precondition(gpu_available)) {
  const Eigen::MatrixXd a = random_matrix<Eigen::MatrixXd>(5, 4), b = random_matrix<Eigen::MatrixXd>(4, 3);
  const egpu::DeviceMatrix<double> da(a), db(b);
  const std::size_t before = gpu_products();
  egpu::DeviceMatrix<double> dc = egpu::gpu(da * db, where(egpu::Where::cpu));
  BOOST_TEST(gpu_products() - before == 1u);
  const Eigen::MatrixXd c = dc.to_host(), ref = a * b;
  BOOST_TEST(diff_norm(c, ref) <= error_bound<double>(4, 1, frob(a), frob(b), 0, 0));
}

// The runtime on a GPU: concurrent products from two host threads, the
// device's name, and failures: a call that cannot run throws egpu::error,
// an accumulating call that fails leaves C unchanged, and the library
// keeps working afterwards. Skipped without a usable GPU.
#define BOOST_TEST_MODULE runtime
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <complex>
#include <string>
#include <thread>
#include <vector>

#include "egpu/egpu.hpp"
#include "support/gemm_cases.hpp"
#include "support/test_support.hpp"

using namespace egpu_test;

BOOST_AUTO_TEST_SUITE(runtime, *boost::unit_test::precondition(gpu_available))

BOOST_AUTO_TEST_CASE(device_name_is_a_gpu) {
  const std::string name = egpu::device_name();
  BOOST_TEST_MESSAGE("device: " << name);
  BOOST_TEST(!name.empty());
  BOOST_TEST(name != "cpu");
}

BOOST_AUTO_TEST_CASE(two_threads_concurrently) {
  std::atomic<int> failures{0}, done{0};
  auto worker = [&](int id) {
    for (int t = 0; t < scaled_count(30); ++t) {
      // Alternate scalars and backends; each thread its own data.
      const Index m = 200 + 37 * ((t + id) % 7), n = 150 + 41 * (t % 5), k = 300 + 13 * id;
      egpu::Options opt;
      opt.backend = (t + id) % 2 == 0 ? egpu::Backend::own : egpu::Backend::cublas;
      if (id == 0) {
        Eigen::MatrixXd a = Eigen::MatrixXd::Random(m, k), b = Eigen::MatrixXd::Random(k, n), c(m, n);
        c.noalias() = egpu::gpu(a * b, opt);
        if (!((c - a * b).norm() <= 1e-12 * a.norm() * b.norm())) ++failures;
      } else {
        Eigen::MatrixXcf a = Eigen::MatrixXcf::Random(k, m), b = Eigen::MatrixXcf::Random(k, n);
        Eigen::MatrixXcf c = Eigen::MatrixXcf::Random(m, n);
        const Eigen::MatrixXcf c0 = c;
        c.noalias() += egpu::gpu(a.adjoint() * b, opt);
        const Eigen::MatrixXcd ref = c0.cast<std::complex<double>>() +
                                     a.cast<std::complex<double>>().adjoint() * b.cast<std::complex<double>>();
        if (!((c.cast<std::complex<double>>() - ref).norm() <= 1e-5 * double(a.norm()) * double(b.norm()))) ++failures;
      }
      ++done;
    }
  };
  std::vector<std::thread> threads;
  std::vector<std::exception_ptr> errors(2);
  for (int id = 0; id < 2; ++id)
    threads.emplace_back([&, id] {
      try {
        worker(id);
      } catch (...) {
        errors[static_cast<std::size_t>(id)] = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  for (auto& e : errors) {
    try {
      if (e) std::rethrow_exception(e);
    } catch (const std::exception& x) {
      BOOST_TEST(false, "thread threw: " << x.what());
    }
  }
  BOOST_TEST(failures.load() == 0);
  BOOST_TEST(done.load() == 2 * scaled_count(30));
}

BOOST_AUTO_TEST_CASE(a_failing_call_throws_and_leaves_c_unchanged) {
  for (egpu::Backend backend : {egpu::Backend::own, egpu::Backend::cublas}) {
    egpu::Options opt;
    opt.backend = backend;
    opt.device_memory_limit = 16;  // bytes: no tile fits
    Eigen::MatrixXd a = random_matrix<Eigen::MatrixXd>(300, 200), b = random_matrix<Eigen::MatrixXd>(200, 100);
    Eigen::MatrixXd c = random_matrix<Eigen::MatrixXd>(300, 100);
    const Eigen::MatrixXd c0 = c;
    BOOST_CHECK_THROW(c += egpu::gpu(a * b, opt), egpu::error);
    BOOST_TEST((c.array() == c0.array()).all(), "a failed += changed C");
    BOOST_CHECK_THROW(c.noalias() -= egpu::gpu(2.0 * a * b, opt), egpu::error);
    BOOST_TEST((c.array() == c0.array()).all(), "a failed -= changed C");
    BOOST_CHECK_THROW(c.noalias() = egpu::gpu(a * b, opt), egpu::error);
    // The library still works afterwards.
    egpu::Options fine;
    fine.backend = backend;
    c = c0;
    c.noalias() += egpu::gpu(a * b, fine);
    BOOST_TEST((c - (c0 + a * b)).norm() <= 1e-12 * (a.norm() * b.norm() + c0.norm()));
  }
}

BOOST_AUTO_TEST_CASE(many_small_calls) {
  // Launch and copy overhead paths: many tiny products in a row.
  for (int t = 0; t < scaled_count(200); ++t) {
    const Index m = 1 + t % 9, n = 1 + t % 7, k = 1 + t % 5;
    Eigen::MatrixXf a = random_matrix<Eigen::MatrixXf>(m, k), b = random_matrix<Eigen::MatrixXf>(k, n), c(m, n);
    poison(c);
    c.noalias() = egpu::gpu(a * b);
    BOOST_TEST(((c - a * b).norm() <= 1e-5f * (1 + a.norm() * b.norm())), "m=" << m << " n=" << n << " k=" << k);
  }
}

BOOST_AUTO_TEST_SUITE_END()

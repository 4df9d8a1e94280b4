// egpu::record and egpu::Graph against CPU Eigen on fresh random data:
//  - a recorded chain (products with transposes, adjoints, factors, `=`,
//    `-=`; coefficient-wise expressions; a block as destination; a partial
//    reduction into a device vector) changes nothing when recorded, and
//    each launch does what the calls would: checked against the same steps
//    on host mirrors, with both product backends, double and
//    complex<float>, odd sizes;
//  - kernels compiled for the first time inside a recording;
//  - matrices created and resized while recording: memory at once, values
//    from the launches;
//  - what a recording refuses (host operands or destinations, reductions
//    to a host scalar, uploads, downloads, waits, a recording inside a
//    recording, a launch from another thread), each an egpu::error after
//    which the thread is no longer recording and calls run as usual;
//  - a matrix destroyed while recording stays allocated until the graph
//    is destroyed, then device memory in use is back at its level.
// The same executable runs twice: on a GPU (skipped without one), and with
// EGPU_DEVICE=cpu, where launch() runs the recorded function again on CPU
// Eigen (test/CMakeLists.txt).
#define BOOST_TEST_MODULE graph
#include <boost/test/unit_test.hpp>
#include <boost/mpl/list.hpp>

#include <complex>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "egpu/detail/testing.hpp"
#include "egpu/egpu.hpp"
#include "support/test_support.hpp"

using namespace egpu_test;

namespace {

template <class S> using Mat = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic>;
template <class S> using Dev = egpu::DeviceMatrix<S>;
using TwoScalars = boost::mpl::list<double, std::complex<float>>;

// ||got - ref|| <= 256 eps(S) (||ref|| + 1), and no NaN (poison) left.
template <class S>
void check_close(const Mat<S>& got, const Mat<S>& ref, const std::string& what) {
  const double eps = static_cast<double>(std::numeric_limits<real_t<S>>::epsilon());
  const double err = diff_norm(got, ref), bound = 256 * eps * (frob(ref) + 1);
  BOOST_TEST_INFO(what << ": error " << err << ", bound " << bound);
  BOOST_TEST(all_finite(got));
  BOOST_TEST(err <= bound);
}

// Host matrices and their device copies: the chain's state.
template <class S>
struct Chain {
  Index n, k;
  Mat<S> a, x, y, z, v;
  Dev<S> da, dx, dy, dz, dv;
  Chain(Index n_, Index k_)
      : n(n_), k(k_), a(random_matrix<Mat<S>>(n_, n_) / S(real_t<S>(n_))), x(random_matrix<Mat<S>>(n_, k_)),
        y(n_, k_), z(random_matrix<Mat<S>>(n_, k_)), v(1, k_) {
    poison(y);
    poison(v);
    da = a;
    dx = x;
    dy = y;
    dz = z;
    dv = v;
  }
  // One step on the device: five calls.
  void device_step(const egpu::Options& options) {
    dy = egpu::gpu(da * dx, options);
    dx = egpu::gpu(S(real_t<S>(0.5)) * dx + S(real_t<S>(0.25)) * dy);
    dz.block(1, 2, n - 3, k - 4) = egpu::gpu((dx.block(0, 0, n - 3, k - 4).array() * dz.block(2, 1, n - 3, k - 4).array()).matrix());
    dv = egpu::gpu(dz.colwise().sum());
    dx -= egpu::gpu(S(real_t<S>(0.125)) * da.adjoint() * dz, options);
  }
  // The same step on the host mirrors.
  void host_step() {
    y = a * x;
    x = S(real_t<S>(0.5)) * x + S(real_t<S>(0.25)) * y;
    z.block(1, 2, n - 3, k - 4) = (x.block(0, 0, n - 3, k - 4).array() * z.block(2, 1, n - 3, k - 4).array()).matrix().eval();
    v = z.colwise().sum();
    x -= S(real_t<S>(0.125)) * a.adjoint() * z;
  }
  void check(const std::string& what) {
    check_close<S>(dx.to_host(), x, what + ": x");
    check_close<S>(dy.to_host(), y, what + ": y");
    check_close<S>(dz.to_host(), z, what + ": z");
    check_close<S>(dv.to_host(), v, what + ": v");
  }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(on_a_gpu_or_cpu_eigen, *boost::unit_test::precondition(gpu_or_forced_cpu))

BOOST_AUTO_TEST_CASE_TEMPLATE(a_recorded_chain_does_what_its_calls_do, S, TwoScalars) {
  for (const egpu::Backend backend : {egpu::Backend::own, egpu::Backend::cublas}) {
    egpu::Options options;
    options.backend = backend;
    const std::string what = std::string(scalar_name<S>()) + (backend == egpu::Backend::own ? " own" : " cublas");
    const Index n = uniform_index(9, 70), k = uniform_index(7, 60);
    Chain<S> c(n, k);
    const int steps = 3;
    egpu::Graph graph = egpu::record([&] {
      for (int s = 0; s < steps; ++s) c.device_step(options);
    });
    // Recording ran nothing.
    BOOST_TEST((c.dx.to_host() == c.x));
    BOOST_TEST((c.dz.to_host() == c.z));
    // Each of the five calls a step makes is one operation or more (the
    // aliased block and the partial reduction go through a temporary).
    if (egpu::has_device())
      BOOST_TEST(graph.calls() == std::size_t(7 * steps));
    else
      BOOST_TEST(graph.calls() == 0u);
    for (int launch = 1; launch <= 2; ++launch) {
      graph.launch();
      for (int s = 0; s < steps; ++s) c.host_step();
      c.check(what + ", launch " + std::to_string(launch));
    }
    // The calls run directly still agree with the mirrors afterwards.
    c.device_step(options);
    c.host_step();
    c.check(what + ", a direct step after the launches");
  }
}

BOOST_AUTO_TEST_CASE(kernels_compiled_inside_a_recording) {
  const Index n = uniform_index(5, 90), k = uniform_index(5, 90);
  const Mat<double> x = random_matrix<Mat<double>>(n, k), y = random_matrix<Mat<double>>(n, k);
  Dev<double> dx(x), dy(y), dw(n, k);
  // An expression no other case uses: its kernel is generated while recording.
  egpu::Graph graph =
      egpu::record([&] { dw = egpu::gpu((dx.array().cos() * 0.375 + dy.array().abs().sqrt() * dx.array()).matrix()); });
  graph.launch();
  const Mat<double> ref = (x.array().cos() * 0.375 + y.array().abs().sqrt() * x.array()).matrix();
  check_close<double>(dw.to_host(), ref, "a kernel generated while recording");
}

BOOST_AUTO_TEST_CASE(matrices_created_and_resized_while_recording) {
  const Index n = uniform_index(3, 60), k = uniform_index(3, 60);
  const Mat<double> a = random_matrix<Mat<double>>(n, n), x = random_matrix<Mat<double>>(n, k);
  Dev<double> da(a), dx(x), dy(1, 1), dz;
  egpu::Graph graph = egpu::record([&] {
    dy = egpu::gpu(da * dx);  // resized: n x k
    Dev<double> t = egpu::gpu(da.transpose() * dy);  // created and destroyed
    dz = egpu::gpu(t - dy);  // resized: n x k
  });
  graph.launch();
  BOOST_TEST(dy.rows() == n);
  BOOST_TEST(dz.cols() == k);
  const Mat<double> y = a * x;
  check_close<double>(dy.to_host(), y, "resized while recording");
  check_close<double>(dz.to_host(), (a.transpose() * y - y).eval(), "through a matrix created while recording");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(on_a_gpu, *boost::unit_test::precondition(device_only))

// Each refused recording: egpu::error naming egpu::record; afterwards the
// thread is not recording (calls run and the results come back).
BOOST_AUTO_TEST_CASE(what_a_recording_refuses) {
  const Index n = 17;
  const Mat<double> a = random_matrix<Mat<double>>(n, n), x = random_matrix<Mat<double>>(n, n);
  Dev<double> da(a), dx(x), dy(n, n);
  Mat<double> host_out(n, n);
  double s = 0;
  const std::vector<std::pair<std::string, std::function<void()>>> refused = {
      {"a host operand", [&] { dy = egpu::gpu(da * x); }},
      {"a host destination", [&] { host_out.noalias() = egpu::gpu(da * dx); }},
      {"a host operand of a coefficient-wise expression", [&] { dy = egpu::gpu(dx + x); }},
      {"a reduction to a host scalar", [&] { s = egpu::gpu(dx).sum(); }},
      {"a download", [&] { host_out = dx.to_host(); }},
      {"an upload", [&] { dy = x; }},
      {"a wait", [&] { egpu::synchronize(); }},
      {"a recording inside a recording", [&] { egpu::record([] {}); }},
      {"host matrices alone", [&] { host_out.noalias() = egpu::gpu(a * x); }},
  };
  for (const auto& [what, calls] : refused) {
    BOOST_TEST_INFO(what);
    std::string message;
    try {
      dy = egpu::gpu(da * dx);  // queued before: the refusal keeps it
      egpu::record([&] {
        dy = egpu::gpu(dx * da);  // recorded, then discarded with the recording
        calls();
      });
    } catch (const egpu::error& e) {
      message = e.what();
    }
    BOOST_TEST(message.find("egpu::record") != std::string::npos, "message: " << message);
    check_close<double>(dy.to_host(), a * x, what + ": the call queued before the recording");
  }
  (void)s;
  BOOST_TEST(dy.rows() == n);
}

BOOST_AUTO_TEST_CASE(a_graph_is_launched_from_the_thread_that_recorded_it) {
  Dev<double> da(random_matrix<Mat<double>>(8, 8)), dy(8, 8);
  egpu::Graph graph = egpu::record([&] { dy = egpu::gpu(da * da); });
  std::string message;
  std::thread other([&] {
    try {
      graph.launch();
    } catch (const egpu::error& e) {
      message = e.what();
    }
  });
  other.join();
  BOOST_TEST(message.find("thread that recorded") != std::string::npos, "message: " << message);
}

BOOST_AUTO_TEST_CASE(a_matrix_destroyed_while_recording_lives_as_long_as_the_graph) {
  const Index n = 33;
  const Mat<double> t = random_matrix<Mat<double>>(n, n), x = random_matrix<Mat<double>>(n, n);
  Dev<double> dx(x), dy(n, n);
  const std::size_t before = egpu::detail::device_bytes_in_use();
  {
    auto dt = std::make_unique<Dev<double>>(t);
    egpu::Graph graph = egpu::record([&] {
      dy = egpu::gpu(*dt * dx);
      dt.reset();
    });
    BOOST_TEST(!dt);
    for (int launch = 0; launch < 2; ++launch) {
      graph.launch();
      check_close<double>(dy.to_host(), t * x, "launch " + std::to_string(launch));
    }
  }
  BOOST_TEST(egpu::detail::device_bytes_in_use() == before);
}

BOOST_AUTO_TEST_SUITE_END()

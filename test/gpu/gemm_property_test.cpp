// Random products on the GPU against a wider-precision CPU reference, one
// set of tests instantiated per backend (Backend::own, Backend::cublas):
// shapes 0..600 (0, 1, odd sizes, tile edges), all four scalars, N/T/H/C on
// each side, strided blocks and Maps with inner and outer strides, row- and
// column-major, every assignment form, aliasing, outputs poisoned with NaN.
// Float products also under Precision::tf32 and tf32x3.
// EGPU_TEST_SCALE scales the case counts (0.1 under compute-sanitizer).
// Skipped (reported as such by CTest) without a usable GPU.
#define BOOST_TEST_MODULE gemm_property
#include <boost/test/unit_test.hpp>
#include <boost/mpl/list.hpp>

#include <complex>
#include <cstdio>
#include <map>
#include <string>

#include "egpu/egpu.hpp"
#include "support/gemm_cases.hpp"
#include "support/test_support.hpp"

using namespace egpu_test;
using Scalars = boost::mpl::list<float, double, std::complex<float>, std::complex<double>>;

namespace {

// The one-line summary at the end of the run.
struct PrintSummary {
  ~PrintSummary() {
    if (tallies().empty()) return;
    long cases = 0;
    std::string line;
    for (const auto& [name, t] : tallies()) {
      cases += t.cases;
      char buf[160];
      std::snprintf(buf, sizeof buf, " %s worst %.3g;", name.c_str(), t.worst);
      line += buf;
    }
    std::printf("gemm_property summary: %ld cases (limit %.1f):%s\n", cases, kRatioLimit, line.c_str());
  }
};
BOOST_TEST_GLOBAL_FIXTURE(PrintSummary);

const char* backend_name(egpu::Backend b) { return b == egpu::Backend::own ? "own" : "cublas"; }

void record(egpu::Backend b, const char* scalar, const Tally& t) {
  tallies()[std::string(backend_name(b)) + "/" + scalar].merge(t);
}

template <class S> void random_cases(egpu::Backend backend) {
  egpu::Options opt;
  opt.backend = backend;
  const Tally t = run_random_cases<S>(scaled_count(280), scaled_count(4 * special_kinds), 600, opt);
  record(backend, scalar_name<S>(), t);
}

// Shapes at and around the tile sizes of a blocked kernel.
template <class S> void tile_edges(egpu::Backend backend) {
  egpu::Options opt;
  opt.backend = backend;
  const Index edges[] = {1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 255, 256, 257};
  const int n_edges = static_cast<int>(sizeof edges / sizeof edges[0]);
  Tally t;
  for (int c = 0; c < scaled_count(40); ++c) {
    CaseSpec spec = random_spec(64);
    spec.m = edges[uniform_index(0, n_edges - 1)];
    spec.n = edges[uniform_index(0, n_edges - 1)];
    spec.k = edges[uniform_index(0, n_edges - 1)];
    const CaseOutcome o = run_case<S>(spec, opt);
    t.add(o.ratio);
    BOOST_TEST(o.ok(), o.text);
  }
  record(backend, scalar_name<S>(), t);
}

// Float products under Options::precision: tf32 is held to TF32's unit
// roundoff, tf32x3 to fp32's (the split operands must give fp32 accuracy).
void float_precision(egpu::Backend backend, egpu::Precision precision) {
  egpu::Options opt;
  opt.backend = backend;
  opt.precision = precision;
  const ScopedEpsScale scale(precision == egpu::Precision::tf32 ? 8192.0 : 1.0);
  const Tally t = run_random_cases<float>(scaled_count(80), scaled_count(special_kinds), 600, opt);
  record(backend, precision == egpu::Precision::tf32 ? "float-tf32" : "float-tf32x3", t);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(float_precision_modes, *boost::unit_test::precondition(gpu_available))
BOOST_AUTO_TEST_CASE(own_tf32) { float_precision(egpu::Backend::own, egpu::Precision::tf32); }
BOOST_AUTO_TEST_CASE(own_tf32x3) { float_precision(egpu::Backend::own, egpu::Precision::tf32x3); }
BOOST_AUTO_TEST_CASE(cublas_tf32) { float_precision(egpu::Backend::cublas, egpu::Precision::tf32); }
BOOST_AUTO_TEST_CASE(cublas_tf32x3) { float_precision(egpu::Backend::cublas, egpu::Precision::tf32x3); }
BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(own_backend, *boost::unit_test::precondition(gpu_available))
BOOST_AUTO_TEST_CASE_TEMPLATE(random_products, S, Scalars) { random_cases<S>(egpu::Backend::own); }
BOOST_AUTO_TEST_CASE_TEMPLATE(tile_edge_shapes, S, Scalars) { tile_edges<S>(egpu::Backend::own); }
BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(cublas_backend, *boost::unit_test::precondition(gpu_available))
BOOST_AUTO_TEST_CASE_TEMPLATE(random_products, S, Scalars) { random_cases<S>(egpu::Backend::cublas); }
BOOST_AUTO_TEST_CASE_TEMPLATE(tile_edge_shapes, S, Scalars) { tile_edges<S>(egpu::Backend::cublas); }
BOOST_AUTO_TEST_SUITE_END()

// Part of adapter_descriptor_test: results of every assignment form against
// Eigen, all four scalars, random shapes (0 and 1 included), strided
// operands and destinations, aliasing, computed by the recording backend
// from the descriptor alone. The cases themselves are compiled once in the
// egpu_gemm_cases library (support/gemm_cases.hpp).
#include <boost/test/unit_test.hpp>
#include <boost/mpl/list.hpp>

#include <complex>
#include <cstdio>

#include "egpu/egpu.hpp"
#include "support/gemm_cases.hpp"
#include "support/recording_backend.hpp"
#include "support/test_support.hpp"

using namespace egpu_test;
using Scalars = boost::mpl::list<float, double, std::complex<float>, std::complex<double>>;

// Results of every form against Eigen, all four scalars, random shapes.

BOOST_AUTO_TEST_CASE_TEMPLATE(random_cases_match_eigen, S, Scalars) {
  const Tally t = run_random_cases<S>(scaled_count(250), scaled_count(3 * special_kinds), 24, egpu::Options());
  std::printf("adapter_descriptor: %s: %ld cases, worst error ratio %.3g (limit %.1f)\n", scalar_name<S>(), t.cases,
              t.worst, kRatioLimit);
  // Every case that reached the backend handed it a valid descriptor (the
  // recording backend runs validate()).
}

// The random product cases of support/gemm_cases.hpp for std::complex<double>, compiled once
// for every test that runs them.
#include "support/gemm_cases.hpp"

namespace egpu_test {
EGPU_TEST_GEMM_CASES(, std::complex<double>)
}  // namespace egpu_test

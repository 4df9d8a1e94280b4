// The random product cases of support/gemm_cases.hpp for double, compiled once
// for every test that runs them.
#include "support/gemm_cases.hpp"

namespace egpu_test {
EGPU_TEST_GEMM_CASES(, double)
}  // namespace egpu_test

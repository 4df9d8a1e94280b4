// Compiled by CTest with -fsyntax-only, once per case: EGPU_CASE_SUPPORTED
// must compile; EGPU_CASE_LAMBDA and EGPU_CASE_SIGN must fail with the
// adapter's message naming the functor (test/CMakeLists.txt checks it).
#include <memory>
#include <vector>

#include "egpu/adapter/elementwise_parts.hpp"

int main() {
  Eigen::ArrayXXd a = Eigen::ArrayXXd::Ones(2, 3);
  std::vector<std::shared_ptr<void>> temporaries;
#if defined(EGPU_CASE_SUPPORTED)
  const auto p = egpu::detail::describe_elementwise(a * 2.0 + a.exp(), temporaries);
#elif defined(EGPU_CASE_LAMBDA)
  const auto p = egpu::detail::describe_elementwise(a.unaryExpr([](double x) { return x + 1; }) + a, temporaries);
#elif defined(EGPU_CASE_SIGN)
  const auto p = egpu::detail::describe_elementwise(a.sign() * a, temporaries);
#endif
  return static_cast<int>(p.code.size());
}

// A fake egpu backend for the adapter tests: has_device() is true, and
// detail::gemm() records each descriptor and computes it with a naive
// strided loop on the host, using only what the descriptor says (pointers,
// strides, conj flags, alpha, beta, beta_is_zero): a wrong descriptor gives
// a wrong answer. detail::elementwise() runs the program with the host
// interpreter. Link it instead of egpu (with egpu_core for validate()).
#pragma once

#include <vector>

#include "egpu/detail/gemm_descriptor.hpp"
#include "egpu/options.hpp"

namespace egpu_test::recording {

struct Call {
  egpu::detail::GemmDesc desc;
  egpu::Options options;
};

// Every gemm() call since the last clear().
std::vector<Call>& calls();
// elementwise() calls since the last clear() (run by the host interpreter
// of support/elementwise_reference.hpp).
int& elementwise_calls();
void clear();

// The next gemm() call throws egpu::error before touching C.
void fail_next_call();

}  // namespace egpu_test::recording

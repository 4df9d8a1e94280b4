// A fake egpu backend for the adapter tests: has_device() is true, and
// detail::gemm() records each descriptor and computes it with a naive
// strided loop on the host, using only what the descriptor says (pointers,
// strides, conj flags, alpha, beta, beta_is_zero): a wrong descriptor gives
// a wrong answer. detail::elementwise() runs the program with the host
// interpreter; detail::reduce() records each call and computes it from the
// interpreter's values, combined in long double
// (support/reduction_reference.hpp). Link it instead of egpu (with
// egpu_core for validate()).
#pragma once

#include <vector>

#include "egpu/detail/elementwise_program.hpp"
#include "egpu/detail/gemm_descriptor.hpp"
#include "egpu/detail/reduction.hpp"
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

struct ReduceCall {
  egpu::detail::ElementwiseProgram program;  // its leaves may point at temporaries of the call, gone since
  egpu::detail::Reduction reduction;
  egpu::Options options;
};
// Every reduce() call since the last clear(), failed ones included.
std::vector<ReduceCall>& reductions();
inline int reduce_calls() { return static_cast<int>(reductions().size()); }

void clear();

// The next gemm() or reduce() call throws egpu::error before writing anything.
void fail_next_call();

}  // namespace egpu_test::recording

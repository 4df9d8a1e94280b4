// What every kernel of the GEMM family reads of its product, whatever the
// tile and arithmetic: sizes, operand bases and leading dimensions, the
// split-k slice, the epilogue's scalars and the run-time flags. Operand
// layouts are template parameters of the kernels; each kernel's parameter
// struct adds what only it needs (how C is addressed, tile counts).
#pragma once

#include <cstdint>

namespace egpu::kernels::kernel {

template <class T>
struct ProductParams {
  std::int64_t m, n, k;
  const T* a;
  std::int64_t lda;
  const T* b;
  std::int64_t ldb;
  T* c;
  // Split-k: slice z of the grid covers k in [z * k_slice, min(k, (z + 1) *
  // k_slice)) and writes to c + z * c_slice; a plain launch has one slice.
  std::int64_t k_slice, c_slice;
  T alpha, beta;
  bool beta_is_zero;  // C is not read
  bool a_vec, b_vec;  // 16-byte global loads are allowed for the operand
  bool conj_a, conj_b;
};

}  // namespace egpu::kernels::kernel

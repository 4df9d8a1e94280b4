// GemmArgs onto the parameters every kernel of the family shares
// (kernel/product_params.hpp); each launcher adds its kernel's own.
#pragma once

#include "kernels/gemm/device/gemm_split_k.cuh"
#include "kernels/gemm/gemm_args.hpp"
#include "kernels/gemm/kernel/product_params.hpp"

namespace egpu::kernels::device {

// a_vec / b_vec: whether the operand's base and leading dimension allow
// the launcher's 16-byte loads (irrelevant, and off, when k == 0).
template <class T>
void set_product_params(kernel::ProductParams<T>& p, const GemmArgs<T>& g, const KSlices& slices, bool a_vec,
                        bool b_vec) {
  p.m = g.m;
  p.n = g.n;
  p.k = g.k;
  p.a = g.a;
  p.lda = g.lda;
  p.b = g.b;
  p.ldb = g.ldb;
  p.c = g.c;
  const bool split = slices.count > 1;
  p.k_slice = split ? slices.k_slice : g.k;
  p.c_slice = split ? slices.c_slice : 0;
  p.alpha = g.alpha;
  p.beta = g.beta;
  p.beta_is_zero = g.beta_is_zero;
  p.a_vec = g.k > 0 && a_vec;
  p.b_vec = g.k > 0 && b_vec;
  p.conj_a = is_complex<T>::value && g.conj_a;
  p.conj_b = is_complex<T>::value && g.conj_b;
}

}  // namespace egpu::kernels::device

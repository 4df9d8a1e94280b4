// Second pass of split-k: C = alpha * sum_z W_z + beta * C, where W_z
// (z < slices) are column-major m x n partial products at ws + z * slice
// (leading dimension m). C(i, j) is at c[i * c_rs + j * c_cs]; it is not
// read when beta_is_zero. Threads run along i (coalesced workspace reads),
// the grid's y along j, looping where n exceeds gridDim.y.
#pragma once

#include <cstdint>

#include "kernels/gemm/thread/scalar_ops.cuh"

namespace egpu::kernels::kernel {

template <class T>
__global__ void __launch_bounds__(256) split_k_reduce_kernel(
    const T* __restrict__ ws, int slices, std::int64_t slice, std::int64_t m, std::int64_t n,
    T* c, std::int64_t c_rs, std::int64_t c_cs, T alpha, T beta, bool beta_is_zero) {
  const std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= m) return;
  for (std::int64_t j = blockIdx.y; j < n; j += gridDim.y) {
    const T* w = ws + i + j * m;
    T s = w[0];
    for (int z = 1; z < slices; ++z) {
      w += slice;
      s = thread::add(s, *w);
    }
    s = thread::mul(alpha, s);
    T* const cc = c + i * c_rs + j * c_cs;
    *cc = beta_is_zero ? s : thread::madd(beta, *cc, s);
  }
}

}  // namespace egpu::kernels::kernel

// Element kernels of a complex<double> product run as a real one
// (device/gemm_complex_as_real.hpp): the expansion of alpha op(A), the copy
// of op(B) into a column-major k x n matrix. One thread per element, rows fastest (the writes
// coalesce; so do the reads of column-major operands).
#pragma once

#include <cstdint>

#include "common/complex.hpp"
#include "kernels/gemm/thread/scalar_ops.cuh"

namespace egpu::kernels::kernel {

constexpr int expand_threads = 256;

// f(e) for every e in [0, total), spread over the grid's threads.
template <class F>
__device__ __forceinline__ void for_each_element(std::int64_t total, F&& f) {
  for (std::int64_t e = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total;
       e += std::int64_t(gridDim.x) * blockDim.x)
    f(e);
}

// a_r, m x 2k complex elements at ld m: a_r(i, 2p) = v and
// a_r(i, 2p + 1) = i v for v = alpha op(A)(i, p), which as doubles is the
// 2m x 2k real matrix with blocks [re -im; im re].
__global__ void __launch_bounds__(expand_threads)
    expand_a_kernel(const cdouble* a, std::int64_t lda, bool a_row_major, bool conj_a, cdouble alpha, std::int64_t m,
                    std::int64_t k, cdouble* a_r) {
  for_each_element(m * k, [&](std::int64_t e) {
    const std::int64_t i = e % m, p = e / m;
    const cdouble v = thread::mul(alpha, thread::conj_if(a_row_major ? a[i * lda + p] : a[i + p * lda], conj_a));
    a_r[i + 2 * p * m] = v;
    a_r[i + (2 * p + 1) * m] = cdouble{-v.im, v.re};
  });
}

// b_copy(p, j) = op(B)(p, j), k x n at ld k.
__global__ void __launch_bounds__(expand_threads)
    copy_op_b_kernel(const cdouble* b, std::int64_t ldb, bool b_row_major, bool conj_b, std::int64_t k,
                     std::int64_t n, cdouble* b_copy) {
  for_each_element(k * n, [&](std::int64_t e) {
    const std::int64_t p = e % k, j = e / k;
    b_copy[e] = thread::conj_if(b_row_major ? b[p * ldb + j] : b[p + j * ldb], conj_b);
  });
}

}  // namespace egpu::kernels::kernel

// dst(i, j) = src(i, j) for a rows x cols column-major matrix, between any
// leading dimensions: threads along i (reads and writes coalesced whatever
// the alignment of src's columns), the grid's y along j, looping where the
// matrix exceeds the grid.
#pragma once

#include <cstdint>

namespace egpu::kernels::kernel {

template <class T>
__global__ void __launch_bounds__(256) copy_matrix_kernel(const T* __restrict__ src, std::int64_t ld_src,
                                                          T* __restrict__ dst, std::int64_t ld_dst,
                                                          std::int64_t rows, std::int64_t cols) {
  const std::int64_t i0 = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::int64_t di = std::int64_t(gridDim.x) * blockDim.x;
  for (std::int64_t j = blockIdx.y; j < cols; j += gridDim.y)
    for (std::int64_t i = i0; i < rows; i += di) dst[i + j * ld_dst] = src[i + j * ld_src];
}

}  // namespace egpu::kernels::kernel

// dst(i, j) = src(i, j) for column-major matrices between any leading
// dimensions, one or two matrices per launch (the grid's y picks one). Each
// warp copies pieces of copy_piece rows of one column, lanes on consecutive
// rows (reads and writes coalesced whatever the alignment of src's
// columns), a piece per warp so that tall and wide matrices alike give
// every multiprocessor work; each lane has copy_batch loads in flight (one
// at a time, the copy ran at a third of the memory's bandwidth).
#pragma once

#include <cstdint>

namespace egpu::kernels::kernel {

template <class T>
struct MatrixCopy {
  const T* src;
  std::int64_t ld_src;
  T* dst;
  std::int64_t ld_dst;
  std::int64_t rows, cols;
};

constexpr int copy_threads = 256;
constexpr int copy_piece = 1024;  // rows per warp task
constexpr int copy_batch = 8;     // elements per lane loaded before they are stored

template <class T>
__global__ void __launch_bounds__(copy_threads) copy_matrix_kernel(const MatrixCopy<T> m0, const MatrixCopy<T> m1) {
  const MatrixCopy<T> m = blockIdx.y == 0 ? m0 : m1;
  const std::int64_t pieces = (m.rows + copy_piece - 1) / copy_piece;  // per column
  const std::int64_t tasks = pieces * m.cols;
  const int lane = int(threadIdx.x) % 32;
  constexpr int warps = copy_threads / 32;
  for (std::int64_t task = std::int64_t(blockIdx.x) * warps + threadIdx.x / 32; task < tasks;
       task += std::int64_t(gridDim.x) * warps) {
    const std::int64_t j = task / pieces, i0 = (task % pieces) * copy_piece;
    const int len = int(m.rows - i0 < copy_piece ? m.rows - i0 : copy_piece);
    const T* const s = m.src + j * m.ld_src + i0;
    T* const d = m.dst + j * m.ld_dst + i0;
    // copy_batch loads in flight per lane before their stores.
    for (int b = lane; b < len; b += 32 * copy_batch) {
      T v[copy_batch];
#pragma unroll
      for (int u = 0; u < copy_batch; ++u)
        if (b + 32 * u < len) v[u] = s[b + 32 * u];
#pragma unroll
      for (int u = 0; u < copy_batch; ++u)
        if (b + 32 * u < len) d[b + 32 * u] = v[u];
    }
  }
}

}  // namespace egpu::kernels::kernel

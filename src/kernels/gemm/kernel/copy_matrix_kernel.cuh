// dst(i, j) = src(i, j) for column-major matrices between any leading
// dimensions, one or two matrices per launch (the grid's y picks one). Each
// warp copies pieces of copy_piece rows of one column, lanes on consecutive
// rows (reads and writes coalesced whatever the alignment of src's
// columns), a piece per warp so that tall and wide matrices alike give
// every multiprocessor work; each lane has copy_batch loads in flight (one
// at a time, the copy ran at a third of the memory's bandwidth), and a
// piece is one such batch: with four batches per piece a warp waited on
// memory four times in a row, and the operands of 4095x4097x511 took
// 10 us to copy.
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/gemm/kernel/grid_dependency.cuh"

namespace egpu::kernels::kernel {

template <class T>
struct MatrixCopy {
  const T* src;
  std::int64_t ld_src;
  T* dst;
  std::int64_t ld_dst;
  std::int64_t rows, cols;  // of src; transpose_matrix_kernel's dst is cols x rows
};

constexpr int copy_threads = 256;
constexpr int copy_batch = 8;                 // elements per lane loaded before they are stored
constexpr int copy_piece = 32 * copy_batch;  // rows per warp task: one batch, all in flight

// WIDE: task numbers of 2^31 and more (64-bit division). The 32-bit
// kernel needs half the registers of the 64-bit division's, so twice the
// resident warps and loads in flight.
template <class T, bool WIDE>
__global__ void __launch_bounds__(copy_threads) copy_matrix_kernel(const MatrixCopy<T> m0, const MatrixCopy<T> m1) {
  // The product after the copy may be scheduled now: its blocks take the
  // multiprocessors as the copy's leave, and wait for the whole copy.
  launch_dependents();
  using Task = std::conditional_t<WIDE, std::int64_t, std::uint32_t>;
  const MatrixCopy<T> m = blockIdx.y == 0 ? m0 : m1;
  const Task pieces = Task((m.rows + copy_piece - 1) / copy_piece);  // per column
  const Task tasks = pieces * Task(m.cols);
  const int lane = int(threadIdx.x) % 32;
  constexpr int warps = copy_threads / 32;
  for (Task task = Task(blockIdx.x) * warps + threadIdx.x / 32; task < tasks; task += Task(gridDim.x) * warps) {
    const std::int64_t j = task / pieces, i0 = std::int64_t(task % pieces) * copy_piece;
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

// Copies of float operands onto the 16-byte grid before a tensor-core
// product. The mma kernels load an operand off the grid (a leading dimension
// not a multiple of 4, or a base off 16 bytes) one element per cp.async (the
// element map, EL in device/gemm_mma_launch.cuh), with four times the copy
// instructions of the 16-byte path; from operand_copy_min_side on, a copy
// of the operand into a padded buffer costs less than that.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "kernels/gemm/device/gemm_mma_launch.cuh"
#include "kernels/gemm/device/operand_buffer.cuh"
#include "kernels/gemm/gemm_args.hpp"
#include "kernels/gemm/gemm_mma_config.hpp"
#include "kernels/gemm/kernel/copy_matrix_kernel.cuh"
#include "runtime/cuda_check.hpp"
#include "runtime/device_buffer.hpp"

namespace egpu::kernels::device {

// Whether gemm_mma runs g through with_operands_on_grid: float, large
// enough (operand_copy_min_side in gemm_mma_config.hpp).
template <class T>
bool copies_operands(const GemmArgs<T>& g) {
  return std::is_same_v<T, float> && g.k > 0 && g.m >= operand_copy_min_side &&
         g.n >= operand_copy_min_side;
}

// The stored matrix of an operand: column-major rows x cols at ld.
struct StoredMatrix {
  std::int64_t rows, cols;
};
template <class T>
StoredMatrix stored_a(const GemmArgs<T>& g) {
  return g.a_layout == Layout::row_major ? StoredMatrix{g.k, g.m} : StoredMatrix{g.m, g.k};
}
template <class T>
StoredMatrix stored_b(const GemmArgs<T>& g) {
  return g.b_layout == Layout::row_major ? StoredMatrix{g.n, g.k} : StoredMatrix{g.k, g.n};
}

// One launch copies the matrices of `count` (1 or 2) descriptors.
template <class T>
void copy_matrices(const kernel::MatrixCopy<T> (&m)[2], int count, cudaStream_t stream) {
  std::int64_t warps = 0;  // warp tasks of the larger copy
  for (int i = 0; i < count; ++i) {
    const std::int64_t tasks = (m[i].rows + kernel::copy_piece - 1) / kernel::copy_piece * m[i].cols;
    warps = tasks > warps ? tasks : warps;
  }
  const std::int64_t blocks = (warps + kernel::copy_threads / 32 - 1) / (kernel::copy_threads / 32);
  const dim3 grid(unsigned(blocks < 8192 ? blocks : 8192), unsigned(count));
  // 32-bit task numbers while they and the grid's stride stay below 2^32.
  if (warps < (std::int64_t(1) << 31))
    kernel::copy_matrix_kernel<T, false><<<grid, kernel::copy_threads, 0, stream>>>(m[0], m[1]);
  else
    kernel::copy_matrix_kernel<T, true><<<grid, kernel::copy_threads, 0, stream>>>(m[0], m[1]);
  runtime::launch_check("copy_matrix_kernel (operands onto the 16-byte grid)");
}

// Calls run(h), h = g with each operand off the grid replaced by a copy on
// it (leading dimension rounded up to 4 elements) in stream-ordered memory,
// freed after the work queued by run. With both operands on the grid, or
// where that memory cannot be had, runs g as it is.
template <class T, class Run>
void with_operands_on_grid(const GemmArgs<T>& g, cudaStream_t stream, Run&& run) {
  const bool copy_a = !mma_vector_ok(g.a, g.lda), copy_b = !mma_vector_ok(g.b, g.ldb);
  if (!copy_a && !copy_b) {
    run(g);
    return;
  }
  const StoredMatrix sa = stored_a(g), sb = stored_b(g);
  const std::int64_t lda = grid_ld<T>(sa.rows), ldb = grid_ld<T>(sb.rows);
  const std::size_t elems_a = copy_a ? std::size_t(lda * sa.cols) : 0;
  const std::size_t elems_b = copy_b ? std::size_t(ldb * sb.cols) : 0;
  const runtime::DeviceBuffer buffer = try_operand_buffer((elems_a + elems_b) * sizeof(T), stream);
  if (buffer.get() == nullptr) {
    run(g);  // the element map needs no memory
    return;
  }
  GemmArgs<T> h = g;
  kernel::MatrixCopy<T> copies[2] = {};
  int count = 0;
  if (copy_a) {
    h.a = buffer.as<T>();
    h.lda = lda;
    copies[count++] = {g.a, g.lda, buffer.as<T>(), lda, sa.rows, sa.cols};
  }
  if (copy_b) {
    h.b = buffer.as<T>() + elems_a;  // elems_a: a multiple of the vector
    h.ldb = ldb;
    copies[count++] = {g.b, g.ldb, buffer.as<T>() + elems_a, ldb, sb.rows, sb.cols};
  }
  copy_matrices(copies, count, stream);
  run(h);
}

}  // namespace egpu::kernels::device

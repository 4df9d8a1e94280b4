// A product run on a transposed copy of op(B): a k-contiguous op(B)
// (column-major k x n) copied n-contiguous (row by row), so that a TN
// product runs on the TT layouts' kernel (CopyBTransposed in
// gemm_tile_config.hpp).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "kernels/gemm/device/operand_buffer.cuh"
#include "kernels/gemm/gemm_args.hpp"
#include "kernels/gemm/kernel/transpose_matrix_kernel.cuh"
#include "runtime/cuda_check.hpp"

namespace egpu::kernels::device {

template <class T>
void transpose_matrix(const kernel::MatrixCopy<T>& m, cudaStream_t stream) {
  const std::int64_t tiles = (m.rows + kernel::transpose_tile - 1) / kernel::transpose_tile *
                             ((m.cols + kernel::transpose_tile - 1) / kernel::transpose_tile);
  constexpr std::int64_t max_blocks = std::int64_t(1) << 20;  // blocks loop over the rest
  const unsigned blocks = unsigned(tiles < max_blocks ? tiles : max_blocks);
  kernel::transpose_matrix_kernel<T><<<blocks, kernel::transpose_threads, 0, stream>>>(m);
  runtime::launch_check("transpose_matrix_kernel (op(B) copied row by row)");
}

// Calls run(h), h = g (op(B) column-major, m, n, k > 0) with op(B) replaced
// by a copy laid out row by row (Layout::row_major, ldb rounded up to 16
// bytes) in stream-ordered memory, freed after the work run queues.
// Returns false, having run nothing, where that memory cannot be had.
template <class T, class Run>
bool with_b_copied_by_rows(const GemmArgs<T>& g, cudaStream_t stream, Run&& run) {
  const std::int64_t ld = grid_ld<T>(g.n);
  const runtime::DeviceBuffer buffer = try_operand_buffer(std::size_t(ld) * std::size_t(g.k) * sizeof(T), stream);
  if (buffer.get() == nullptr) return false;
  transpose_matrix(kernel::MatrixCopy<T>{g.b, g.ldb, buffer.as<T>(), ld, g.k, g.n}, stream);
  GemmArgs<T> h = g;
  h.b = buffer.as<T>();
  h.ldb = ld;
  h.b_layout = Layout::row_major;
  run(h);
  return true;
}

}  // namespace egpu::kernels::device

// dst = src^T for column-major matrices between any leading dimensions:
// src is m.rows x m.cols, dst m.cols x m.rows, dst(j, i) = src(i, j) (the
// descriptor of copy_matrix_kernel). A block moves one 32 x 32 tile at a
// time through shared memory, so that a warp reads a run of 32 consecutive
// elements of one column of src and writes a run of 32 consecutive elements
// of one column of dst (both coalesced); the tile's extra column puts the
// 32 elements a warp reads across the tile in 32 different banks. Blocks
// loop over the tiles, so any size fits the grid.
#pragma once

#include <cstdint>

#include "kernels/gemm/kernel/copy_matrix_kernel.cuh"  // MatrixCopy

namespace egpu::kernels::kernel {

constexpr int transpose_tile = 32;
constexpr int transpose_threads = 256;  // 32 x 8: each thread moves 4 elements of a tile
constexpr int transpose_passes = transpose_tile * transpose_tile / transpose_threads;

template <class T>
__global__ void __launch_bounds__(transpose_threads) transpose_matrix_kernel(const MatrixCopy<T> m) {
  __shared__ T tile[transpose_tile][transpose_tile + 1];
  constexpr int step = transpose_threads / transpose_tile;  // rows of the tile per pass
  const int lane = int(threadIdx.x) % transpose_tile, row = int(threadIdx.x) / transpose_tile;
  const std::int64_t tiles_r = (m.rows + transpose_tile - 1) / transpose_tile;
  const std::int64_t tiles = tiles_r * ((m.cols + transpose_tile - 1) / transpose_tile);
  for (std::int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    const std::int64_t i0 = t % tiles_r * transpose_tile, j0 = t / tiles_r * transpose_tile;
    // Read: lanes along a column of src (i), passes over its columns (j).
    const std::int64_t i = i0 + lane;
#pragma unroll
    for (int p = 0; p < transpose_passes; ++p) {
      const std::int64_t j = j0 + row + p * step;
      if (i < m.rows && j < m.cols) tile[row + p * step][lane] = m.src[j * m.ld_src + i];
    }
    __syncthreads();
    // Write: lanes along a column of dst (j), passes over its columns (i).
    const std::int64_t j = j0 + lane;
#pragma unroll
    for (int p = 0; p < transpose_passes; ++p) {
      const std::int64_t ii = i0 + row + p * step;
      if (ii < m.rows && j < m.cols) m.dst[ii * m.ld_dst + j] = tile[lane][row + p * step];
    }
    __syncthreads();  // the tile is refilled by the next iteration
  }
}

}  // namespace egpu::kernels::kernel

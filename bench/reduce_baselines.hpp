// What egpu-bench reduce compares egpu's device-resident reductions with
// (host-callable; the kernels live in nvcc-compiled files):
//   - CUB (reduce_baselines.cu): cub::DeviceReduce::Sum, Max and
//     TransformReduce (squares, products a[i] * b[i]) over all values, and
//     cub::DeviceSegmentedReduce::Sum over contiguous segments (the sums of
//     the columns of column-major data, of the rows of row-major data);
//   - a hand-written two-pass kernel (reduce_baselines.cu) for sums across
//     the contiguous direction (the column sums of row-major data, the row
//     sums of column-major data), which CUB has no single call for;
//   - Eigen's Tensor module on Eigen::GpuDevice (tensor_baseline.hpp): the
//     Eigen-native way to reduce device memory.
// Every function queues its work on the stream it is given and returns; the
// results land in device memory. Scalars: float and double.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace egpu_bench::gpu {

// A reduction of all values: sum of a, sum of a[i]^2 (squaredNorm), max of a,
// sum of a[i] * b[i].
enum class FullOp { sum, squared_norm, max, dot };

// Bytes of device scratch CUB needs for `op` over n values of T; pass a
// buffer of at least that size to cub_full.
template <class T>
std::size_t cub_full_temp_bytes(FullOp op, std::size_t n);

// out[0] = op over a (and b for dot), n values.
template <class T>
void cub_full(FullOp op, const T* a, const T* b, std::size_t n, T* out, void* temp, std::size_t temp_bytes,
              cudaStream_t stream);

// Sums of `segments` contiguous runs of `length` values each: out[s] = sum of
// in[s * length, (s + 1) * length), with cub::DeviceSegmentedReduce::Sum.
template <class T>
std::size_t cub_segmented_sum_temp_bytes(std::int64_t segments, std::int64_t length);
template <class T>
void cub_segmented_sum(const T* in, std::int64_t segments, std::int64_t length, T* out, void* temp,
                       std::size_t temp_bytes, cudaStream_t stream);

// Sums across the contiguous direction: out[j] = sum over k < length of
// in[k * width + j], j < width. Two passes: blocks of threads each sum a
// slice of k for consecutive j (coalesced loads) into partials, then one
// thread per j adds its slices in order (the same bits every run).
// Scratch: hand_strided_sum_temp_bytes.
template <class T>
std::size_t hand_strided_sum_temp_bytes(std::int64_t width, std::int64_t length);
template <class T>
void hand_strided_sum(const T* in, std::int64_t width, std::int64_t length, T* out, void* temp,
                      std::size_t temp_bytes, cudaStream_t stream);

}  // namespace egpu_bench::gpu

// Memory for copies of a product's operands made before it runs (onto the
// 16-byte grid, or transposed): the copy's leading dimension, and
// stream-ordered memory that may be refused, in which case the product
// runs on the operands as they are.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "egpu/error.hpp"
#include "kernels/gemm/gemm_tile_config.hpp"  // vector_elems
#include "runtime/device_buffer.hpp"

namespace egpu::kernels::device {

// `rows` rounded up to a whole number of 16-byte vectors of T.
template <class T>
std::int64_t grid_ld(std::int64_t rows) {
  constexpr std::int64_t V = vector_elems<T>;
  return (rows + V - 1) / V * V;
}

// `bytes` (> 0) of stream-ordered memory on `stream`, or an empty buffer
// (get() == nullptr) where the pool cannot give them.
inline runtime::DeviceBuffer try_operand_buffer(std::size_t bytes, cudaStream_t stream) {
  try {
    return runtime::DeviceBuffer(bytes, stream);
  } catch (const egpu::error&) {
    return {};
  }
}

}  // namespace egpu::kernels::device

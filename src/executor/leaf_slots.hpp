// The device slots of one leaf of a coefficient-wise expression in a
// host-resident pipeline: its pieces go up into a ring of slots and the
// kernels read them there. The coefficient-wise pipeline keeps one per leaf
// of the expression; a product's pipeline one per leaf of its epilogue
// other than the product, beside the C slots.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "egpu/detail/elementwise_program.hpp"
#include "executor/pipeline_parts.hpp"
#include "planner/pipeline_plan.hpp"
#include "runtime/device_buffer.hpp"

namespace egpu::executor {

// A piece lies densely in its slot (lines not padded).
inline DenseShape dense(std::int64_t rows, std::int64_t cols, Layout layout) {
  return dense_shape<char>(rows, cols, layout, false);
}

// What the planner needs of `leaf` in an expression of rows x cols: its
// element size and the sides it varies along (a stride of 0 broadcasts).
planner::LeafTraffic leaf_traffic(const detail::EwLeaf& leaf, std::int64_t rows, std::int64_t cols);

class LeafSlots {
 public:
  // `slots` slots for pieces of at most mb x nb (less along a broadcast side).
  LeafSlots(const detail::EwLeaf& leaf, const planner::LeafTraffic& traffic, std::int32_t slots, std::int64_t mb,
            std::int64_t nb, cudaStream_t stream, Events& events, std::size_t compute_streams);

  // Queues the upload of the leaf's piece of region `op` (rows op.i0.., columns
  // op.j0..) into op.slot once every kernel that read the slot's previous
  // piece is done.
  void upload(const Op& op, StagingRing& ring, cudaStream_t stream, int threads);

  // Before a kernel on `stream` reads `slot` for region `op`; returns the
  // piece as that region's operand (a piece uploaded once serves regions of
  // other sizes).
  detail::MatrixDesc acquire(std::int32_t slot, const Op& op, cudaStream_t stream);
  // After that kernel is queued on compute lane `lane`.
  void release(std::int32_t slot, std::size_t lane, cudaStream_t stream);

 private:
  detail::EwLeaf m_leaf;
  planner::LeafTraffic m_traffic;
  std::int64_t m_slot_bytes;
  runtime::DeviceBuffer m_buffer;
  std::vector<detail::MatrixDesc> m_device;  // per slot: the piece as the kernel reads it
  std::vector<cudaEvent_t> m_ready;
  std::vector<std::vector<cudaEvent_t>> m_read;  // per slot, per compute stream
  bool m_pinned = false;
};

}  // namespace egpu::executor

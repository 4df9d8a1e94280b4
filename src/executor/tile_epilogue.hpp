// The coefficient-wise rest of an expression around a product
// (GemmDesc::epilogue), applied to each finished C tile on the device before
// the tile comes down: the product's leaf points at the tile, the other
// leaves' pieces of the tile go up into slots beside the C slots.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "backend/device_elementwise.hpp"
#include "egpu/detail/elementwise_program.hpp"
#include "executor/leaf_slots.hpp"
#include "executor/pipeline_parts.hpp"
#include "planner/pipeline_plan.hpp"

namespace egpu::executor {

class TileEpilogue {
 public:
  // `transposed`: the pipeline computes C^T (a row-major C), so the
  // program's leaves are read transposed too.
  TileEpilogue(const detail::GemmDesc& desc, bool transposed, runtime::Context& ctx);

  // The leaves other than the product, as the planner counts them
  // (GemmProblem::tile_leaves, in the order of upload_leaf's op.leaf).
  const std::vector<planner::LeafTraffic>& tile_leaves() const { return m_traffic; }
  // Device bytes of their slots beside `slots_c` C slots of mb x nb.
  std::int64_t slot_bytes(std::int32_t slots_c, std::int64_t mb, std::int64_t nb) const;

  // Allocates the slots once the plan is known.
  void allocate(const planner::PipelinePlan& plan, const Streams& streams, Events& events);
  // upload_leaf: the tile's piece of leaf op.leaf into C slot op.slot's.
  void upload(const Op& op, StagingRing& ring, int threads, Trace& trace);
  // Queues tile = f(tile, leaves) on compute lane `lane` for the tile of the
  // multiply `op` (its last), which lies at `tile` on the device.
  void apply(const Op& op, const detail::MatrixDesc& tile, std::size_t lane, cudaStream_t stream, Trace& trace);

 private:
  detail::ElementwiseProgram m_program;
  int m_product;
  std::vector<int> m_slots_of;  // per leaf of the program: its index in m_leaves, -1 for the product
  std::vector<planner::LeafTraffic> m_traffic;
  std::vector<LeafSlots> m_leaves;
  cudaStream_t m_up = nullptr;
  backend::ElementwiseLauncher m_launcher;
};

}  // namespace egpu::executor

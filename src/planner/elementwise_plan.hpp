// Plans a host-resident coefficient-wise expression as a pipeline through a
// device memory budget, with the operations of pipeline_plan.hpp: the
// destination (in its storage order: columns are its contiguous lines) is
// cut into chunks of whole columns, or of rows of one column when a column
// is larger than a chunk; per chunk, each leaf's piece goes up into the
// leaf's slot (upload_leaf), the expression runs (evaluate) into an output
// slot, and the result comes down (download_c). Pure C++: no CUDA calls.
//
// The executor derives the dependencies from the slots, as for products:
// - upload_leaf into a slot waits for the last evaluate that read the slot;
// - evaluate waits for its chunk's uploads and for the last download from
//   its output slot;
// - download_c waits for its chunk's evaluate.
#pragma once

#include <cstdint>
#include <vector>

#include "planner/pipeline_plan.hpp"

namespace egpu::planner {

struct ElementwiseProblem {
  std::int64_t rows = 0, cols = 0;
  std::vector<LeafTraffic> leaves;
  // 0: the chunks' results stay on the device (a reduction folds them
  // there): no result slots, no download_c.
  std::int64_t out_elem_size = 8;
  // The destination is read by the expression (+=, -=): every chunk's
  // result is kept on the device until all have been computed when the
  // budget allows it (plan.out_slots == plan.chunks()), so that a failure
  // leaves the destination untouched.
  bool accumulates = false;
};

struct ElementwiseLimits {
  std::int64_t device_budget_bytes = 0;
  std::int64_t chunk_bytes = 0;  // bytes of the widest operand per chunk, at most; 0 chooses
};

struct ElementwisePlan {
  ElementwiseProblem problem;
  std::int64_t mb = 0, nb = 0;     // chunk: mb rows x nb columns (edge chunks are smaller)
  std::int32_t leaf_slots = 0;     // slots per leaf that changes from chunk to chunk
  // Per leaf: its piece is the same in every chunk (a broadcast vector
  // along which no chunk is cut): one slot, uploaded before the first chunk.
  std::vector<char> leaf_once;
  std::int32_t out_slots = 0;
  std::int64_t device_bytes = 0;   // elements of the slots times their sizes
  // The budget shaped nothing: chunks as large as asked, a full ring of
  // slots and, for an accumulating call, every result held; any budget
  // that holds device_bytes gives the same plan.
  bool unconstrained = false;
  std::int64_t h2d_bytes = 0, d2h_bytes = 0;
  std::vector<Op> ops;             // in issue order; tile numbers the chunk

  std::int64_t chunks() const;
  // Device bytes of a slot for rows x cols elements of elem bytes, dense:
  // slots start on kSlotAlign bytes, so every piece is aligned for packed
  // access and all chunks run the same compiled kernel.
  static constexpr std::int64_t kSlotAlign = 256;
  static std::int64_t slot_bytes(std::int64_t elem, std::int64_t rows, std::int64_t cols);
  // The rows x cols a leaf's piece of a chunk of mi x nj takes (1 along a
  // broadcast side).
  static std::int64_t piece_rows(const LeafTraffic& leaf, std::int64_t mi) { return leaf.varies_down_rows ? mi : 1; }
  static std::int64_t piece_cols(const LeafTraffic& leaf, std::int64_t nj) { return leaf.varies_across_cols ? nj : 1; }
};

// rows and cols must be positive. Throws egpu::error when the budget cannot
// hold the slots of even small chunks.
ElementwisePlan plan_elementwise(const ElementwiseProblem& problem, const ElementwiseLimits& limits);

}  // namespace egpu::planner

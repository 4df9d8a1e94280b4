// Plans a host-resident product as a pipeline through a device memory
// budget. C is cut into mb x nb tiles and k into kb-deep pieces (the first
// of them cut in two where PipelinePlan::k_lead says so); pieces of
// A (mb x kb) and B (kb x nb) live in device slots, C tiles in C slots. The
// plan is the list of operations in issue order, with the slot each one
// uses, and the bytes that cross PCIe. Pure C++: no CUDA calls, tested on
// any machine. (planner/elementwise_plan.hpp plans the other kind of work,
// coefficient-wise expressions, with the same operations and rules.)
//
// The executor derives every dependency from the slots:
// - upload_a / upload_b into a slot waits for the last multiply that read
//   the slot's previous piece;
// - upload_c and a first_k multiply into a C slot wait for the last
//   download from that slot (the previous tile there);
// - a multiply waits for the uploads that filled its slots, up to its k
//   range where a piece goes up in parts (and upload_c of its tile, or the
//   previous multiply of its tile);
// - download_c waits for the last multiply of its tile;
// - with an epilogue, upload_leaf into a C slot's leaf slot waits for the
//   epilogue that last read it, and a tile's epilogue (after its last
//   multiply) for the tile's upload_leaf.
#pragma once

#include <cstdint>
#include <vector>

namespace egpu::planner {

// One leaf of a coefficient-wise expression: its element size, and whether
// it varies down the rows and across the columns (a broadcast vector varies
// in one of the two; its piece of a chunk or tile is that one extent).
struct LeafTraffic {
  std::int64_t elem_size = 8;
  bool varies_down_rows = true, varies_across_cols = true;
};

struct GemmProblem {
  std::int64_t m = 0, n = 0, k = 0;
  std::int64_t elem_size = 8;
  std::int64_t flops_per_element = 2;  // real flops per multiply-add: 2, or 8 for complex scalars
  bool staged = true;  // some operand is pageable: its pieces are packed into pinned memory on the host
  bool reads_c = false;  // beta != 0: C tiles go up before they are accumulated into
  // Which way the host operands' contiguous runs go: down A's columns
  // (column-major A) or along its rows (k); down B's columns (k) or along
  // its rows. A piece's DMA moves runs of its extent along that way, and
  // short runs go up more slowly, so some tile shapes suit one layout only.
  bool a_runs_along_m = true, b_runs_along_k = true;
  // The leaves of a coefficient-wise epilogue other than the product (C =
  // f(A * B, D, ...)): each C tile's piece of each goes up (upload_leaf,
  // into the C tile's slot, op.leaf indexing this list) before the tile's
  // last multiply, and takes device memory beside every C slot.
  std::vector<LeafTraffic> tile_leaves;
};

struct PipelineLimits {
  std::int64_t device_budget_bytes = 0;
  std::int64_t panel = 0;    // edge of the C tiles; 0 chooses
  std::int64_t k_panel = 0;  // depth of the k pieces; 0 chooses
  // In core: how many leading k pieces are taken across all C tiles (round
  // by round) before each tile is finished in turn; a negative value
  // chooses.
  std::int64_t k_rounds = -1;
};

// upload_leaf and evaluate belong to coefficient-wise plans: a piece of one
// leaf of the expression goes up; the expression runs on one chunk. A
// product's plan has upload_leaf for the leaves of its epilogue.
enum class OpKind : std::uint8_t { upload_a, upload_b, upload_c, multiply, download_c, upload_leaf, evaluate };

struct Op {
  OpKind kind = OpKind::multiply;
  // upload_a / upload_b: the slot written; upload_c, multiply, download_c
  // and a product's upload_leaf: the C slot.
  std::int32_t slot = -1;
  std::int32_t a_slot = -1, b_slot = -1;  // multiply: the slots read
  std::int32_t tile = -1;                 // upload_c, multiply, download_c: C tile, numbered in plan order
  std::int32_t leaf = -1;                 // upload_leaf: which leaf of the expression (or of tile_leaves)
  // The region: rows [i0, i0 + mi), columns [j0, j0 + nj), k [p0, p0 + kp);
  // an A piece uses i and p, a B piece p and j, a C tile i and j.
  std::int64_t i0 = 0, mi = 0, j0 = 0, nj = 0, p0 = 0, kp = 0;
  // upload_a / upload_b: the piece the slot holds spans k [piece_p0,
  // piece_p0 + piece_kp) (the op's own k range for a whole piece); an
  // upload of a part of it (kp < piece_kp) writes k [p0, p0 + kp) into its
  // place, the parts in order from piece_p0. A multiply reads k [p0, p0 +
  // kp) of the pieces in its slots, uploaded up to there.
  std::int64_t piece_p0 = 0, piece_kp = 0;
  bool first_k = false, last_k = false;  // multiply: first / last k step of its tile
};

struct PipelinePlan {
  GemmProblem problem;
  std::int64_t mb = 0, nb = 0, kb = 0;  // largest tile and piece sizes (edge ones are smaller)
  // > 0: the first kb of k goes as two pieces, k_lead deep and kb - k_lead,
  // so that the first multiplies wait for fewer bytes; the k pieces then
  // start at 0, k_lead, kb, 2 kb, ...
  std::int64_t k_lead = 0;
  std::int32_t slots_a = 0, slots_b = 0, slots_c = 0;
  std::int64_t device_bytes = 0;  // (slots_a*mb*kb + slots_b*kb*nb + slots_c*c_slot_elements) * elem_size
  std::int64_t h2d_bytes = 0;     // sum over the uploads
  std::int64_t d2h_bytes = 0;     // sum over the downloads
  bool in_core = false;           // every piece of A, B and C crosses PCIe once
  std::vector<Op> ops;            // in issue order

  std::int64_t tiles_m() const { return (problem.m + mb - 1) / mb; }
  std::int64_t tiles_n() const { return (problem.n + nb - 1) / nb; }
  std::int64_t tiles_k() const { return (problem.k + kb - 1) / kb + (k_lead > 0 ? 1 : 0); }
  // The k piece that starts at row p0 of B.
  std::int64_t piece_of(std::int64_t p0) const { return p0 / kb + (k_lead > 0 && p0 > 0 ? 1 : 0); }
};

// Elements of the product's scalar that one C slot of mb x nb takes, with
// the epilogue leaves' pieces beside it.
std::int64_t c_slot_elements(const GemmProblem& problem, std::int64_t mb, std::int64_t nb);

// m, n, k must be positive. Throws egpu::error when the budget cannot hold
// even the smallest pieces, or holds only pieces so small that the plan
// would take more than about four million multiplies.
PipelinePlan plan_pipeline(const GemmProblem& problem, const PipelineLimits& limits);

}  // namespace egpu::planner

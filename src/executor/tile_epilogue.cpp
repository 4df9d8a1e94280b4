#include "executor/tile_epilogue.hpp"

#include <string>
#include <utility>

#include "kernels/elementwise/elementwise_source.hpp"
#include "planner/elementwise_plan.hpp"

namespace egpu::executor {
namespace {

detail::ElementwiseProgram oriented(const detail::ElementwiseProgram& program, bool transposed) {
  detail::ElementwiseProgram p = program;
  if (transposed) kernels::transpose_program(p);
  return p;
}

}  // namespace

TileEpilogue::TileEpilogue(const detail::GemmDesc& desc, bool transposed, runtime::Context& ctx)
    : m_program(oriented(*desc.epilogue, transposed)),
      m_product(desc.epilogue_product),
      m_launcher(m_program, desc.scalar, ctx) {
  for (std::size_t l = 0; l < m_program.leaves.size(); ++l) {
    const bool product = static_cast<int>(l) == m_product;
    m_slots_of.push_back(product ? -1 : static_cast<int>(m_traffic.size()));
    if (!product) m_traffic.push_back(leaf_traffic(m_program.leaves[l], m_program.rows, m_program.cols));
  }
}

std::int64_t TileEpilogue::slot_bytes(std::int32_t slots_c, std::int64_t mb, std::int64_t nb) const {
  std::int64_t bytes = 0;
  for (const planner::LeafTraffic& t : m_traffic)
    bytes += planner::ElementwisePlan::slot_bytes(t.elem_size, planner::ElementwisePlan::piece_rows(t, mb),
                                                  planner::ElementwisePlan::piece_cols(t, nb));
  return bytes * slots_c;
}

void TileEpilogue::allocate(const planner::PipelinePlan& plan, const Streams& streams, Events& events) {
  m_up = streams.up;
  m_leaves.reserve(m_traffic.size());
  for (std::size_t l = 0; l < m_program.leaves.size(); ++l) {
    const int s = m_slots_of[l];
    if (s < 0) continue;
    m_leaves.emplace_back(m_program.leaves[l], m_traffic[static_cast<std::size_t>(s)], plan.slots_c, plan.mb,
                          plan.nb, streams.up, events, streams.compute.size());
  }
}

void TileEpilogue::upload(const Op& op, StagingRing& ring, int threads, Trace& trace) {
  const int span = trace.begin(
      [&] {
        return region(("upload epilogue leaf " + std::to_string(op.leaf)).c_str(), op.i0, op.mi, op.j0, op.nj);
      },
      "H2D", m_up);
  m_leaves[static_cast<std::size_t>(op.leaf)].upload(op, ring, m_up, threads);
  trace.end(span, m_up);
}

void TileEpilogue::apply(const Op& op, const detail::MatrixDesc& tile, std::size_t lane, cudaStream_t stream,
                         Trace& trace) {
  detail::ElementwiseProgram piece = m_program;
  piece.rows = op.mi;
  piece.cols = op.nj;
  for (std::size_t l = 0; l < piece.leaves.size(); ++l) {
    const int s = m_slots_of[l];
    piece.leaves[l].m = s < 0 ? tile : m_leaves[static_cast<std::size_t>(s)].acquire(op.slot, op, stream);
  }
  const int span = trace.begin([&] { return "epilogue " + region("C", op.i0, op.mi, op.j0, op.nj); },
                               "kernels " + std::to_string(lane), stream);
  m_launcher.launch(std::move(piece), tile, stream);
  trace.end(span, stream);
  for (auto& leaf : m_leaves) leaf.release(op.slot, lane, stream);
}

}  // namespace egpu::executor

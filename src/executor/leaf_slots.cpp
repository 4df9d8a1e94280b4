#include "executor/leaf_slots.hpp"

#include "planner/elementwise_plan.hpp"

namespace egpu::executor {

using detail::MatrixDesc;
using planner::ElementwisePlan;

planner::LeafTraffic leaf_traffic(const detail::EwLeaf& leaf, std::int64_t rows, std::int64_t cols) {
  return {detail::scalar_size(leaf.scalar), leaf.m.row_stride != 0 || rows == 1, leaf.m.col_stride != 0 || cols == 1};
}

LeafSlots::LeafSlots(const detail::EwLeaf& leaf, const planner::LeafTraffic& traffic, std::int32_t slots,
                     std::int64_t mb, std::int64_t nb, cudaStream_t stream, Events& events,
                     std::size_t compute_streams)
    : m_leaf(leaf),
      m_traffic(traffic),
      m_slot_bytes(ElementwisePlan::slot_bytes(traffic.elem_size, ElementwisePlan::piece_rows(traffic, mb),
                                               ElementwisePlan::piece_cols(traffic, nb))),
      m_buffer(static_cast<std::size_t>(m_slot_bytes * slots), stream),
      m_device(static_cast<std::size_t>(slots)),
      m_ready(events.make(static_cast<std::size_t>(slots))) {
  for (std::int32_t s = 0; s < slots; ++s) m_read.push_back(events.make(compute_streams));
  with_element_type(leaf.scalar, [&](auto t) {
    using U = decltype(t);
    m_pinned = is_pinned(host_matrix<U>(leaf.m));
  });
}

void LeafSlots::upload(const Op& op, StagingRing& ring, cudaStream_t stream, int threads) {
  const auto s = static_cast<std::size_t>(op.slot);
  for (cudaEvent_t e : m_read[s]) wait(stream, e);
  const MatrixDesc& m = m_leaf.m;
  const std::int64_t rows = ElementwisePlan::piece_rows(m_traffic, op.mi),
                     cols = ElementwisePlan::piece_cols(m_traffic, op.nj);
  MatrixDesc host = m;
  host.data = static_cast<char*>(m.data) +
              detail::scalar_size(m_leaf.scalar) * ((m_traffic.varies_down_rows ? op.i0 * m.row_stride : 0) +
                                                    (m_traffic.varies_across_cols ? op.j0 * m.col_stride : 0));
  host.rows = rows;
  host.cols = cols;
  void* slot = m_buffer.as<char>() + static_cast<std::int64_t>(s) * m_slot_bytes;
  Layout layout = Layout::col_major;
  with_element_type(m_leaf.scalar, [&](auto t) {
    using U = decltype(t);
    const HostMatrix<U> piece = host_matrix<U>(host);
    layout = natural_layout(piece);
    executor::upload(piece, m_pinned, dense(rows, cols, layout), false, static_cast<U*>(slot), ring, stream, threads);
  });
  // A broadcast side repeats the piece with a stride of 0.
  MatrixDesc& d = m_device[s];
  d.data = slot;
  d.row_stride = !m_traffic.varies_down_rows ? 0 : layout == Layout::col_major ? 1 : cols;
  d.col_stride = !m_traffic.varies_across_cols ? 0 : layout == Layout::col_major ? rows : 1;
  record(m_ready[s], stream);
}

MatrixDesc LeafSlots::acquire(std::int32_t slot, const Op& op, cudaStream_t stream) {
  wait(stream, m_ready[static_cast<std::size_t>(slot)]);
  MatrixDesc d = m_device[static_cast<std::size_t>(slot)];
  d.rows = op.mi;
  d.cols = op.nj;
  return d;
}

void LeafSlots::release(std::int32_t slot, std::size_t lane, cudaStream_t stream) {
  record(m_read[static_cast<std::size_t>(slot)][lane], stream);
}

}  // namespace egpu::executor

// Recorded calls on DeviceMatrix data, replayed as one CUDA graph.
//
//   egpu::Graph step = egpu::record([&] {
//     dY = egpu::gpu(dA * dX);
//     dX = egpu::gpu((dX.array() + 0.01 * dY.array().tanh()).matrix());
//   });
//   for (int i = 0; i < 1000; ++i) step.launch();   // queued; the host goes on
//
// record(f) runs f once, recording the egpu calls it makes instead of
// running them; launch() queues them all again on the calling thread's
// stream, as those calls would be queued, at a fraction of their host cost
// (one launch for the whole graph instead of one per call). The recorded
// calls read and write the same matrices, with the scalars they had when
// recorded, every time.
//
// Rules:
// - every operand and destination of a recorded call is DeviceMatrix data:
//   host memory, a reduction to a host scalar, to_host, copy_to and
//   egpu::synchronize are refused (egpu::error, and nothing is recorded);
// - a DeviceMatrix created or resized while recording gets its memory then
//   (its values come from the launches); one the recorded calls use must
//   outlive the graph's launches. Memory released while recording (a
//   destroyed matrix, the temporary of an aliased assignment) stays
//   allocated until the graph is destroyed;
// - a graph is launched from the thread that recorded it (checked).
// Without a usable GPU, record keeps f and launch() runs it again on CPU
// Eigen: write f so that running it again is what launch means.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <utility>

#include "egpu/device.hpp"

namespace egpu {

namespace detail {
struct RecordedGraph;
// The calling thread's recording: begun, ended into a graph, or abandoned
// after an exception (nothing kept).
void begin_recording();
RecordedGraph* end_recording();
void abandon_recording() noexcept;
void launch_graph(RecordedGraph& graph);
std::size_t graph_calls(const RecordedGraph& graph);
struct RecordedGraphDeleter {
  void operator()(RecordedGraph* graph) const noexcept;
};
}  // namespace detail

class Graph {
 public:
  Graph() = default;
  // Queues the recorded calls again on the calling thread's stream.
  void launch() {
    if (m_graph)
      detail::launch_graph(*m_graph);
    else if (m_calls)
      m_calls();
  }
  // How many operations were recorded: one per call, two for a call that
  // goes through a temporary (0 without a GPU, where none are).
  std::size_t calls() const { return m_graph ? detail::graph_calls(*m_graph) : 0; }

 private:
  template <class F>
  friend Graph record(F&& calls);
  std::unique_ptr<detail::RecordedGraph, detail::RecordedGraphDeleter> m_graph;
  std::function<void()> m_calls;  // no GPU: the calls, run again
};

template <class F>
Graph record(F&& calls) {
  Graph graph;
  if (!has_device()) {
    graph.m_calls = std::function<void()>(std::forward<F>(calls));
    return graph;
  }
  detail::begin_recording();
  try {
    calls();
  } catch (...) {
    detail::abandon_recording();
    throw;
  }
  graph.m_graph.reset(detail::end_recording());
  return graph;
}

}  // namespace egpu

// egpu::record and egpu::Graph: a thread's stream captured into a CUDA
// graph while it records (runtime/recording.hpp says what is refused).
#include <cuda_runtime.h>

#include <string>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "egpu/error.hpp"
#include "egpu/graph.hpp"
#include "runtime/context.hpp"
#include "runtime/cuda_check.hpp"
#include "runtime/recording.hpp"

namespace egpu::detail {

struct RecordedGraph {
  cudaGraphExec_t exec = nullptr;
  std::thread::id thread;
  std::size_t calls = 0;
  std::vector<void*> memory;  // DeviceMatrix memory released while recording
};

namespace {
// Ends the capture of the thread's stream; the graph captured, or null.
cudaGraph_t end_capture(cudaStream_t stream, cudaError_t& status) {
  cudaGraph_t graph = nullptr;
  status = cudaStreamEndCapture(stream, &graph);
  return graph;
}

void release(const std::vector<void*>& memory, cudaStream_t stream) {
  for (void* p : memory) (void)cudaFreeAsync(p, stream);
}
}  // namespace

void begin_recording() {
  runtime::refuse_while_recording("a recording inside a recording");
  runtime::Context& ctx = runtime::thread_context();
  (void)ctx.stream(1);  // created now: DeviceMatrix memory comes from it while recording
  // Relaxed: the recorded calls may load kernels and allocate memory outside
  // the recording; what they queue on stream(0) is what is recorded.
  runtime::cuda_check(cudaStreamBeginCapture(ctx.stream(0), cudaStreamCaptureModeRelaxed),
                      "egpu::record: cudaStreamBeginCapture");
  runtime::set_recording(true);
}

void abandon_recording() noexcept {
  runtime::Recording* rec = runtime::recording();
  if (rec == nullptr) return;
  const std::vector<void*> released = std::move(rec->released);
  runtime::set_recording(false);
  try {
    runtime::Context& ctx = runtime::thread_context();
    cudaError_t status = cudaSuccess;
    if (cudaGraph_t graph = end_capture(ctx.stream(0), status)) (void)cudaGraphDestroy(graph);
    (void)cudaGetLastError();  // an invalidated capture is not sticky
    release(released, ctx.stream(0));
  } catch (...) {
  }
}

RecordedGraph* end_recording() {
  runtime::Recording* rec = runtime::recording();
  if (rec == nullptr) throw egpu::error("egpu::record: the thread is not recording");
  auto graph = std::make_unique<RecordedGraph>();
  graph->thread = std::this_thread::get_id();
  graph->calls = rec->calls;
  graph->memory = std::move(rec->released);
  runtime::set_recording(false);
  runtime::Context& ctx = runtime::thread_context();
  cudaError_t status = cudaSuccess;
  cudaGraph_t captured = end_capture(ctx.stream(0), status);
  if (status != cudaSuccess) {
    (void)cudaGetLastError();
    if (captured != nullptr) (void)cudaGraphDestroy(captured);
    release(graph->memory, ctx.stream(0));
    runtime::throw_cuda(status, "egpu::record: ending the capture of the recorded calls");
  }
  status = cudaGraphInstantiate(&graph->exec, captured, 0);
  (void)cudaGraphDestroy(captured);
  if (status != cudaSuccess) {
    (void)cudaGetLastError();
    release(graph->memory, ctx.stream(0));
    runtime::throw_cuda(status, "egpu::record: cudaGraphInstantiate");
  }
  return graph.release();
}

void launch_graph(RecordedGraph& graph) {
  if (std::this_thread::get_id() != graph.thread)
    throw egpu::error("egpu::Graph::launch: a graph is launched from the thread that recorded it");
  runtime::refuse_while_recording("egpu::Graph::launch");
  runtime::Context& ctx = runtime::thread_context();
  runtime::cuda_check(cudaGraphLaunch(graph.exec, ctx.stream(0)), "egpu::Graph::launch: cudaGraphLaunch");
  ctx.queued().queued({"a recorded graph of %lld calls", static_cast<long long>(graph.calls)}, ctx.stream(0));
}

std::size_t graph_calls(const RecordedGraph& graph) { return graph.calls; }

void RecordedGraphDeleter::operator()(RecordedGraph* graph) const noexcept {
  if (graph == nullptr) return;
  // An executable graph still running is freed when it finishes.
  (void)cudaGraphExecDestroy(graph->exec);
  if (!graph->memory.empty()) {
    try {
      if (std::this_thread::get_id() == graph->thread) {
        release(graph->memory, runtime::thread_context().stream(0));  // after the launches queued there
      } else {
        (void)cudaDeviceSynchronize();
        for (void* p : graph->memory) (void)cudaFree(p);
      }
    } catch (...) {
    }
  }
  delete graph;
}

}  // namespace egpu::detail

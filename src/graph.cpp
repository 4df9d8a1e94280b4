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
  std::size_t operations = 0;
  std::vector<void*> memory;  // DeviceMatrix memory released while recording
};

namespace {
void release(const std::vector<void*>& memory, cudaStream_t stream) {
  for (void* p : memory) (void)cudaFreeAsync(p, stream);
}

// The calling thread's recording, ended: its stream no longer captured,
// the thread no longer recording.
struct EndedRecording {
  cudaGraph_t graph = nullptr;  // null where the capture failed
  cudaError_t status = cudaSuccess;
  std::size_t operations = 0;
  std::vector<void*> memory;  // DeviceMatrix memory released while recording
  cudaStream_t stream = nullptr;
};
EndedRecording end_capture(runtime::Recording& rec) {
  EndedRecording ended;
  ended.operations = rec.operations;
  ended.memory = std::move(rec.released);
  runtime::set_recording(false);  // rec is gone from here on
  ended.stream = runtime::thread_context().stream(0);
  ended.status = cudaStreamEndCapture(ended.stream, &ended.graph);
  if (ended.status != cudaSuccess) (void)cudaGetLastError();  // an invalidated capture is not sticky
  return ended;
}

// A recording that gives no graph: what it captured and the memory it kept go.
void discard(const EndedRecording& ended) {
  if (ended.graph != nullptr) (void)cudaGraphDestroy(ended.graph);
  release(ended.memory, ended.stream);
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
  try {
    discard(end_capture(*rec));
  } catch (...) {
  }
}

RecordedGraph* end_recording() {
  runtime::Recording* rec = runtime::recording();
  if (rec == nullptr) throw egpu::error("egpu::record: the thread is not recording");
  EndedRecording ended = end_capture(*rec);
  if (ended.status != cudaSuccess) {
    discard(ended);
    runtime::throw_cuda(ended.status, "egpu::record: ending the capture of the recorded calls");
  }
  auto graph = std::make_unique<RecordedGraph>();
  const cudaError_t status = cudaGraphInstantiate(&graph->exec, ended.graph, 0);
  if (status != cudaSuccess) {
    (void)cudaGetLastError();
    discard(ended);
    runtime::throw_cuda(status, "egpu::record: cudaGraphInstantiate");
  }
  (void)cudaGraphDestroy(ended.graph);  // the executable graph keeps what it needs
  graph->thread = std::this_thread::get_id();
  graph->operations = ended.operations;
  graph->memory = std::move(ended.memory);
  return graph.release();
}

void launch_graph(RecordedGraph& graph) {
  if (std::this_thread::get_id() != graph.thread)
    throw egpu::error("egpu::Graph::launch: a graph is launched from the thread that recorded it");
  runtime::refuse_while_recording("egpu::Graph::launch");
  runtime::Context& ctx = runtime::thread_context();
  runtime::cuda_check(cudaGraphLaunch(graph.exec, ctx.stream(0)), "egpu::Graph::launch: cudaGraphLaunch");
  ctx.queued().queued({"a recorded graph of %lld operations", static_cast<long long>(graph.operations)},
                      ctx.stream(0));
}

std::size_t graph_calls(const RecordedGraph& graph) { return graph.operations; }

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

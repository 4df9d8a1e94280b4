// EGPU_TRACE=file.json: a per-stream timeline of the pipeline's copies and
// kernels in Chrome's trace format (chrome://tracing, Perfetto), rewritten
// after every traced call with everything recorded so far. Each span names
// its call (args.call); a "host" lane holds each call's own time on the
// host, from the start of its trace to its end, and each span's lane has
// an "issue" twin: when the host queued the span's work, from its begin()
// to its end() (a pipeline whose host queues slower than the device works
// shows there).
#pragma once

#include <cuda_runtime.h>

#include <chrono>
#include <mutex>
#include <string>
#include <vector>

namespace egpu::executor {

class Trace {
 public:
  Trace();  // active when EGPU_TRACE names a file
  ~Trace();
  Trace(const Trace&) = delete;
  Trace& operator=(const Trace&) = delete;

  bool active() const { return m_active; }
  // Marks the start / end of an operation queued on `stream`; `lane` names
  // the timeline row. Returns an index for end(); -1 when inactive. Any
  // thread of the call may trace.
  // `name` is a callable returning the span's name, called only while
  // tracing, so that an untraced call builds no names.
  template <class Name>
  int begin(const Name& name, const std::string& lane, cudaStream_t stream) {
    return m_active ? begin_span(name(), lane, stream) : -1;
  }
  void end(int span, cudaStream_t stream);
  // After the call's streams are synchronized: resolves the times and
  // rewrites the file.
  void flush();

 private:
  struct Span {
    std::string name, lane;
    cudaEvent_t start = nullptr, stop = nullptr;
    std::chrono::steady_clock::time_point queued, issued;  // on the host: begin(), end()
  };
  int begin_span(std::string name, const std::string& lane, cudaStream_t stream);

  bool m_active = false;
  int m_call = 0;  // the process's traced calls, counted from 1
  std::chrono::steady_clock::time_point m_host_start;
  std::mutex m_mutex;  // the pipeline's writer thread traces its downloads beside the calling thread
  std::vector<Span> m_spans;
};

}  // namespace egpu::executor

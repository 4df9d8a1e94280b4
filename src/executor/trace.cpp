#include "executor/trace.hpp"

#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "runtime/cuda_check.hpp"

namespace egpu::executor {
namespace {

// Every traced call of the process, on one time axis: microseconds after
// an origin event recorded by the first traced call.
struct Timeline {
  std::mutex mutex;
  cudaEvent_t origin = nullptr;
  std::string events;  // JSON objects, comma-separated
};

Timeline& timeline() {
  static Timeline* t = new Timeline;
  return *t;
}

const char* trace_file() {
  const char* path = std::getenv("EGPU_TRACE");
  return path != nullptr && *path != '\0' ? path : nullptr;
}

std::string escaped(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

Trace::Trace() : m_active(trace_file() != nullptr) {
  if (!m_active) return;
  Timeline& t = timeline();
  std::lock_guard<std::mutex> lock(t.mutex);
  if (t.origin == nullptr) {
    runtime::cuda_check(cudaEventCreate(&t.origin), "cudaEventCreate");
    runtime::cuda_check(cudaEventRecord(t.origin, cudaStreamPerThread), "cudaEventRecord");
    runtime::cuda_check(cudaEventSynchronize(t.origin), "cudaEventSynchronize");
  }
}

Trace::~Trace() {
  for (Span& s : m_spans) {
    if (s.start != nullptr) (void)cudaEventDestroy(s.start);
    if (s.stop != nullptr) (void)cudaEventDestroy(s.stop);
  }
}

int Trace::begin(const std::string& name, const std::string& lane, cudaStream_t stream) {
  if (!m_active) return -1;
  Span s{name, lane};
  runtime::cuda_check(cudaEventCreate(&s.start), "cudaEventCreate");
  runtime::cuda_check(cudaEventCreate(&s.stop), "cudaEventCreate");
  runtime::cuda_check(cudaEventRecord(s.start, stream), "cudaEventRecord");
  m_spans.push_back(s);
  return static_cast<int>(m_spans.size()) - 1;
}

void Trace::end(int span, cudaStream_t stream) {
  if (span < 0) return;
  runtime::cuda_check(cudaEventRecord(m_spans[static_cast<std::size_t>(span)].stop, stream), "cudaEventRecord");
}

void Trace::flush() {
  if (!m_active) return;
  Timeline& t = timeline();
  std::lock_guard<std::mutex> lock(t.mutex);
  for (const Span& s : m_spans) {
    float start_ms = 0, stop_ms = 0;
    if (cudaEventElapsedTime(&start_ms, t.origin, s.start) != cudaSuccess ||
        cudaEventElapsedTime(&stop_ms, t.origin, s.stop) != cudaSuccess) {
      (void)cudaGetLastError();
      continue;
    }
    char line[512];
    std::snprintf(line, sizeof line,
                  "{\"name\":\"%s\",\"ph\":\"X\",\"pid\":1,\"tid\":\"%s\",\"ts\":%.3f,\"dur\":%.3f}",
                  escaped(s.name).c_str(), escaped(s.lane).c_str(), start_ms * 1000.0,
                  (stop_ms - start_ms) * 1000.0);
    if (!t.events.empty()) t.events += ",\n";
    t.events += line;
  }
  if (std::FILE* f = std::fopen(trace_file(), "w")) {
    std::fprintf(f, "{\"traceEvents\":[\n%s\n],\"displayTimeUnit\":\"ms\"}\n", t.events.c_str());
    std::fclose(f);
  }
}

}  // namespace egpu::executor

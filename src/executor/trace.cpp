#include "executor/trace.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <utility>

#include "runtime/cuda_check.hpp"

namespace egpu::executor {
namespace {

// Every traced call of the process, on one time axis: microseconds after
// an origin event recorded by the first traced call.
struct Timeline {
  std::mutex mutex;
  cudaEvent_t origin = nullptr;
  // The host's clock when the origin event was seen done: host spans (a
  // call's own time) go on the same axis, to within a few microseconds.
  std::chrono::steady_clock::time_point origin_host;
  int calls = 0;
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
    t.origin_host = std::chrono::steady_clock::now();
  }
  m_call = ++t.calls;
  m_host_start = std::chrono::steady_clock::now();
}

Trace::~Trace() {
  for (Span& s : m_spans) {
    if (s.start != nullptr) (void)cudaEventDestroy(s.start);
    if (s.stop != nullptr) (void)cudaEventDestroy(s.stop);
  }
}

int Trace::begin_span(std::string name, const std::string& lane, cudaStream_t stream) {
  Span s{std::move(name), lane};
  s.queued = std::chrono::steady_clock::now();
  runtime::cuda_check(cudaEventCreate(&s.start), "cudaEventCreate");
  runtime::cuda_check(cudaEventCreate(&s.stop), "cudaEventCreate");
  runtime::cuda_check(cudaEventRecord(s.start, stream), "cudaEventRecord");
  std::lock_guard<std::mutex> lock(m_mutex);
  m_spans.push_back(s);
  return static_cast<int>(m_spans.size()) - 1;
}

void Trace::end(int span, cudaStream_t stream) {
  if (span < 0) return;
  cudaEvent_t stop = nullptr;
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    stop = m_spans[static_cast<std::size_t>(span)].stop;
  }
  runtime::cuda_check(cudaEventRecord(stop, stream), "cudaEventRecord");
  const auto issued = std::chrono::steady_clock::now();
  std::lock_guard<std::mutex> lock(m_mutex);
  m_spans[static_cast<std::size_t>(span)].issued = issued;
}

void Trace::flush() {
  if (!m_active) return;
  Timeline& t = timeline();
  std::lock_guard<std::mutex> lock(t.mutex);
  std::lock_guard<std::mutex> spans(m_mutex);
  auto add = [&](const std::string& name, const std::string& lane, double start_us, double dur_us) {
    char line[512];
    std::snprintf(line, sizeof line,
                  "{\"name\":\"%s\",\"ph\":\"X\",\"pid\":1,\"tid\":\"%s\",\"ts\":%.3f,\"dur\":%.3f,"
                  "\"args\":{\"call\":%d}}",
                  escaped(name).c_str(), escaped(lane).c_str(), start_us, dur_us, m_call);
    if (!t.events.empty()) t.events += ",\n";
    t.events += line;
  };
  // The call on the host, from its trace's start to this flush (after its
  // streams are synchronized).
  using us = std::chrono::duration<double, std::micro>;
  const double host_start = us(m_host_start - t.origin_host).count();
  add("call " + std::to_string(m_call), "host", host_start,
      us(std::chrono::steady_clock::now() - m_host_start).count());
  for (const Span& s : m_spans) {
    if (s.issued > s.queued)
      add(s.name, "issue " + s.lane, us(s.queued - t.origin_host).count(), us(s.issued - s.queued).count());
    float start_ms = 0, stop_ms = 0;
    if (cudaEventElapsedTime(&start_ms, t.origin, s.start) != cudaSuccess ||
        cudaEventElapsedTime(&stop_ms, t.origin, s.stop) != cudaSuccess) {
      (void)cudaGetLastError();
      continue;
    }
    add(s.name, s.lane, start_ms * 1000.0, (stop_ms - start_ms) * 1000.0);
  }
  if (std::FILE* f = std::fopen(trace_file(), "w")) {
    std::fprintf(f, "{\"traceEvents\":[\n%s\n],\"displayTimeUnit\":\"ms\"}\n", t.events.c_str());
    std::fclose(f);
  }
}

}  // namespace egpu::executor

#include "executor/pipeline_parts.hpp"

#include <atomic>

#include "egpu/detail/testing.hpp"
#include "runtime/device.hpp"

namespace egpu::detail {
namespace {
thread_local int g_fail_after = -1;
std::atomic<std::size_t> g_inline_download_calls{0};
}  // namespace
void inject_failure_after(int operations) { g_fail_after = operations; }
std::size_t calls_queueing_downloads_inline() { return g_inline_download_calls.load(); }
}  // namespace egpu::detail

namespace egpu::executor {

void count_inline_downloads() { ++detail::g_inline_download_calls; }

void maybe_fail() {
  int& left = detail::g_fail_after;
  if (left < 0) return;
  if (left-- == 0) throw egpu::error("injected failure in the pipeline");
}

FailureScope::~FailureScope() { detail::inject_failure_after(-1); }

namespace {
// The calling thread's events between calls; destroyed with the thread.
struct EventPool {
  std::vector<cudaEvent_t> free;
  ~EventPool() {
    for (cudaEvent_t e : free) (void)cudaEventDestroy(e);
  }
};
EventPool& event_pool() {
  thread_local EventPool pool;
  return pool;
}
}  // namespace

cudaEvent_t Events::make() {
  std::vector<cudaEvent_t>& pool = event_pool().free;
  cudaEvent_t e = nullptr;
  if (!pool.empty()) {
    e = pool.back();
    pool.pop_back();
  } else {
    runtime::cuda_check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate");
  }
  m_events.push_back(e);
  return e;
}

Events::~Events() {
  std::vector<cudaEvent_t>& pool = event_pool().free;
  pool.insert(pool.end(), m_events.begin(), m_events.end());
}

void wait(cudaStream_t stream, cudaEvent_t event) {
  runtime::cuda_check(cudaStreamWaitEvent(stream, event, 0), "cudaStreamWaitEvent");
}
void record(cudaEvent_t event, cudaStream_t stream) {
  runtime::cuda_check(cudaEventRecord(event, stream), "cudaEventRecord");
}

int stream_count(const Options& options) {
  if (options.streams > 0) return options.streams;
  // Uploads and downloads overlap only on separate copy engines.
  return runtime::selected_device().copy_engines >= 2 ? 4 : 2;
}

}  // namespace egpu::executor

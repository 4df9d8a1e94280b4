#include "executor/pipeline_parts.hpp"

#include "egpu/detail/testing.hpp"
#include "runtime/device.hpp"

namespace egpu::detail {
namespace {
thread_local int g_fail_after = -1;
}
void inject_failure_after(int operations) { g_fail_after = operations; }
}  // namespace egpu::detail

namespace egpu::executor {

void maybe_fail() {
  int& left = detail::g_fail_after;
  if (left < 0) return;
  if (left-- == 0) throw egpu::error("injected failure in the pipeline");
}

FailureScope::~FailureScope() { detail::inject_failure_after(-1); }

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

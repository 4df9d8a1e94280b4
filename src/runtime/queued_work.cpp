#include "runtime/queued_work.hpp"

#include <cstdio>

#include "egpu/error.hpp"
#include "runtime/cuda_check.hpp"

namespace egpu::runtime {
namespace {
// A queue never grows past this many operations not known done: beyond it
// the oldest are checked (they are long done in any stream that is not
// hopelessly behind).
constexpr std::size_t kRemembered = 256;
constexpr std::size_t kCheckAfter = 32;
}  // namespace

std::string OperationName::text() const {
  char buffer[128];
  std::snprintf(buffer, sizeof buffer, format, x, y, z);
  return buffer;
}

QueuedWork::~QueuedWork() {
  for (Entry& e : m_entries) (void)cudaEventDestroy(e.done);
  for (cudaEvent_t e : m_spare) (void)cudaEventDestroy(e);
}

void QueuedWork::forget_finished() {
  // Checked in batches: a query per call would cost every call its time.
  if (++m_since_check < kCheckAfter && m_entries.size() < kRemembered) return;
  m_since_check = 0;
  auto forget_front = [this] {
    m_spare.push_back(m_entries.front().done);
    m_entries.pop_front();
  };
  // One stream runs its operations in order: when the newest is done, all are.
  if (!m_entries.empty() && cudaEventQuery(m_entries.back().done) == cudaSuccess) {
    while (!m_entries.empty()) forget_front();
    return;
  }
  while (!m_entries.empty() && (m_entries.size() >= kRemembered || cudaEventQuery(m_entries.front().done) == cudaSuccess))
    forget_front();
  (void)cudaGetLastError();  // a query of an unfinished event is not an error
}

void QueuedWork::queued(const OperationName& what, cudaStream_t stream) {
  forget_finished();
  if (m_fail_next) {
    m_fail_next = false;
    m_injected = std::make_shared<Injected>();
    m_injected->what = what.text();
    // The host function runs once the operation has: it marks the failure.
    auto* keep = new std::shared_ptr<Injected>(m_injected);
    const cudaError_t status = cudaLaunchHostFunc(
        stream,
        [](void* data) {
          auto* injected = static_cast<std::shared_ptr<Injected>*>(data);
          (*injected)->fired = true;
          delete injected;
        },
        keep);
    if (status != cudaSuccess) {
      delete keep;
      throw_cuda(status, "cudaLaunchHostFunc");
    }
  }
  cudaEvent_t done = nullptr;
  if (!m_spare.empty()) {
    done = m_spare.back();
    m_spare.pop_back();
  } else {
    cuda_check(cudaEventCreateWithFlags(&done, cudaEventDisableTiming), "cudaEventCreate");
  }
  m_entries.push_back({what, done});
  cuda_check(cudaEventRecord(done, stream), "cudaEventRecord");
}

void QueuedWork::wait(cudaStream_t stream, const OperationName& during) {
  const cudaError_t status = cudaStreamSynchronize(stream);
  if (status != cudaSuccess) {
    std::string culprit = "an earlier operation";
    for (const Entry& e : m_entries)
      if (cudaEventQuery(e.done) != cudaSuccess) {
        culprit = e.what.text();
        break;
      }
    throw egpu::error(during.text() + ": the queued operation '" + culprit + "' failed: " +
                      cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")");
  }
  for (Entry& e : m_entries) m_spare.push_back(e.done);
  m_entries.clear();
  if (m_injected && m_injected->fired) {
    const std::string what = m_injected->what;
    m_injected.reset();
    throw egpu::error(during.text() + ": the queued operation '" + what + "' failed: injected failure");
  }
}

}  // namespace egpu::runtime

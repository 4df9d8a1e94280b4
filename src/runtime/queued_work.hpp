// The operations a thread has queued on its stream without waiting for
// them (work on DeviceMatrix data), by name, until they are known to be
// done: a wait that fails names the first of them not done, which is where
// the failure happened or before. Tests inject a failure into the next
// queued operation; it surfaces at the next wait, as a CUDA failure would.
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <deque>
#include <memory>
#include <string>
#include <vector>

namespace egpu::runtime {

// What an operation is, for errors: a printf format with up to three sizes,
// formatted only when an error names it (a queued call costs no formatting).
struct OperationName {
  const char* format = "";  // a string literal
  long long x = 0, y = 0, z = 0;
  std::string text() const;
};

class QueuedWork {
 public:
  QueuedWork() = default;
  ~QueuedWork();
  QueuedWork(const QueuedWork&) = delete;
  QueuedWork& operator=(const QueuedWork&) = delete;

  // After `what` is queued on `stream`.
  void queued(const OperationName& what, cudaStream_t stream);
  // Waits for everything queued on `stream`. Throws egpu::error naming the
  // operation that failed (`during`: what the wait was for).
  void wait(cudaStream_t stream, const OperationName& during);
  // The next queued operation fails when it runs (tests).
  void fail_next() { m_fail_next = true; }

 private:
  struct Entry {
    OperationName what;
    cudaEvent_t done = nullptr;
  };
  void forget_finished();
  std::deque<Entry> m_entries;
  std::size_t m_since_check = 0;  // calls since forget_finished last queried
  std::vector<cudaEvent_t> m_spare;
  bool m_fail_next = false;
  // Set by the host function queued behind an operation that is made to fail.
  struct Injected {
    std::atomic<bool> fired{false};
    std::string what;
  };
  std::shared_ptr<Injected> m_injected;
};

}  // namespace egpu::runtime

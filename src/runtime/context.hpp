// One context per host thread: the device made current, the thread's own
// non-blocking stream (never the legacy default stream, so products from
// several host threads run concurrently; DeviceMatrix work is queued on
// stream(0)), its cuBLAS handle, its pinned staging slots and the names of
// its queued operations.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <optional>
#include <vector>

#include "runtime/pinned_pool.hpp"
#include "runtime/queued_work.hpp"

namespace egpu::runtime {

// A pinned slot for staging copies, with the event that says when the last
// copy from or into it has finished.
struct StagingSlot {
  PinnedBlock block;
  cudaEvent_t done = nullptr;
};

class Context {
 public:
  // Transfers go in chunks of up to a slot (executor/transfer.cpp); the
  // ring keeps several in flight while the host packs or unpacks the next.
  static constexpr std::size_t kSlotBytes = std::size_t(8) << 20;
  static constexpr int kRingSlots = 8;

  explicit Context(int device);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  int device() const { return m_device; }
  // The context's i-th stream, created on first use (non-blocking).
  cudaStream_t stream(int i = 0);
  cublasHandle_t cublas();  // created on first use
  // Two rings of pinned slots: one for uploads, one for downloads, so that
  // a thread writing results back never waits for the uploads' slots.
  std::vector<StagingSlot>& up_ring() { return ring(m_up); }
  std::vector<StagingSlot>& down_ring() { return ring(m_down); }
  // What the thread has queued on stream(0) without waiting (DeviceMatrix work).
  QueuedWork& queued() { return m_queued; }
  // The budget device_budget last measured on this thread (0: none yet).
  std::size_t measured_budget() const { return m_measured_budget; }
  void set_measured_budget(std::size_t bytes) { m_measured_budget = bytes; }

 private:
  std::vector<StagingSlot>& ring(std::vector<StagingSlot>& slots);
  int m_device;
  std::vector<cudaStream_t> m_streams;
  cublasHandle_t m_cublas = nullptr;
  std::vector<StagingSlot> m_up, m_down;
  QueuedWork m_queued;
  std::size_t m_measured_budget = 0;
};

// The calling thread's context on the selected device (made current).
// Throws egpu::error when there is no usable device.
Context& thread_context();

// Device memory one call may use: the limit when given, else most of what
// the device has free now (measured: cudaMemGetInfo, about 8 us a call on
// an H200; the thread's context keeps the figure). `pool_idle`: the pool's
// idle bytes where the caller has just read them (pool_idle_bytes), so
// that they are not read again.
std::size_t device_budget(std::size_t limit, std::optional<std::size_t> pool_idle = std::nullopt);

// Device memory the stream-ordered pool holds that no buffer uses: buffers
// that fit there take nothing new from the device.
std::size_t pool_idle_bytes();

// How often device_budget has measured (egpu::detail::budget_measurements).
std::size_t budget_measurements();

// Throws egpu::error naming `what` when a cuBLAS call failed.
void cublas_check(cublasStatus_t status, const char* what);

}  // namespace egpu::runtime

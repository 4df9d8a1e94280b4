// One context per host thread: the device made current, the thread's own
// non-blocking stream (never the legacy default stream, so products from
// several host threads run concurrently), its cuBLAS handle and its
// pinned staging slots.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <array>
#include <cstddef>

#include "runtime/pinned_pool.hpp"

namespace egpu::runtime {

// A pinned slot for staging copies, with the event that says when the last
// copy from or into it has finished.
struct StagingSlot {
  PinnedBlock block;
  cudaEvent_t done = nullptr;
};

class Context {
 public:
  static constexpr std::size_t kSlotBytes = std::size_t(32) << 20;

  explicit Context(int device);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  int device() const { return m_device; }
  cudaStream_t stream() const { return m_stream; }
  cublasHandle_t cublas();  // created on first use, bound to stream()
  std::array<StagingSlot, 2>& staging();  // allocated on first use

 private:
  int m_device;
  cudaStream_t m_stream = nullptr;
  cublasHandle_t m_cublas = nullptr;
  std::array<StagingSlot, 2> m_slots;
  bool m_slots_ready = false;
};

// The calling thread's context on the selected device (made current).
// Throws egpu::error when there is no usable device.
Context& thread_context();

// Device memory one call may use: the limit when given, else most of what
// the device has free now.
std::size_t device_budget(std::size_t limit);

// Throws egpu::error naming `what` when a cuBLAS call failed.
void cublas_check(cublasStatus_t status, const char* what);

}  // namespace egpu::runtime

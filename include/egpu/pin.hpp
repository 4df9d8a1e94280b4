// egpu::pin(matrix): page-locks a matrix's memory for as long as the guard
// lives, so products that read or write it copy straight between it and the
// device, without staging through egpu's own pinned buffers.
//
//   Eigen::MatrixXd A = ...;
//   auto guard = egpu::pin(A);          // A must not be resized while pinned
//   C.noalias() = egpu::gpu(A * B);     // A goes up by DMA from its own memory
//
// Memory page-locked by other means (cudaHostAlloc, cudaHostRegister) is
// detected and used the same way.
#pragma once

#include <Eigen/Dense>

#include <cstddef>
#include <utility>

namespace egpu {

namespace detail {
// Registers / unregisters [data, data + bytes) with the CUDA driver; both
// throw egpu::error on failure. Without a usable device they do nothing.
void pin_memory(void* data, std::size_t bytes);
void unpin_memory(void* data) noexcept;
}  // namespace detail

class PinGuard {
 public:
  PinGuard() = default;
  PinGuard(void* data, std::size_t bytes) : m_data(data) {
    if (data != nullptr && bytes > 0) detail::pin_memory(data, bytes);
    else m_data = nullptr;
  }
  ~PinGuard() { release(); }
  PinGuard(PinGuard&& other) noexcept : m_data(std::exchange(other.m_data, nullptr)) {}
  PinGuard& operator=(PinGuard&& other) noexcept {
    if (this != &other) {
      release();
      m_data = std::exchange(other.m_data, nullptr);
    }
    return *this;
  }
  PinGuard(const PinGuard&) = delete;
  PinGuard& operator=(const PinGuard&) = delete;

 private:
  void release() noexcept {
    if (m_data != nullptr) detail::unpin_memory(m_data);
    m_data = nullptr;
  }
  void* m_data = nullptr;
};

// Pins a Matrix or Array (its whole storage) until the guard is destroyed.
template <class Derived>
PinGuard pin(Eigen::PlainObjectBase<Derived>& matrix) {
  return PinGuard(static_cast<void*>(matrix.data()),
                  static_cast<std::size_t>(matrix.size()) * sizeof(typename Derived::Scalar));
}

}  // namespace egpu

// Device memory from the device's stream-ordered pool (cudaMallocAsync):
// freed blocks stay in the pool for the next call instead of going back
// to the driver, which is what makes repeated products cheap to set up.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

namespace egpu::runtime {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(std::size_t bytes, cudaStream_t stream);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* get() const { return m_ptr; }
  template <class T>
  T* as() const { return static_cast<T*>(m_ptr); }
  std::size_t bytes() const { return m_bytes; }

 private:
  void release() noexcept;
  void* m_ptr = nullptr;
  std::size_t m_bytes = 0;
  cudaStream_t m_stream = nullptr;
};

}  // namespace egpu::runtime

#include "runtime/device_buffer.hpp"

#include <string>
#include <utility>

#include "runtime/cuda_check.hpp"

namespace egpu::runtime {

DeviceBuffer::DeviceBuffer(std::size_t bytes, cudaStream_t stream) : m_bytes(bytes), m_stream(stream) {
  if (bytes == 0) return;
  const cudaError_t status = cudaMallocAsync(&m_ptr, bytes, stream);
  if (status != cudaSuccess) {
    (void)cudaGetLastError();  // an allocation failure is not sticky; clear it
    m_ptr = nullptr;
    throw_cuda(status, ("cudaMallocAsync of " + std::to_string(bytes) + " bytes").c_str());
  }
}

DeviceBuffer::~DeviceBuffer() { release(); }

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : m_ptr(std::exchange(other.m_ptr, nullptr)), m_bytes(other.m_bytes), m_stream(other.m_stream) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    release();
    m_ptr = std::exchange(other.m_ptr, nullptr);
    m_bytes = other.m_bytes;
    m_stream = other.m_stream;
  }
  return *this;
}

void DeviceBuffer::release() noexcept {
  // Stream-ordered: the block returns to the pool once the work queued
  // before it on the stream is done. A failure here cannot be reported
  // from a destructor; the next checked call on the stream reports it.
  if (m_ptr != nullptr) (void)cudaFreeAsync(m_ptr, m_stream);
  m_ptr = nullptr;
}

}  // namespace egpu::runtime

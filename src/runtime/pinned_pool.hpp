// Page-locked host memory, pooled across calls and threads: cudaHostAlloc
// costs milliseconds, so blocks are kept and handed out again.
#pragma once

#include <cstddef>

namespace egpu::runtime {

class PinnedBlock {
 public:
  PinnedBlock() = default;
  ~PinnedBlock();
  PinnedBlock(PinnedBlock&& other) noexcept;
  PinnedBlock& operator=(PinnedBlock&& other) noexcept;
  PinnedBlock(const PinnedBlock&) = delete;
  PinnedBlock& operator=(const PinnedBlock&) = delete;

  void* get() const { return m_ptr; }
  std::size_t bytes() const { return m_bytes; }

 private:
  friend PinnedBlock acquire_pinned(std::size_t bytes);
  PinnedBlock(void* ptr, std::size_t bytes) : m_ptr(ptr), m_bytes(bytes) {}
  void* m_ptr = nullptr;
  std::size_t m_bytes = 0;
};

// A block of at least `bytes`, from the pool or newly allocated.
PinnedBlock acquire_pinned(std::size_t bytes);

// Bytes of pinned memory the pool holds (in use or free).
std::size_t pinned_pool_bytes();

}  // namespace egpu::runtime

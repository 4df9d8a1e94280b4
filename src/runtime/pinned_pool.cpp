#include "runtime/pinned_pool.hpp"

#include <cuda_runtime.h>

#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "runtime/cuda_check.hpp"

namespace egpu::runtime {
namespace {

struct Pool {
  std::mutex mutex;
  std::multimap<std::size_t, void*> free_blocks;  // by size
  std::size_t held_bytes = 0;
};

// Never destroyed: blocks may be returned by thread-local owners during
// process exit, after function-local statics would have been destroyed.
Pool& pool() {
  static Pool* p = new Pool;
  return *p;
}

}  // namespace

PinnedBlock acquire_pinned(std::size_t bytes) {
  Pool& p = pool();
  {
    std::lock_guard<std::mutex> lock(p.mutex);
    auto it = p.free_blocks.lower_bound(bytes);
    if (it != p.free_blocks.end() && it->first <= 2 * bytes) {
      PinnedBlock block(it->second, it->first);
      p.free_blocks.erase(it);
      return block;
    }
  }
  void* ptr = nullptr;
  cuda_check(cudaHostAlloc(&ptr, bytes, cudaHostAllocPortable),
             ("cudaHostAlloc of " + std::to_string(bytes) + " bytes").c_str());
  std::lock_guard<std::mutex> lock(p.mutex);
  p.held_bytes += bytes;
  return PinnedBlock(ptr, bytes);
}

std::size_t pinned_pool_bytes() {
  Pool& p = pool();
  std::lock_guard<std::mutex> lock(p.mutex);
  return p.held_bytes;
}

PinnedBlock::~PinnedBlock() {
  if (m_ptr == nullptr) return;
  Pool& p = pool();
  std::lock_guard<std::mutex> lock(p.mutex);
  p.free_blocks.emplace(m_bytes, m_ptr);
}

PinnedBlock::PinnedBlock(PinnedBlock&& other) noexcept
    : m_ptr(std::exchange(other.m_ptr, nullptr)), m_bytes(other.m_bytes) {}

PinnedBlock& PinnedBlock::operator=(PinnedBlock&& other) noexcept {
  if (this != &other) {
    PinnedBlock old(std::move(*this));
    m_ptr = std::exchange(other.m_ptr, nullptr);
    m_bytes = other.m_bytes;
  }
  return *this;
}

}  // namespace egpu::runtime

// cp.async (sm_80+) global -> shared copies with zero fill, and the
// commit/wait of their groups. A copy of `bytes` < N reads only `bytes`
// bytes of the source and fills the rest of the N-byte destination with
// zeros; bytes == 0 reads nothing.
#pragma once

#include <cstdint>

namespace egpu::kernels::block {

__device__ __forceinline__ std::uint32_t smem_addr(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

// N = 4, 8 or 16 bytes; dst and src aligned to N.
template <int N>
__device__ __forceinline__ void cp_async(void* dst, const void* src, int bytes) {
  static_assert(N == 4 || N == 8 || N == 16, "cp.async size");
  if constexpr (N == 16)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)),
                 "l"(src), "r"(bytes)
                 : "memory");
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(smem_addr(dst)),
                 "l"(src), "n"(N), "r"(bytes)
                 : "memory");
}

__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}

// Waits until at most N committed groups of this thread are in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

}  // namespace egpu::kernels::block

// The figures egpu's tests read to check that calls return what they take.
#include <cuda_runtime.h>

#include <cstdint>

#include "egpu/detail/testing.hpp"
#include "runtime/context.hpp"
#include "runtime/cuda_check.hpp"
#include "runtime/pinned_pool.hpp"

namespace egpu::detail {

std::size_t device_bytes_in_use() {
  // Frees are stream-ordered: let them land before reading the count.
  runtime::cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  cudaMemPool_t pool = nullptr;
  runtime::cuda_check(cudaDeviceGetMemPool(&pool, runtime::thread_context().device()), "cudaDeviceGetMemPool");
  std::uint64_t used = 0;
  runtime::cuda_check(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used),
                      "cudaMemPoolGetAttribute(used)");
  return static_cast<std::size_t>(used);
}

std::size_t pinned_bytes_held() { return runtime::pinned_pool_bytes(); }

std::size_t budget_measurements() { return runtime::budget_measurements(); }

}  // namespace egpu::detail

// egpu::pin's registration of user memory with the CUDA driver.
#include <cuda_runtime.h>

#include <string>

#include "egpu/pin.hpp"
#include "runtime/cuda_check.hpp"
#include "runtime/device.hpp"
#include "runtime/pinning.hpp"

namespace egpu::detail {

void pin_memory(void* data, std::size_t bytes) {
  if (!runtime::selected_device().usable) return;
  runtime::cuda_check(cudaHostRegister(data, bytes, cudaHostRegisterPortable),
                      ("cudaHostRegister of " + std::to_string(bytes) + " bytes").c_str());
}

void unpin_memory(void* data) noexcept {
  if (!runtime::selected_device().usable) return;
  if (cudaHostUnregister(data) != cudaSuccess) (void)cudaGetLastError();
}

}  // namespace egpu::detail

namespace egpu::runtime {

bool is_pinned_range(const void* first, const void* last) {
  for (const void* p : {first, last}) {
    cudaPointerAttributes attributes{};
    if (cudaPointerGetAttributes(&attributes, p) != cudaSuccess) {
      (void)cudaGetLastError();  // not an error: the pointer is unknown to CUDA
      return false;
    }
    if (attributes.type != cudaMemoryTypeHost) return false;
  }
  return true;
}

}  // namespace egpu::runtime

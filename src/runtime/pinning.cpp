// egpu::pin's registration of user memory with the CUDA driver.
#include <cuda_runtime.h>

#include <string>

#include "egpu/pin.hpp"
#include "runtime/cuda_check.hpp"
#include "runtime/device.hpp"

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

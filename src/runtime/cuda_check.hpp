// Turns CUDA runtime and launch failures into egpu::error naming the
// operation. Every CUDA call in the library goes through one of these.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "egpu/error.hpp"

namespace egpu::runtime {

[[noreturn]] inline void throw_cuda(cudaError_t status, const char* what) {
  throw egpu::error(std::string(what) + " failed: " + cudaGetErrorName(status) + " (" +
                    cudaGetErrorString(status) + ")");
}

inline void cuda_check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw_cuda(status, what);
}

// After a kernel launch: the launch itself (bad configuration, no kernel
// image for this device) reports through cudaGetLastError.
inline void launch_check(const char* kernel_name) { cuda_check(cudaGetLastError(), kernel_name); }

}  // namespace egpu::runtime

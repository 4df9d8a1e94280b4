// Attributes of the current CUDA device, read where a launch needs them
// (cudaDeviceGetAttribute answers from the runtime's cache, so per call).
#pragma once

#include <cuda_runtime.h>

#include "runtime/cuda_check.hpp"

namespace egpu::runtime {

inline int current_device_attribute(cudaDeviceAttr attr, const char* what) {
  int device = 0, value = 0;
  cuda_check(cudaGetDevice(&device), "cudaGetDevice");
  cuda_check(cudaDeviceGetAttribute(&value, attr, device), what);
  return value;
}

inline int current_multiprocessors() {
  return current_device_attribute(cudaDevAttrMultiProcessorCount, "cudaDeviceGetAttribute(multiprocessors)");
}

// The major version of the compute capability: what the launches test
// (sm_90 and later).
inline int current_compute_major() {
  return current_device_attribute(cudaDevAttrComputeCapabilityMajor, "cudaDeviceGetAttribute(compute capability)");
}

}  // namespace egpu::runtime

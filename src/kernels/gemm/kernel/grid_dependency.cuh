// Programmatic dependent launch (compute capability 9.0 and later): a kernel
// launched with cudaLaunchAttributeProgrammaticStreamSerialization may start
// before the kernel ahead of it in the stream has finished. It must call
// grid_dependency_wait before it reads what that kernel writes, or writes
// what that kernel reads; the kernel ahead lets it start early with
// launch_dependents. On older devices, or without the attribute, both are
// no-ops (the stream's order holds anyway).
#pragma once

namespace egpu::kernels::kernel {

__device__ __forceinline__ void grid_dependency_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__device__ __forceinline__ void launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

}  // namespace egpu::kernels::kernel

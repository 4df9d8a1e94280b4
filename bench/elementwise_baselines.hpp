// Hand-written CUDA kernels of egpu-bench elementwise's expressions (what a
// careful user would write with nvcc, one grid-stride loop each), the same
// expressions through CUB's DeviceTransform (the CUDA Toolkit's own
// coefficient-wise primitive: vectorised or bulk-copied loads, tuned per
// architecture) and a device-side fill of random data. Host-callable; the kernels live in
// elementwise_baselines.cu.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace egpu_bench::gpu {

// The bench's expressions, by name: "a*b+c", "a*b+exp(a)", "select",
// "tanh(a)*sin(b)+pow(a,2.5)". out = f(a, b, c), n elements of T.
template <class T>
void hand_written(const std::string& expression, const T* a, const T* b, const T* c, T* out, std::size_t n,
                  cudaStream_t stream);

// out = a cast to U.
template <class T, class U>
void hand_written_cast(const T* a, U* out, std::size_t n, cudaStream_t stream);

// The same through cub::DeviceTransform::Transform.
template <class T>
void cub_transform(const std::string& expression, const T* a, const T* b, const T* c, T* out, std::size_t n,
                   cudaStream_t stream);
template <class T, class U>
void cub_transform_cast(const T* a, U* out, std::size_t n, cudaStream_t stream);

// n values uniform in [-1, 1) from `seed`, on the device.
template <class T>
void fill_uniform(T* p, std::size_t n, unsigned long long seed, cudaStream_t stream);

}  // namespace egpu_bench::gpu

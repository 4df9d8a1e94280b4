#include "elementwise_baselines.hpp"

#include <cub/device/device_transform.cuh>

#include <stdexcept>

namespace egpu_bench::gpu {
namespace {

constexpr int kThreads = 256;

unsigned grid_for(std::size_t n) {
  int device = 0, sms = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  const std::size_t needed = (n + kThreads - 1) / kThreads;
  const std::size_t most = static_cast<std::size_t>(sms) * 8;
  return static_cast<unsigned>(needed < most ? (needed == 0 ? 1 : needed) : most);
}

void launched(const char* what) {
  const cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
}

template <class T, class F>
__global__ void map3(const T* __restrict__ a, const T* __restrict__ b, const T* __restrict__ c, T* __restrict__ out,
                     std::size_t n, F f) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x)
    out[i] = f(a[i], b[i], c[i]);
}

template <class T, class U>
__global__ void cast_kernel(const T* __restrict__ a, U* __restrict__ out, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x)
    out[i] = static_cast<U>(a[i]);
}

template <class T>
__global__ void fill_kernel(T* p, std::size_t n, unsigned long long seed) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
    unsigned long long x = (i + 1) * 0x9E3779B97F4A7C15ull ^ seed;  // splitmix64
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    x ^= x >> 31;
    p[i] = static_cast<T>(static_cast<double>(x >> 11) * 0x1.0p-52 - 1.0);
  }
}

}  // namespace

template <class T>
void hand_written(const std::string& expression, const T* a, const T* b, const T* c, T* out, std::size_t n,
                  cudaStream_t stream) {
  const unsigned grid = grid_for(n);
  if (expression == "a*b+c")
    map3<<<grid, kThreads, 0, stream>>>(a, b, c, out, n, [] __device__(T x, T y, T z) { return x * y + z; });
  else if (expression == "a*b+exp(a)")
    map3<<<grid, kThreads, 0, stream>>>(a, b, c, out, n, [] __device__(T x, T y, T) { return x * y + exp(x); });
  else if (expression == "select")
    map3<<<grid, kThreads, 0, stream>>>(a, b, c, out, n, [] __device__(T x, T, T) { return x > T(0) ? x : T(0.1) * x; });
  else if (expression == "tanh(a)*sin(b)+pow(a,2.5)")
    map3<<<grid, kThreads, 0, stream>>>(a, b, c, out, n,
                                        [] __device__(T x, T y, T) { return tanh(x) * sin(y) + pow(x, T(2.5)); });
  else
    throw std::invalid_argument("no hand-written kernel for " + expression);
  launched("hand-written kernel");
}

template <class T, class U>
void hand_written_cast(const T* a, U* out, std::size_t n, cudaStream_t stream) {
  cast_kernel<<<grid_for(n), kThreads, 0, stream>>>(a, out, n);
  launched("hand-written cast");
}

template <class T>
void cub_transform(const std::string& expression, const T* a, const T* b, const T* c, T* out, std::size_t n,
                   cudaStream_t stream) {
  using cuda::std::make_tuple;
  const auto count = static_cast<std::int64_t>(n);
  cudaError_t status = cudaSuccess;
  if (expression == "a*b+c")
    status = cub::DeviceTransform::Transform(make_tuple(a, b, c), out, count,
                                             [] __device__(T x, T y, T z) { return x * y + z; }, stream);
  else if (expression == "a*b+exp(a)")
    status = cub::DeviceTransform::Transform(make_tuple(a, b), out, count,
                                             [] __device__(T x, T y) { return x * y + exp(x); }, stream);
  else if (expression == "select")
    status = cub::DeviceTransform::Transform(a, out, count, [] __device__(T x) { return x > T(0) ? x : T(0.1) * x; },
                                             stream);
  else if (expression == "tanh(a)*sin(b)+pow(a,2.5)")
    status = cub::DeviceTransform::Transform(
        make_tuple(a, b), out, count, [] __device__(T x, T y) { return tanh(x) * sin(y) + pow(x, T(2.5)); }, stream);
  else
    throw std::invalid_argument("no CUB transform for " + expression);
  if (status != cudaSuccess) throw std::runtime_error(std::string("cub::DeviceTransform: ") + cudaGetErrorString(status));
  launched("cub::DeviceTransform");
}

template <class T, class U>
void cub_transform_cast(const T* a, U* out, std::size_t n, cudaStream_t stream) {
  const cudaError_t status = cub::DeviceTransform::Transform(a, out, static_cast<std::int64_t>(n),
                                                             [] __device__(T x) { return static_cast<U>(x); }, stream);
  if (status != cudaSuccess) throw std::runtime_error(std::string("cub::DeviceTransform: ") + cudaGetErrorString(status));
  launched("cub::DeviceTransform (cast)");
}

template <class T>
void fill_uniform(T* p, std::size_t n, unsigned long long seed, cudaStream_t stream) {
  fill_kernel<<<grid_for(n), kThreads, 0, stream>>>(p, n, seed);
  launched("fill");
}

template void hand_written<float>(const std::string&, const float*, const float*, const float*, float*, std::size_t,
                                  cudaStream_t);
template void hand_written<double>(const std::string&, const double*, const double*, const double*, double*,
                                   std::size_t, cudaStream_t);
template void hand_written_cast<double, float>(const double*, float*, std::size_t, cudaStream_t);
template void hand_written_cast<float, double>(const float*, double*, std::size_t, cudaStream_t);
template void cub_transform<float>(const std::string&, const float*, const float*, const float*, float*, std::size_t,
                                   cudaStream_t);
template void cub_transform<double>(const std::string&, const double*, const double*, const double*, double*,
                                    std::size_t, cudaStream_t);
template void cub_transform_cast<double, float>(const double*, float*, std::size_t, cudaStream_t);
template void cub_transform_cast<float, double>(const float*, double*, std::size_t, cudaStream_t);
template void fill_uniform<float>(float*, std::size_t, unsigned long long, cudaStream_t);
template void fill_uniform<double>(double*, std::size_t, unsigned long long, cudaStream_t);

}  // namespace egpu_bench::gpu

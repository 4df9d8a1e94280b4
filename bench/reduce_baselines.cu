// CUB's reductions and a hand-written two-pass kernel for egpu-bench reduce
// (declared in reduce_baselines.hpp). n is at most INT_MAX: CUB gets int
// counts and offsets, its fastest and most common instantiation.
#include "reduce_baselines.hpp"

#include <cub/device/device_reduce.cuh>
#include <cub/device/device_segmented_reduce.cuh>
#include <cuda/std/functional>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <algorithm>
#include <climits>
#include <stdexcept>
#include <string>

namespace egpu_bench::gpu {
namespace {

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    (void)cudaGetLastError();
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
  }
}

int count_of(std::size_t n) {
  if (n > static_cast<std::size_t>(INT_MAX)) throw std::invalid_argument("reduce baselines: more than INT_MAX values");
  return static_cast<int>(n);
}

template <class T>
struct Square {
  __host__ __device__ T operator()(T x) const { return x * x; }
};

// a[i] * b[i] for a counting iterator's i.
template <class T>
struct Product {
  const T* a;
  const T* b;
  __host__ __device__ T operator()(int i) const { return a[i] * b[i]; }
};

// The start of segment s: s * length.
struct SegmentStart {
  int length;
  __host__ __device__ int operator()(int s) const { return s * length; }
};

using Offsets = thrust::transform_iterator<SegmentStart, thrust::counting_iterator<int>>;

Offsets segment_starts(std::int64_t length) {
  return Offsets(thrust::counting_iterator<int>(0), SegmentStart{static_cast<int>(length)});
}

// One call of CUB's full reduction; temp == nullptr asks for the size.
template <class T>
cudaError_t full_call(FullOp op, const T* a, const T* b, int n, T* out, void* temp, std::size_t& bytes,
                      cudaStream_t stream) {
  switch (op) {
    case FullOp::sum:
      return cub::DeviceReduce::Sum(temp, bytes, a, out, n, stream);
    case FullOp::max:
      return cub::DeviceReduce::Max(temp, bytes, a, out, n, stream);
    case FullOp::squared_norm:
      return cub::DeviceReduce::TransformReduce(temp, bytes, a, out, n, cuda::std::plus<T>{}, Square<T>{}, T(0),
                                                stream);
    case FullOp::dot:
      return cub::DeviceReduce::TransformReduce(temp, bytes, thrust::counting_iterator<int>(0), out, n,
                                                cuda::std::plus<T>{}, Product<T>{a, b}, T(0), stream);
  }
  return cudaErrorInvalidValue;
}

// ---- the hand-written sums across the contiguous direction ----------------------

constexpr int kThreads = 256;

// Slices of k per j: enough threads for about two full waves of the device.
std::int64_t strided_slices(std::int64_t width, std::int64_t length) {
  int device = 0, sms = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "cudaDeviceGetAttribute");
  const std::int64_t wanted = (std::int64_t(sms) * 4096 + width - 1) / std::max<std::int64_t>(width, 1);
  return std::max<std::int64_t>(1, std::min<std::int64_t>({wanted, length, 65535}));
}

// 64 bytes of loads in flight per thread (8 doubles, 16 floats): with about
// two waves of threads, the sums across a 16384 x 16384 matrix read it at
// 0.96 (f32) and 1.0 (f64) of the device-to-device copy's rate on an H100;
// 8 floats or 4 doubles per thread reach 0.77 and 0.96.
template <class T>
constexpr int kUnroll = 64 / static_cast<int>(sizeof(T));

template <class T>
__global__ void strided_partials(const T* __restrict__ in, std::int64_t width, std::int64_t length,
                                 std::int64_t slice, T* __restrict__ partial) {
  const std::int64_t j = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
  if (j >= width) return;
  const std::int64_t k0 = blockIdx.y * slice, k1 = k0 + slice < length ? k0 + slice : length;
  const T* p = in + k0 * width + j;
  T s[kUnroll<T>] = {};
  std::int64_t k = k0;
  for (; k + kUnroll<T> <= k1; k += kUnroll<T>, p += kUnroll<T> * width) {
#pragma unroll
    for (int u = 0; u < kUnroll<T>; ++u) s[u] += p[u * width];
  }
  for (; k < k1; ++k, p += width) s[0] += *p;
#pragma unroll
  for (int half = kUnroll<T> / 2; half > 0; half /= 2)
#pragma unroll
    for (int u = 0; u < half; ++u) s[u] += s[u + half];
  partial[blockIdx.y * width + j] = s[0];
}

template <class T>
__global__ void strided_finish(const T* __restrict__ partial, std::int64_t width, std::int64_t slices,
                               T* __restrict__ out) {
  const std::int64_t j = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
  if (j >= width) return;
  T s = 0;
  for (std::int64_t y = 0; y < slices; ++y) s += partial[y * width + j];
  out[j] = s;
}

}  // namespace

template <class T>
std::size_t cub_full_temp_bytes(FullOp op, std::size_t n) {
  std::size_t bytes = 0;
  check(full_call<T>(op, nullptr, nullptr, count_of(n), nullptr, nullptr, bytes, nullptr), "CUB reduce (size)");
  return bytes;
}

template <class T>
void cub_full(FullOp op, const T* a, const T* b, std::size_t n, T* out, void* temp, std::size_t temp_bytes,
              cudaStream_t stream) {
  check(full_call<T>(op, a, b, count_of(n), out, temp, temp_bytes, stream), "CUB reduce");
}

template <class T>
std::size_t cub_segmented_sum_temp_bytes(std::int64_t segments, std::int64_t length) {
  count_of(static_cast<std::size_t>(segments * length));
  std::size_t bytes = 0;
  const Offsets starts = segment_starts(length);
  check(cub::DeviceSegmentedReduce::Sum(nullptr, bytes, static_cast<const T*>(nullptr), static_cast<T*>(nullptr),
                                        segments, starts, starts + 1, nullptr),
        "CUB segmented reduce (size)");
  return bytes;
}

template <class T>
void cub_segmented_sum(const T* in, std::int64_t segments, std::int64_t length, T* out, void* temp,
                       std::size_t temp_bytes, cudaStream_t stream) {
  const Offsets starts = segment_starts(length);
  check(cub::DeviceSegmentedReduce::Sum(temp, temp_bytes, in, out, segments, starts, starts + 1, stream),
        "CUB segmented reduce");
}

template <class T>
std::size_t hand_strided_sum_temp_bytes(std::int64_t width, std::int64_t length) {
  return static_cast<std::size_t>(strided_slices(width, length) * width) * sizeof(T);
}

template <class T>
void hand_strided_sum(const T* in, std::int64_t width, std::int64_t length, T* out, void* temp,
                      std::size_t temp_bytes, cudaStream_t stream) {
  const std::int64_t slices = strided_slices(width, length);
  if (temp_bytes < static_cast<std::size_t>(slices * width) * sizeof(T))
    throw std::invalid_argument("hand_strided_sum: scratch too small");
  const std::int64_t slice = (length + slices - 1) / slices;
  const unsigned blocks = static_cast<unsigned>((width + kThreads - 1) / kThreads);
  T* partial = static_cast<T*>(temp);
  strided_partials<<<dim3(blocks, static_cast<unsigned>(slices)), kThreads, 0, stream>>>(in, width, length, slice,
                                                                                         partial);
  check(cudaGetLastError(), "hand-written strided sum");
  strided_finish<<<blocks, kThreads, 0, stream>>>(partial, width, slices, out);
  check(cudaGetLastError(), "hand-written strided sum (finish)");
}

#define EGPU_BENCH_REDUCE_BASELINES(T)                                                                            \
  template std::size_t cub_full_temp_bytes<T>(FullOp, std::size_t);                                               \
  template void cub_full<T>(FullOp, const T*, const T*, std::size_t, T*, void*, std::size_t, cudaStream_t);       \
  template std::size_t cub_segmented_sum_temp_bytes<T>(std::int64_t, std::int64_t);                               \
  template void cub_segmented_sum<T>(const T*, std::int64_t, std::int64_t, T*, void*, std::size_t, cudaStream_t); \
  template std::size_t hand_strided_sum_temp_bytes<T>(std::int64_t, std::int64_t);                                \
  template void hand_strided_sum<T>(const T*, std::int64_t, std::int64_t, T*, void*, std::size_t, cudaStream_t);
EGPU_BENCH_REDUCE_BASELINES(float)
EGPU_BENCH_REDUCE_BASELINES(double)
#undef EGPU_BENCH_REDUCE_BASELINES

}  // namespace egpu_bench::gpu

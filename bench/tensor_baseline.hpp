// Eigen's Tensor module on Eigen::GpuDevice, the Eigen-native way to compute
// on device memory without egpu: TensorMaps of the device pointers and
// `out.device(gpu) = expression` (tensor_baseline.cu, nvcc-compiled). A
// baseline of egpu-bench reduce and egpu-bench elementwise. Every function
// queues its work on the object's stream and returns; results land in
// device memory. Scalars: float and double.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "reduce_baselines.hpp"

namespace egpu_bench::gpu {

// Eigen's Tensor module on an Eigen::GpuDevice bound to one stream (its
// scratch memory is allocated by the first call that needs it and kept
// until the object goes; create it outside any timing).
class EigenTensor {
 public:
  explicit EigenTensor(cudaStream_t stream);
  ~EigenTensor();
  EigenTensor(const EigenTensor&) = delete;
  EigenTensor& operator=(const EigenTensor&) = delete;

  // out[0] = A.sum(), A.square().sum(), A.maximum() or (A * B).sum() of
  // TensorMaps of n values.
  template <class T>
  void full(FullOp op, const T* a, const T* b, std::size_t n, T* out);

  // The sums of each column (each_column) or each row of the rows x cols
  // TensorMap of `a` in either layout: A.sum(array<int, 1>{0}) or {1}.
  template <class T>
  void partial_sum(const T* a, std::int64_t rows, std::int64_t cols, bool row_major, bool each_column, T* out);

  // out = one of egpu-bench elementwise's expressions of TensorMaps of n
  // values ("a*b+c", "a*b+exp(a)", "select", "tanh(a)*sin(b)+pow(a,2.5)").
  template <class T>
  void elementwise(const std::string& expression, const T* a, const T* b, const T* c, T* out, std::size_t n);

  // out = a cast to U.
  template <class T, class U>
  void cast(const T* a, U* out, std::size_t n);

 private:
  struct Impl;
  std::unique_ptr<Impl> m;
};

}  // namespace egpu_bench::gpu

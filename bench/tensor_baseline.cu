// Eigen's Tensor module on Eigen::GpuDevice (declared in tensor_baseline.hpp):
// what an Eigen user who wants to compute on device memory without egpu
// writes, TensorMaps of the device pointers and `out.device(gpu) =
// expression`. Compiled by nvcc with EIGEN_USE_GPU and
// --expt-relaxed-constexpr (Eigen's documented flag for CUDA: its constexpr
// host functions, numeric_limits among them, are called from device code).
#define EIGEN_USE_GPU
#include <unsupported/Eigen/CXX11/Tensor>

#include "tensor_baseline.hpp"

#include <stdexcept>
#include <string>

namespace egpu_bench::gpu {
namespace {

// Eigen launches without checking (its gpu_assert is off under NDEBUG).
void launched() {
  const cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess) throw std::runtime_error(std::string("Eigen Tensor: ") + cudaGetErrorString(status));
}

}  // namespace

struct EigenTensor::Impl {
  // Eigen's stream device keeps a pointer to the stream handle: it lives here.
  cudaStream_t stream;
  Eigen::GpuStreamDevice stream_device;
  Eigen::GpuDevice device;
  explicit Impl(cudaStream_t s) : stream(s), stream_device(&stream), device(&stream_device) {}
};

EigenTensor::EigenTensor(cudaStream_t stream) : m(std::make_unique<Impl>(stream)) {}
EigenTensor::~EigenTensor() = default;

template <class T>
void EigenTensor::full(FullOp op, const T* a, const T* b, std::size_t n, T* out) {
  using Index = Eigen::Index;
  const Eigen::TensorMap<Eigen::Tensor<const T, 1>> A(a, static_cast<Index>(n));
  Eigen::TensorMap<Eigen::Tensor<T, 0>> O(out);
  switch (op) {
    case FullOp::sum:
      O.device(m->device) = A.sum();
      break;
    case FullOp::squared_norm:
      O.device(m->device) = A.square().sum();
      break;
    case FullOp::max:
      O.device(m->device) = A.maximum();
      break;
    case FullOp::dot: {
      const Eigen::TensorMap<Eigen::Tensor<const T, 1>> B(b, static_cast<Index>(n));
      O.device(m->device) = (A * B).sum();
      break;
    }
  }
  launched();
}

namespace {

template <int Layout, class T>
void partial_in(const Eigen::GpuDevice& device, const T* a, Eigen::Index rows, Eigen::Index cols, bool each_column,
                T* out) {
  const Eigen::TensorMap<Eigen::Tensor<const T, 2, Layout>> A(a, rows, cols);
  Eigen::TensorMap<Eigen::Tensor<T, 1, Layout>> O(out, each_column ? cols : rows);
  const Eigen::array<int, 1> dim{{each_column ? 0 : 1}};
  O.device(device) = A.sum(dim);
}

}  // namespace

template <class T>
void EigenTensor::partial_sum(const T* a, std::int64_t rows, std::int64_t cols, bool row_major, bool each_column,
                              T* out) {
  if (row_major)
    partial_in<Eigen::RowMajor>(m->device, a, rows, cols, each_column, out);
  else
    partial_in<Eigen::ColMajor>(m->device, a, rows, cols, each_column, out);
  launched();
}

template <class T>
void EigenTensor::elementwise(const std::string& expression, const T* a, const T* b, const T* c, T* out,
                              std::size_t n) {
  using Map = Eigen::TensorMap<Eigen::Tensor<const T, 1>>;
  const auto size = static_cast<Eigen::Index>(n);
  const Map A(a, size), B(b, size), C(c, size);
  Eigen::TensorMap<Eigen::Tensor<T, 1>> O(out, size);
  if (expression == "a*b+c")
    O.device(m->device) = A * B + C;
  else if (expression == "a*b+exp(a)")
    O.device(m->device) = A * B + A.exp();
  else if (expression == "select")
    O.device(m->device) = (A > A.constant(T(0))).select(A, A * T(0.1));
  else if (expression == "tanh(a)*sin(b)+pow(a,2.5)")
    O.device(m->device) = A.tanh() * B.unaryExpr([] __device__(T y) { return sin(y); }) + A.pow(T(2.5));
  else
    throw std::invalid_argument("Eigen Tensor: no expression " + expression);
  launched();
}

template <class T, class U>
void EigenTensor::cast(const T* a, U* out, std::size_t n) {
  const auto size = static_cast<Eigen::Index>(n);
  const Eigen::TensorMap<Eigen::Tensor<const T, 1>> A(a, size);
  Eigen::TensorMap<Eigen::Tensor<U, 1>> O(out, size);
  O.device(m->device) = A.template cast<U>();
  launched();
}

template void EigenTensor::elementwise<float>(const std::string&, const float*, const float*, const float*, float*,
                                              std::size_t);
template void EigenTensor::elementwise<double>(const std::string&, const double*, const double*, const double*,
                                               double*, std::size_t);
template void EigenTensor::cast<float, double>(const float*, double*, std::size_t);
template void EigenTensor::cast<double, float>(const double*, float*, std::size_t);
template void EigenTensor::full<float>(FullOp, const float*, const float*, std::size_t, float*);
template void EigenTensor::full<double>(FullOp, const double*, const double*, std::size_t, double*);
template void EigenTensor::partial_sum<float>(const float*, std::int64_t, std::int64_t, bool, bool, float*);
template void EigenTensor::partial_sum<double>(const double*, std::int64_t, std::int64_t, bool, bool, double*);

}  // namespace egpu_bench::gpu

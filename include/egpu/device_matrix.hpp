// egpu::DeviceMatrix<Scalar>: a column-major matrix that lives in the GPU's
// memory across calls. It is an Eigen expression (so dA * dB, dA.array(),
// dA.transpose(), dA.block(...) are written as for any matrix) that only
// egpu::gpu(...) can evaluate: reading its coefficients on the host (dA(0, 0),
// MatrixXd X = dA + dB) is a compile-time error.
//
//   egpu::DeviceMatrix<double> dA(A), dB = B;          // upload
//   egpu::DeviceMatrix<double> dC = egpu::gpu(dA * dB);
//   dC += egpu::gpu(dA.array() * dB.array().exp());
//   Eigen::MatrixXd C = dC.to_host();                  // download: waits
//
// Work whose destination is device memory is queued on the calling thread's
// stream and the call returns at once; the host waits only where data comes
// back (a host destination, a reduction's value, to_host, copy_to) or at
// egpu::synchronize(). A queued call's host operands have been read when it
// returns (pageable ones into pinned staging, page-locked ones by DMA), so
// they may change or go away afterwards.
//
// Without a usable device a DeviceMatrix holds host memory and every call
// runs on CPU Eigen.
#pragma once

#include <Eigen/Dense>

#include <complex>
#include <cstddef>
#include <type_traits>
#include <utility>

#include "egpu/error.hpp"
#include "egpu/options.hpp"

namespace egpu {

template <class Scalar>
class DeviceMatrix;

namespace detail {

// Memory for a DeviceMatrix: on the device (stream-ordered, on the calling
// thread's stream), or host memory when there is no usable device. Throws
// egpu::error naming the bytes asked for and what the device has free.
struct MatrixStorage {
  void* data = nullptr;
  bool on_device = false;
};
MatrixStorage allocate_matrix(std::size_t bytes);
// Returns the memory once the work queued before on the calling thread's
// stream is done (device), or at once (host).
void release_matrix(const MatrixStorage& storage) noexcept;

template <class X>
struct is_device_matrix : std::false_type {};
template <class S>
struct is_device_matrix<DeviceMatrix<S>> : std::true_type {};

}  // namespace detail

// Waits for everything the calling thread has queued on the device; throws
// egpu::error naming a queued operation that failed.
void synchronize();

}  // namespace egpu

namespace Eigen::internal {

template <class S>
struct traits<egpu::DeviceMatrix<S>> {
  using Scalar = S;
  using StorageKind = Dense;
  using StorageIndex = Index;
  using XprKind = MatrixXpr;
  enum {
    RowsAtCompileTime = Dynamic,
    ColsAtCompileTime = Dynamic,
    MaxRowsAtCompileTime = Dynamic,
    MaxColsAtCompileTime = Dynamic,
    // Held by reference inside expressions, like a Matrix; writable through
    // blocks; no direct access, so that nothing on the host takes its
    // address (egpu's adapter finds the memory itself).
    Flags = NestByRefBit | LvalueBit,
    InnerStrideAtCompileTime = 1,
    OuterStrideAtCompileTime = Dynamic
  };
};

// Every host read of a DeviceMatrix's coefficients goes through this
// evaluator, which does not compile.
template <class S>
struct evaluator<egpu::DeviceMatrix<S>> : evaluator_base<egpu::DeviceMatrix<S>> {
  using XprType = egpu::DeviceMatrix<S>;
  using CoeffReturnType = const S&;
  enum { CoeffReadCost = NumTraits<S>::ReadCost, Flags = NestByRefBit | LvalueBit, Alignment = 0 };
  template <class X>
  explicit evaluator(const X&) {
    static_assert(sizeof(X) == 0,
                  "egpu::DeviceMatrix: its coefficients live in GPU memory and are read only inside egpu::gpu(...): "
                  "write egpu::gpu(expression), or dA.to_host() for a host copy");
  }
  CoeffReturnType coeff(Index, Index) const { return m_unused; }
  CoeffReturnType coeff(Index) const { return m_unused; }
  S& coeffRef(Index, Index) { return m_unused; }
  S& coeffRef(Index) { return m_unused; }
  S m_unused{};
};

}  // namespace Eigen::internal

namespace egpu {

template <class S>
class DeviceMatrix : public Eigen::MatrixBase<DeviceMatrix<S>> {
  static_assert(std::is_same_v<S, float> || std::is_same_v<S, double> || std::is_same_v<S, std::complex<float>> ||
                    std::is_same_v<S, std::complex<double>>,
                "egpu::DeviceMatrix: the scalar is float, double, std::complex<float> or std::complex<double>");

 public:
  using Base = Eigen::MatrixBase<DeviceMatrix>;
  EIGEN_DENSE_PUBLIC_INTERFACE(DeviceMatrix)
  using PlainObject = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic>;

  DeviceMatrix() = default;
  // rows x cols, contents unspecified.
  DeviceMatrix(Eigen::Index rows, Eigen::Index cols) { resize(rows, cols); }
  // The value of any expression: a host matrix goes up; an expression of
  // device (and host) operands runs on the GPU, as egpu::gpu(x) would.
  template <class Other>
  DeviceMatrix(const Eigen::DenseBase<Other>& x) {  // NOLINT: implicit, as DeviceMatrix<double> dB = B
    *this = x.derived();
  }
  DeviceMatrix(DeviceMatrix&& other) noexcept
      : m_storage(std::exchange(other.m_storage, {})),
        m_rows(std::exchange(other.m_rows, 0)),
        m_cols(std::exchange(other.m_cols, 0)) {}
  DeviceMatrix& operator=(DeviceMatrix&& other) noexcept {
    if (this != &other) {
      detail::release_matrix(m_storage);
      m_storage = std::exchange(other.m_storage, {});
      m_rows = std::exchange(other.m_rows, 0);
      m_cols = std::exchange(other.m_cols, 0);
    }
    return *this;
  }
  // No hidden device copies: copy explicitly with d2 = egpu::gpu(d1).
  DeviceMatrix(const DeviceMatrix&) = delete;
  DeviceMatrix& operator=(const DeviceMatrix&) = delete;
  ~DeviceMatrix() { detail::release_matrix(m_storage); }

  // dC = x, dC += x, dC -= x for any expression x: on the GPU (egpu::gpu(x)
  // is implied; write it to pass Options).
  template <class Other>
  DeviceMatrix& operator=(const Eigen::DenseBase<Other>& x);
  template <class Other>
  DeviceMatrix& operator+=(const Eigen::DenseBase<Other>& x);
  template <class Other>
  DeviceMatrix& operator-=(const Eigen::DenseBase<Other>& x);

  Eigen::Index rows() const { return m_rows; }
  Eigen::Index cols() const { return m_cols; }
  Eigen::Index outerStride() const { return m_rows; }
  Eigen::Index innerStride() const { return 1; }

  // New storage of rows x cols when the size changes (contents unspecified,
  // as Eigen's resize).
  void resize(Eigen::Index rows, Eigen::Index cols) {
    if (rows < 0 || cols < 0) throw error("DeviceMatrix::resize: negative size");
    if (rows == m_rows && cols == m_cols) return;
    detail::MatrixStorage fresh;
    if (rows > 0 && cols > 0) fresh = detail::allocate_matrix(sizeof(S) * std::size_t(rows) * std::size_t(cols));
    detail::release_matrix(m_storage);
    m_storage = fresh;
    m_rows = rows;
    m_cols = cols;
  }
  void resize(Eigen::Index size) {
    eigen_assert(m_cols == 1 || m_rows == 1);
    m_rows == 1 && m_cols != 1 ? resize(1, size) : resize(size, 1);
  }

  // A host copy (waits for the queued work that writes it).
  PlainObject to_host() const;
  // Copies into any writable dense host destination of this size (waits).
  template <class Dst>
  void copy_to(Eigen::DenseBase<Dst>&& dst) const { copy_into(dst.derived()); }
  template <class Dst>
  void copy_to(Eigen::DenseBase<Dst>& dst) const { copy_into(dst.derived()); }

  // The memory: device memory, or host memory without a device. Not for
  // dereferencing on the host.
  S* device_data() const { return static_cast<S*>(m_storage.data); }
  bool on_device() const { return m_storage.on_device; }

 private:
  template <class Dst>
  void copy_into(Dst& dst) const;

  detail::MatrixStorage m_storage;
  Eigen::Index m_rows = 0, m_cols = 0;
};

}  // namespace egpu

// The plain description of one product that the header-only adapter hands to
// the compiled library: types, sizes, where each element lives, alpha and
// beta. Nothing here knows Eigen or CUDA.
#pragma once

#include <complex>
#include <cstdint>

#include "egpu/options.hpp"

namespace egpu::detail {

enum class ScalarKind : std::uint8_t { f32, f64, c32, c64 };

struct ElementwiseProgram;  // elementwise_program.hpp

template <class T> struct scalar_kind_of;
template <> struct scalar_kind_of<float> { static constexpr ScalarKind value = ScalarKind::f32; };
template <> struct scalar_kind_of<double> { static constexpr ScalarKind value = ScalarKind::f64; };
template <> struct scalar_kind_of<std::complex<float>> { static constexpr ScalarKind value = ScalarKind::c32; };
template <> struct scalar_kind_of<std::complex<double>> { static constexpr ScalarKind value = ScalarKind::c64; };

constexpr std::int64_t scalar_size(ScalarKind s) {
  return s == ScalarKind::f32 ? 4 : s == ScalarKind::f64 ? 8 : s == ScalarKind::c32 ? 8 : 16;
}

// A matrix in host memory, or in the device's memory when `on_device` (a
// DeviceMatrix): element (i, j) is data[i * row_stride + j * col_stride]
// (strides in elements, any sign of layout: column-major has row_stride 1,
// row-major col_stride 1, a transpose swaps the two). `conj` asks for the
// complex conjugate of every element.
struct MatrixDesc {
  void* data = nullptr;
  std::int64_t rows = 0, cols = 0;
  std::int64_t row_stride = 1, col_stride = 1;
  bool conj = false;
  bool on_device = false;
};

// Whether a and b are the same view of the same memory: the same first
// element, shape and strides (element types are compared by the caller).
inline bool same_view(const MatrixDesc& a, const MatrixDesc& b) {
  return a.data == b.data && a.rows == b.rows && a.cols == b.cols && a.row_stride == b.row_stride &&
         a.col_stride == b.col_stride;
}

// C = alpha * A * B + beta * C with A m x k, B k x n, C m x n. When
// beta_is_zero, C is write-only: its old contents (NaN included) are not read.
struct GemmDesc {
  ScalarKind scalar = ScalarKind::f64;
  std::int64_t m = 0, n = 0, k = 0;
  MatrixDesc a, b, c;
  std::complex<double> alpha{1.0, 0.0}, beta{0.0, 0.0};
  bool beta_is_zero = true;
  // When set: C = f(alpha * A * B, D, ...), f a coefficient-wise program
  // of C's shape whose value has the scalar type. Its leaf
  // `epilogue_product` (of the scalar type; its description is not read)
  // is the product's value; the other leaves are matrices in host memory
  // that overlap C at most as C itself, element for element, and then
  // `epilogue_reads_c` is set (C is read before it is written, and is
  // unchanged when the call throws). f is applied to each tile on the device
  // before it comes down. Needs beta_is_zero and k > 0.
  const ElementwiseProgram* epilogue = nullptr;
  int epilogue_product = 0;
  bool epilogue_reads_c = false;
};

// Checks the descriptor (sizes agree, strides reach every element without the
// destination overlapping itself) and throws egpu::error otherwise.
void validate(const GemmDesc& desc);

// Runs the product on the GPU. Throws egpu::error on any failure; when it
// throws, C is unchanged if beta is not zero. A call whose operands or C
// are in device memory is queued on the calling thread's stream; it waits
// for the device only when C is in host memory.
void gemm(const GemmDesc& desc, const Options& options);

}  // namespace egpu::detail

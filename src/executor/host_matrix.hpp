// A strided view of host memory and the dense layout its pieces take on
// the device. Plain C++: the executor's bookkeeping, separate from CUDA.
#pragma once

#include <cstdint>

#include "common/complex.hpp"
#include "kernels/gemm/gemm_args.hpp"

namespace egpu::executor {

using kernels::Layout;

// Element (i, j) at data[i * row_stride + j * col_stride].
template <class T>
struct HostMatrix {
  T* data = nullptr;
  std::int64_t rows = 0, cols = 0;
  std::int64_t row_stride = 1, col_stride = 1;
  bool conj = false;

  HostMatrix block(std::int64_t i0, std::int64_t j0, std::int64_t r, std::int64_t c) const {
    return {data + i0 * row_stride + j0 * col_stride, r, c, row_stride, col_stride, conj};
  }
  HostMatrix transposed() const { return {data, cols, rows, col_stride, row_stride, conj}; }
};

// A dense matrix on the device: `lines` runs of `line_length` elements,
// ld apart; columns for col_major, rows for row_major.
struct DenseShape {
  Layout layout = Layout::col_major;
  std::int64_t lines = 0, line_length = 0, ld = 0;
};

// Device lines start on 16-byte boundaries so the kernels can use vector loads.
template <class T>
std::int64_t padded_ld(std::int64_t line_length) {
  constexpr std::int64_t align = sizeof(T) >= 16 ? 1 : 16 / sizeof(T);
  return (line_length + align - 1) / align * align;
}

// Lines padded for the GEMM kernels' vector loads, or (padded = false)
// packed end to end, as coefficient-wise pieces lie so that one compiled
// kernel reads every chunk the same way.
template <class T>
DenseShape dense_shape(std::int64_t rows, std::int64_t cols, Layout layout, bool padded = true) {
  DenseShape s;
  s.layout = layout;
  s.lines = layout == Layout::col_major ? cols : rows;
  s.line_length = layout == Layout::col_major ? rows : cols;
  s.ld = padded ? padded_ld<T>(s.line_length) : s.line_length;
  return s;
}

// The layout that keeps the user's contiguous direction contiguous, so a
// copy moves whole runs.
template <class T>
Layout natural_layout(const HostMatrix<T>& m) {
  if (m.rows == 1) return Layout::row_major;
  if (m.cols == 1) return Layout::col_major;
  return m.row_stride <= m.col_stride ? Layout::col_major : Layout::row_major;
}

}  // namespace egpu::executor

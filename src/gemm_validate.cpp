// Checks a GemmDesc before anything touches memory: a wrong size or a
// destination that overlaps itself would be a memory-safety bug on the GPU.
#include <algorithm>
#include <cstdint>
#include <string>

#include "egpu/detail/elementwise_program.hpp"
#include "egpu/detail/gemm_descriptor.hpp"
#include "egpu/error.hpp"

namespace egpu::detail {
namespace {

std::string dims(std::int64_t r, std::int64_t c) { return std::to_string(r) + "x" + std::to_string(c); }

void check_matrix(const MatrixDesc& d, std::int64_t rows, std::int64_t cols, const char* name) {
  if (d.rows != rows || d.cols != cols)
    throw egpu::error(std::string("gemm: ") + name + " is " + dims(d.rows, d.cols) + ", expected " + dims(rows, cols));
  if (rows > 0 && cols > 0 && d.data == nullptr) throw egpu::error(std::string("gemm: ") + name + " has no data");
  if (d.row_stride < 0 || d.col_stride < 0) throw egpu::error(std::string("gemm: ") + name + " has a negative stride");
}

// Distinct (i, j) must land on distinct elements: the smaller stride times
// its extent must not reach the larger stride.
bool writes_each_element_once(const MatrixDesc& d) {
  if (d.rows <= 1 && d.cols <= 1) return true;
  if (d.rows <= 1) return d.col_stride >= 1;
  if (d.cols <= 1) return d.row_stride >= 1;
  const std::int64_t small = std::min(d.row_stride, d.col_stride);
  const std::int64_t large = std::max(d.row_stride, d.col_stride);
  const std::int64_t extent = d.row_stride <= d.col_stride ? d.rows : d.cols;
  return small >= 1 && small * extent <= large;
}

}  // namespace

void validate(const GemmDesc& desc) {
  if (desc.m < 0 || desc.n < 0 || desc.k < 0)
    throw egpu::error("gemm: negative size " + std::to_string(desc.m) + ", " + std::to_string(desc.n) + ", " +
                      std::to_string(desc.k));
  check_matrix(desc.a, desc.m, desc.k, "A");
  check_matrix(desc.b, desc.k, desc.n, "B");
  check_matrix(desc.c, desc.m, desc.n, "C");
  if (!writes_each_element_once(desc.c))
    throw egpu::error("gemm: the destination's strides (" + std::to_string(desc.c.row_stride) + ", " +
                      std::to_string(desc.c.col_stride) + ") make elements overlap");
  if (desc.beta_is_zero && desc.beta != std::complex<double>(0.0, 0.0))
    throw egpu::error("gemm: beta_is_zero with a nonzero beta");
  if (desc.epilogue != nullptr) {
    const ElementwiseProgram& f = *desc.epilogue;
    validate(f);
    const bool product_leaf = desc.epilogue_product >= 0 &&
                              static_cast<std::size_t>(desc.epilogue_product) < f.leaves.size() &&
                              f.leaves[static_cast<std::size_t>(desc.epilogue_product)].scalar == desc.scalar;
    if (!product_leaf || f.code.back().type != value_kind(desc.scalar) || f.rows != desc.m || f.cols != desc.n)
      throw egpu::error("gemm: an epilogue is a program of the product's shape, of its scalar type, with the product as a leaf");
    if (!desc.beta_is_zero || desc.k == 0) throw egpu::error("gemm: an epilogue needs beta_is_zero and k > 0");
  }
}

}  // namespace egpu::detail

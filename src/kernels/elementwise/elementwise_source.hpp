// From an ElementwiseProgram to the CUDA source of the one kernel that runs
// it: a grid-stride loop over the coefficients in column order, each leaf
// read by the cheapest index its strides allow, every instruction one line.
// The source depends on the program's operations, types and layouts, never on
// its pointers or constant values (those travel in egpu_ew_params), so one
// compiled kernel serves every call of the same expression. No CUDA here.
#pragma once

#include <utility>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "egpu/detail/elementwise_program.hpp"

namespace egpu::kernels {

// How element n = i + j * rows of a leaf is found.
enum class EwAccess : std::uint8_t {
  linear,   // data[n]: dense in column order
  column,   // data[i]: a column repeated across columns
  row,      // data[j]: a row repeated down rows
  strided,  // data[i * row_stride + j * col_stride]
};

struct EwOperandShape {
  EwAccess access = EwAccess::strided;
  bool split_complex = false;  // complex at an address not aligned to its size: two scalar accesses
};

struct EwKernelShape {
  std::vector<EwOperandShape> leaves;  // one per program leaf
  EwOperandShape out;
  // Packed: the linear operands and the destination move `pack` elements (16
  // bytes of the widest) per access, `unroll` packs per thread and round.
  bool packed = false;
  int pack = 1;
  int unroll = 1;

  bool operator==(const EwKernelShape& o) const {
    auto same = [](const EwOperandShape& a, const EwOperandShape& b) {
      return a.access == b.access && a.split_complex == b.split_complex;
    };
    return leaves.size() == o.leaves.size() && std::equal(leaves.begin(), leaves.end(), o.leaves.begin(), same) &&
           same(out, o.out) && packed == o.packed && pack == o.pack && unroll == o.unroll;
  }
  bool operator!=(const EwKernelShape& o) const { return !(*this == o); }
};

// m transposed: rows and columns, and their strides, swapped.
inline detail::MatrixDesc transposed(detail::MatrixDesc m) {
  std::swap(m.rows, m.cols);
  std::swap(m.row_stride, m.col_stride);
  return m;
}
// The program of the transposed expression: its shape and every leaf transposed.
void transpose_program(detail::ElementwiseProgram& program);

// The program rewritten so that its coefficients are counted in the
// destination's storage order: a row-major destination, or a single row,
// transposes the whole problem (rows and columns, every stride), so the
// kernel writes it linearly.
void to_destination_order(detail::ElementwiseProgram& program, detail::MatrixDesc& out);

// The shape of the kernel for `program` writing into `out` (after
// to_destination_order): each operand's access and alignment, and packs of
// 16 bytes of the widest type when every linear operand allows them.
EwKernelShape choose_kernel_shape(const detail::ElementwiseProgram& program, const detail::MatrixDesc& out,
                                  detail::ScalarKind out_scalar);

// Throws egpu::error for a program with more leaves or constants than a
// kernel's parameters hold.
void check_limits(const detail::ElementwiseProgram& program);

// How a kernel that only reads the program (a reduction) reaches each leaf:
// the leaves' shapes, no destination; packs of 16 bytes of the widest leaf
// when every leaf is linear.
EwKernelShape reading_shape(const detail::ElementwiseProgram& program);

// Whether some leaf is read by (i, j) rather than by n alone.
bool reads_by_index(const EwKernelShape& shape);

// A struct `name` with `type`, the program's value type, and
// `static type at(const egpu_ew_params& p, long long n, long long i, long long j)`,
// the program's value at element n = i + j * rows: the expression a
// reduction's kernels evaluate. When `shape` is packed, also `pack`,
// `aligned(p, n0)` (every leaf's pack at n0 starts on a whole pack) and
// `at_pack(p, n0, out)`, the values at n0 .. n0 + pack - 1. Compiled after
// elementwise_prelude().
std::string value_source(const detail::ElementwiseProgram& program, const EwKernelShape& shape, const char* name);

// A short key that determines a kernel's source for `program` in `shape`
// (its operations, types and leaf access; not its sizes, pointers or
// constant values), with `extra` for what else the caller's source depends on.
std::string kernel_signature(const detail::ElementwiseProgram& program, const EwKernelShape& shape, int extra);

// The kernel's entry point in every generated source.
inline constexpr const char* kElementwiseKernelName = "egpu_ew_kernel";

// What every generated kernel is compiled after: ew_params.h and
// ew_prelude.cuh, as text (a constant of the library).
const char* elementwise_prelude();

// The kernel's own source, to be compiled after elementwise_prelude(). The
// program's value, of the destination's type, lands in `out`.
std::string elementwise_kernel_source(const detail::ElementwiseProgram& program, detail::ScalarKind out_scalar,
                                      const EwKernelShape& shape);

}  // namespace egpu::kernels

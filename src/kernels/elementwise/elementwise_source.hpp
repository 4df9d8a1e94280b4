// From an ElementwiseProgram to the CUDA source of the one kernel that runs
// it: a grid-stride loop over the coefficients in column order, each leaf
// read by the cheapest index its strides allow, every instruction one line.
// The source depends on the program's operations, types and layouts, never on
// its pointers or constant values (those travel in egpu_ew_params), so one
// compiled kernel serves every call of the same expression. No CUDA here.
#pragma once

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
};

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

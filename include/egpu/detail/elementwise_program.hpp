// The plain description of one coefficient-wise expression that the
// header-only adapter hands to the compiled library: the leaves (matrices in
// host memory, with strides; a stride of 0 repeats a row or column, which is
// how broadcasting is described), constants, and a small program in static
// single assignment form evaluated once per coefficient. Nothing here knows
// Eigen or CUDA.
#pragma once

#include <complex>
#include <cstdint>
#include <vector>

#include "egpu/detail/gemm_descriptor.hpp"

namespace egpu::detail {

// The type of a value inside a program: the four scalars, and the booleans
// of comparisons.
enum class ValueKind : std::uint8_t { f32, f64, c32, c64, boolean };

constexpr ValueKind value_kind(ScalarKind s) {
  return s == ScalarKind::f32 ? ValueKind::f32
         : s == ScalarKind::f64 ? ValueKind::f64
         : s == ScalarKind::c32 ? ValueKind::c32
                                : ValueKind::c64;
}
constexpr bool is_complex(ValueKind v) { return v == ValueKind::c32 || v == ValueKind::c64; }

// The operations, with Eigen's meaning for each scalar type. Grouped by the
// number of operands, in this order (the library counts on it).
enum class EwOp : std::uint8_t {
  // leaves: `index` names the leaf or the constant
  load,
  constant,
  // one operand (x)
  negate, abs, abs2, sqrt, rsqrt, square, cube, inverse,
  exp, expm1, log, log1p, log10,
  sin, cos, tan, asin, acos, atan, sinh, cosh, tanh,
  floor, ceil, round,
  real, imag, conj, arg,
  logical_not,
  cast,  // to the instruction's type
  // two operands (x, y)
  add, sub, mul, div, min, max, pow,
  eq, ne, lt, le, gt, ge,
  logical_and, logical_or,
  // three operands: x ? y : z
  select,
};

const char* op_name(EwOp op);

struct EwInstr {
  EwOp op = EwOp::load;
  ValueKind type = ValueKind::f64;    // of the result
  std::int16_t x = -1, y = -1, z = -1;  // operands: indices of earlier instructions
  std::int32_t index = -1;              // load: leaves[index]; constant: constants[index]
};

// A leaf: rows x cols of the expression's shape, element (i, j) at
// data[i * row_stride + j * col_stride] (a stride of 0 broadcasts).
struct EwLeaf {
  ScalarKind scalar = ScalarKind::f64;
  MatrixDesc m;
};

struct ElementwiseProgram {
  std::int64_t rows = 0, cols = 0;
  std::vector<EwLeaf> leaves;
  std::vector<std::complex<double>> constants;
  std::vector<EwInstr> code;  // the value of the expression is code.back()'s
};

// Appends an instruction to the program; returns its index.
inline int emit(ElementwiseProgram& program, EwOp op, ValueKind type, int x = -1, int y = -1, int z = -1,
                int index = -1) {
  EwInstr in;
  in.op = op;
  in.type = type;
  in.x = static_cast<std::int16_t>(x);
  in.y = static_cast<std::int16_t>(y);
  in.z = static_cast<std::int16_t>(z);
  in.index = index;
  program.code.push_back(in);
  return static_cast<int>(program.code.size()) - 1;
}

// Checks the program (operands are earlier instructions of the types the
// operation takes, as Eigen allows them; leaves and constants exist; every
// leaf has the expression's shape) and throws egpu::error otherwise.
void validate(const ElementwiseProgram& program);
// The same, allowing a boolean value when `boolean_value` (what a count reduces).
void validate(const ElementwiseProgram& program, bool boolean_value);

// Runs out = program on the GPU, leaves and out in host memory (the
// library's entry for coefficient-wise work). out has the program's shape
// and overlaps no leaf except a leaf that is out itself, element for
// element. `accumulates`: out is one of the leaves (+=, -=), and when the
// call throws, out is unchanged.
void elementwise(const ElementwiseProgram& program, const MatrixDesc& out, ScalarKind out_scalar, bool accumulates,
                 const Options& options);

}  // namespace egpu::detail

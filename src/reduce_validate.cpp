// The checks of a reduction against its program: what the kernels rely on.
#include <string>

#include "egpu/detail/reduction.hpp"
#include "egpu/error.hpp"

namespace egpu::detail {

void validate(const ElementwiseProgram& program, const Reduction& reduction) {
  validate(program, reduction.op == ReduceOp::count);
  const ValueKind v = program.code.back().type;
  const bool real = v == ValueKind::f32 || v == ValueKind::f64;
  switch (reduction.op) {
    case ReduceOp::sum:
    case ReduceOp::prod:
      if (v == ValueKind::boolean) throw egpu::error("egpu::gpu: sum and prod of booleans (count() counts them)");
      break;
    case ReduceOp::min:
    case ReduceOp::max:
      if (!real) throw egpu::error("egpu::gpu: minCoeff and maxCoeff of values that are not float or double");
      break;
    case ReduceOp::count: break;
    default: throw egpu::error("egpu::gpu: unknown reduction");
  }
  if (reduction.axis != ReduceAxis::all && reduction.axis != ReduceAxis::each_column &&
      reduction.axis != ReduceAxis::each_row)
    throw egpu::error("egpu::gpu: unknown reduction axis");
  if (reduction.finish != ReduceFinish::none) {
    if (reduction.op == ReduceOp::count || v == ValueKind::boolean)
      throw egpu::error("egpu::gpu: a count has no square root or mean");
    if (reduction.finish == ReduceFinish::sqrt && !real)
      throw egpu::error("egpu::gpu: the square root of a reduction of values that are not float or double");
    if (reduction.finish != ReduceFinish::sqrt && reduction.finish != ReduceFinish::divide)
      throw egpu::error("egpu::gpu: unknown reduction finish");
  }
}

}  // namespace egpu::detail

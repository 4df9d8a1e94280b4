// The plain description of a reduction that the adapter hands to the
// compiled library: a coefficient-wise program (elementwise_program.hpp)
// whose values are combined over the whole expression, down each column or
// across each row. Nothing here knows Eigen or CUDA.
//
// Results are identical from run to run for the same input, options and
// device: every value is combined in an order fixed by the shape and the
// plan, never by timing (no atomics). Sums are compensated (each partial
// carries its rounding error; float values are summed in double), so a sum
// of n values is accurate to about 2 u sum|x| for any n, better than a
// pairwise sum's log2(n) u sum|x|.
#pragma once

#include <complex>
#include <cstdint>

#include "egpu/detail/elementwise_program.hpp"

namespace egpu::detail {

enum class ReduceOp : std::uint8_t {
  sum,    // Eigen's sum(); with abs2 in the program, squaredNorm()
  prod,   // prod()
  min,    // minCoeff() of real values: NaN if any value is NaN
  max,    // maxCoeff() of real values: NaN if any value is NaN
  count,  // count() of nonzero (true) values, as std::int64_t; all() and any() from it
};

enum class ReduceAxis : std::uint8_t {
  all,          // one value
  each_column,  // colwise(): one value per column (a row vector)
  each_row,     // rowwise(): one value per row (a column vector)
};

// Applied to each reduced value before it is stored: norm() is the square
// root of a sum of abs2, mean() a sum divided by the count.
enum class ReduceFinish : std::uint8_t { none, sqrt, divide };

struct Reduction {
  ReduceOp op = ReduceOp::sum;
  ReduceAxis axis = ReduceAxis::all;
  ReduceFinish finish = ReduceFinish::none;
  std::complex<double> divisor = 1.0;  // for ReduceFinish::divide
};

// How many values the reduction of program gives: 1, cols or rows.
inline std::int64_t reduced_count(const ElementwiseProgram& program, const Reduction& r) {
  return r.axis == ReduceAxis::all ? 1 : r.axis == ReduceAxis::each_column ? program.cols : program.rows;
}

// Appends abs2 to the program: a sum of it is the squared norm.
inline void append_abs2(ElementwiseProgram& program) {
  const ValueKind v = program.code.back().type;
  const ValueKind real = v == ValueKind::c32 ? ValueKind::f32 : v == ValueKind::c64 ? ValueKind::f64 : v;
  emit(program, EwOp::abs2, real, static_cast<int>(program.code.size()) - 1);
}

// Reduces `program` (leaves in host or device memory) on the GPU and writes
// reduced_count values, one after the other, at `result`: of the program's
// value type, or std::int64_t for ReduceOp::count. min, max and divide of
// an empty stretch throw egpu::error (Eigen asserts); sum of none is 0, prod
// 1, count 0. `result` is host memory (the call waits for it), or device
// memory when result_on_device (queued; the program then reads at least
// one element, and the result overlaps none of its leaves).
void reduce(const ElementwiseProgram& program, const Reduction& reduction, void* result, const Options& options,
            bool result_on_device = false);

// Checks the reduction against its program (min and max of real values,
// sqrt of real values, count of any) and throws egpu::error otherwise.
void validate(const ElementwiseProgram& program, const Reduction& reduction);

}  // namespace egpu::detail

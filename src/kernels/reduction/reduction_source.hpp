// From a program and a reduction to the CUDA source of the kernels that
// reduce it (rd_prelude.cuh's passes, instantiated for the program's value
// function and the reduction's accumulator). Like the coefficient-wise
// sources, the text depends on the program's operations, types and leaf
// layouts, never on its pointers, sizes or constants. No CUDA here.
#pragma once

#include <cstdint>
#include <string>

#include "egpu/detail/reduction.hpp"
#include "kernels/elementwise/elementwise_source.hpp"

namespace egpu::kernels {

// The kernels' entry points in every generated reduction source.
inline constexpr const char* kReduceInnerName = "egpu_rd_inner";  // (egpu_ew_params, egpu_rd_pass)
inline constexpr const char* kReduceOuterName = "egpu_rd_outer";  // (egpu_ew_params, egpu_rd_pass)
inline constexpr const char* kReduceFoldName = "egpu_rd_fold";    // (egpu_rd_fold)
inline constexpr const char* kReduceFinishName = "egpu_rd_finish";  // (egpu_rd_finish)

// ew_params.h, ew_prelude.cuh, rd_params.h and rd_prelude.cuh as text.
const char* reduction_prelude();

// The program rewritten so that its dominant leaf (the largest that is not
// a broadcast vector) is read down its columns, and a single row becomes a
// column: each_column then reduces contiguous memory, each_row strided
// memory. A transposed program swaps each_column and each_row; the reduced
// values keep their order.
void to_leaf_order(detail::ElementwiseProgram& program, detail::Reduction& reduction);

// Bytes of one accumulator of `reduction` over values of `value` type.
std::int64_t accumulator_bytes(detail::ReduceOp op, detail::ValueKind value);

// Bytes of one result (the value type, or 8 for count).
std::int64_t result_bytes(detail::ReduceOp op, detail::ValueKind value);

// The source, compiled after reduction_prelude().
std::string reduction_kernel_source(const detail::ElementwiseProgram& program, const detail::Reduction& reduction,
                                    const EwKernelShape& shape);

}  // namespace egpu::kernels

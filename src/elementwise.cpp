// egpu::detail::elementwise, the compiled library's entry for
// coefficient-wise expressions.
#include <string>

#include "egpu/detail/elementwise_program.hpp"
#include "egpu/error.hpp"
#include "executor/elementwise_executor.hpp"
#include "executor/resident_executor.hpp"
#include "runtime/recording.hpp"

namespace egpu::detail {

void elementwise(const ElementwiseProgram& program, const MatrixDesc& out, ScalarKind out_scalar, bool accumulates,
                 const Options& options) {
  validate(program);
  if (out.rows != program.rows || out.cols != program.cols)
    throw egpu::error("egpu::gpu: the destination is " + std::to_string(out.rows) + "x" + std::to_string(out.cols) +
                      ", the expression " + std::to_string(program.rows) + "x" + std::to_string(program.cols));
  if (program.rows == 0 || program.cols == 0) return;
  if (executor::touches_device(program, &out))
    return executor::run_resident_elementwise(program, out, out_scalar, accumulates, options);
  runtime::refuse_while_recording("a coefficient-wise expression of host matrices");
  executor::run_elementwise(program, out, out_scalar, accumulates, options);
}

}  // namespace egpu::detail

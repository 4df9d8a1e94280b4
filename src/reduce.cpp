// egpu::detail::reduce, the compiled library's entry for reductions.
#include <complex>
#include <cstdint>
#include <cstring>
#include <string>

#include "egpu/detail/reduction.hpp"
#include "egpu/error.hpp"
#include "executor/elementwise_executor.hpp"
#include "executor/resident_executor.hpp"
#include "runtime/recording.hpp"

namespace egpu::detail {
namespace {

// The results of reducing stretches of no values: 0 for sum (and count), 1
// for prod; min, max and mean of nothing are errors, as Eigen asserts.
void reduce_nothing(const ElementwiseProgram& program, const Reduction& r, void* result, std::int64_t count) {
  if (r.op == ReduceOp::min || r.op == ReduceOp::max || r.finish == ReduceFinish::divide)
    throw egpu::error(std::string("egpu::gpu: ") +
                      (r.op == ReduceOp::min   ? "minCoeff"
                       : r.op == ReduceOp::max ? "maxCoeff"
                                               : "mean") +
                      " of an empty expression");
  const double one = r.op == ReduceOp::prod ? 1.0 : 0.0;
  auto fill = [&](auto value) {
    auto* out = static_cast<decltype(value)*>(result);
    for (std::int64_t k = 0; k < count; ++k) out[k] = value;
  };
  if (r.op == ReduceOp::count) return fill(std::int64_t(0));
  switch (program.code.back().type) {
    case ValueKind::f32: return fill(static_cast<float>(one));
    case ValueKind::f64: return fill(one);
    case ValueKind::c32: return fill(std::complex<float>(static_cast<float>(one)));
    case ValueKind::c64: return fill(std::complex<double>(one));
    default: throw egpu::error("egpu::gpu: a reduction of booleans other than count");
  }
}

}  // namespace

void reduce(const ElementwiseProgram& program, const Reduction& reduction, void* result, const Options& options,
            bool result_on_device) {
  validate(program, reduction);
  const std::int64_t count = reduced_count(program, reduction);
  if (count == 0) return;
  if (result_on_device) {
    if (program.rows == 0 || program.cols == 0)
      throw egpu::error("egpu::gpu: a reduction into device memory reads no element");
    return executor::run_resident_reduction(program, reduction, result, options, true);
  }
  if (program.rows == 0 || program.cols == 0) return reduce_nothing(program, reduction, result, count);
  if (executor::touches_device(program, nullptr))
    return executor::run_resident_reduction(program, reduction, result, options, false);
  runtime::refuse_while_recording("a reduction of host matrices");
  executor::run_reduction(program, reduction, result, options);
}

}  // namespace egpu::detail

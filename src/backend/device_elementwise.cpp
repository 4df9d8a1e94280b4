#include "backend/device_elementwise.hpp"

#include <algorithm>
#include <cstdint>
#include <string>

#include "egpu/error.hpp"
#include "kernels/elementwise/elementwise_source.hpp"
#include "kernels/elementwise/ew_params.h"
#include "runtime/cuda_check.hpp"
#include "runtime/runtime_kernels.hpp"

namespace egpu::backend {

namespace {
constexpr int kThreads = 256;
// Blocks per SM of the grid-stride loop: 8 x 256 threads fill an SM of
// 2048, enough loads in flight to reach the memory's bandwidth.
constexpr int kBlocksPerSm = 8;
}  // namespace

void device_elementwise(detail::ElementwiseProgram program, detail::MatrixDesc out, detail::ScalarKind out_scalar,
                        runtime::Context& ctx, cudaStream_t stream) {
  detail::validate(program);
  if (out.rows != program.rows || out.cols != program.cols)
    throw egpu::error("egpu::gpu: the destination is " + std::to_string(out.rows) + "x" + std::to_string(out.cols) +
                      ", the expression " + std::to_string(program.rows) + "x" + std::to_string(program.cols));
  const std::int64_t total = program.rows * program.cols;
  if (total == 0) return;
  kernels::to_destination_order(program, out);
  const kernels::EwKernelShape shape = kernels::choose_kernel_shape(program, out, out_scalar);
  const std::string source = kernels::elementwise_kernel_source(program, out_scalar, shape);
  const cudaKernel_t kernel =
      runtime::runtime_kernel(kernels::elementwise_prelude(), source, kernels::kElementwiseKernelName, ctx.device());

  egpu_ew_params params{};
  params.rows = program.rows;
  params.cols = program.cols;
  params.out = out.data;
  params.out_row_stride = out.row_stride;
  params.out_col_stride = out.col_stride;
  for (std::size_t k = 0; k < program.leaves.size(); ++k) {
    const detail::MatrixDesc& m = program.leaves[k].m;
    params.leaf[k] = {m.data, m.row_stride, m.col_stride};
  }
  for (std::size_t k = 0; k < program.constants.size(); ++k)
    params.constant[k] = {program.constants[k].real(), program.constants[k].imag()};

  int sms = 0;
  runtime::cuda_check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, ctx.device()),
                      "cudaDeviceGetAttribute(multiprocessor count)");
  const std::int64_t per_thread = shape.packed ? std::int64_t(shape.pack) * shape.unroll : 1;
  const std::int64_t threads_needed = (total + per_thread - 1) / per_thread;
  const std::int64_t blocks = std::min<std::int64_t>((threads_needed + kThreads - 1) / kThreads,
                                                     std::int64_t(sms) * kBlocksPerSm);
  void* args[] = {&params};
  runtime::cuda_check(cudaLaunchKernel(reinterpret_cast<const void*>(kernel), dim3(static_cast<unsigned>(blocks)),
                                       dim3(kThreads), args, 0, stream),
                      "launching a coefficient-wise kernel");
}

}  // namespace egpu::backend

#include "backend/device_elementwise.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "egpu/error.hpp"
#include "kernels/elementwise/ew_params.h"
#include "runtime/cuda_check.hpp"
#include "runtime/runtime_kernels.hpp"

namespace egpu::backend {

namespace {
constexpr int kThreads = 256;
// A block per tile of the kernel (its grid-stride loop comes into play only
// beyond this many blocks). On an H100, a grid of 8 blocks per SM looping
// over the tiles read and wrote at 0.93-0.98 of the copy rate, a block per
// tile at 0.97-1.03, level with cub::DeviceTransform (bench/RESULTS.md).
constexpr std::int64_t kMaxBlocks = std::int64_t(1) << 30;
}  // namespace

egpu_ew_params leaf_params(const detail::ElementwiseProgram& piece) {
  egpu_ew_params params{};
  params.rows = piece.rows;
  params.cols = piece.cols;
  for (std::size_t k = 0; k < piece.leaves.size(); ++k) {
    const detail::MatrixDesc& m = piece.leaves[k].m;
    params.leaf[k] = {m.data, m.row_stride, m.col_stride};
  }
  for (std::size_t k = 0; k < piece.constants.size(); ++k)
    params.constant[k] = {piece.constants[k].real(), piece.constants[k].imag()};
  return params;
}

int multiprocessors(int device) {
  static std::mutex mutex;
  static std::map<int, int> known;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = known.find(device);
  if (it == known.end()) {
    int sms = 0;
    runtime::cuda_check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device),
                        "cudaDeviceGetAttribute(multiprocessor count)");
    it = known.emplace(device, sms).first;
  }
  return it->second;
}

ElementwiseLauncher::ElementwiseLauncher(const detail::ElementwiseProgram& program, detail::ScalarKind out_scalar,
                                         runtime::Context& ctx)
    : m_ctx(ctx), m_out_scalar(out_scalar) {
  // The library's entries have validated the program (detail::validate).
  kernels::check_limits(program);
}

void ElementwiseLauncher::launch(detail::ElementwiseProgram piece, detail::MatrixDesc out, cudaStream_t stream) {
  if (out.rows != piece.rows || out.cols != piece.cols)
    throw egpu::error("egpu::gpu: the destination is " + std::to_string(out.rows) + "x" + std::to_string(out.cols) +
                      ", the expression " + std::to_string(piece.rows) + "x" + std::to_string(piece.cols));
  const std::int64_t total = piece.rows * piece.cols;
  if (total == 0) return;
  kernels::to_destination_order(piece, out);
  const kernels::EwKernelShape shape = kernels::choose_kernel_shape(piece, out, m_out_scalar);
  if (!m_have_kernel || shape != m_shape) {
    m_kernel = runtime::runtime_kernels(
        kernels::elementwise_prelude(), kernels::kernel_signature(piece, shape, static_cast<int>(m_out_scalar)),
        [&] { return kernels::elementwise_kernel_source(piece, m_out_scalar, shape); },
        {kernels::kElementwiseKernelName}, m_ctx.device())[0];
    m_shape = shape;
    m_have_kernel = true;
  }

  egpu_ew_params params = leaf_params(piece);
  params.out = out.data;
  params.out_row_stride = out.row_stride;
  params.out_col_stride = out.col_stride;

  const std::int64_t per_thread = shape.packed ? std::int64_t(shape.pack) * shape.unroll : 1;
  const std::int64_t threads_needed = (total + per_thread - 1) / per_thread;
  const std::int64_t blocks = std::min<std::int64_t>((threads_needed + kThreads - 1) / kThreads, kMaxBlocks);
  void* args[] = {&params};
  runtime::cuda_check(cudaLaunchKernel(reinterpret_cast<const void*>(m_kernel), dim3(static_cast<unsigned>(blocks)),
                                       dim3(kThreads), args, 0, stream),
                      "launching a coefficient-wise kernel");
}

void device_elementwise(detail::ElementwiseProgram program, detail::MatrixDesc out, detail::ScalarKind out_scalar,
                        runtime::Context& ctx, cudaStream_t stream) {
  ElementwiseLauncher launcher(program, out_scalar, ctx);
  launcher.launch(std::move(program), out, stream);
}

}  // namespace egpu::backend

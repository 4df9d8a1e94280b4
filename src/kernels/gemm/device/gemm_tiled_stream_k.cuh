// Stream-K launch of a tiled configuration (stream_k_plan.hpp, kernel/
// gemm_tiled_stream_k_kernel.cuh): the workspace of the shared tiles'
// arrival counters and partial slots, from the stream-ordered pool, then
// one launch of plan.ctas + plan.dp_tiles blocks.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "egpu/error.hpp"
#include "kernels/gemm/gemm_tile_config.hpp"
#include "kernels/gemm/kernel/gemm_tiled_kernel.cuh"
#include "kernels/gemm/kernel/gemm_tiled_stream_k_kernel.cuh"
#include "kernels/gemm/stream_k_plan.hpp"
#include "runtime/cuda_check.hpp"
#include "runtime/device_buffer.hpp"

namespace egpu::kernels::device {

// Launches the product of p (a plain launch's parameters: one k-slice) on
// the plan. False, with nothing queued, when the workspace cannot be had:
// the caller then runs the plain grid.
template <class T, class Tag, bool A_XC, bool B_XC, bool C_ROWS>
bool launch_stream_k(const kernel::GemmParams<T>& p, const StreamKPlan& plan, std::int64_t m_tiles,
                     cudaStream_t stream) {
  using S = TileShape<T, Tag>;
  const std::int64_t blocks = plan.ctas + plan.dp_tiles;
  if (blocks > 0x7fffffff) throw egpu::error("gemm_tiled (stream-K): too many tiles for the grid");
  // Counters first, padded to 256 bytes so that the partials stay aligned.
  const std::size_t counter_bytes = (std::size_t(plan.sk_tiles) * sizeof(int) + 255) / 256 * 256;
  const std::size_t slot_elems = std::size_t(S::threads) * S::tm * S::tn;
  runtime::DeviceBuffer ws;
  try {
    ws = runtime::DeviceBuffer(counter_bytes + 2 * std::size_t(plan.ctas) * slot_elems * sizeof(T),
                               stream);
  } catch (const egpu::error&) {
    return false;
  }
  runtime::cuda_check(cudaMemsetAsync(ws.get(), 0, counter_bytes, stream),
                      "cudaMemsetAsync(stream-K arrival counters)");
  kernel::StreamKParams<T> q{};
  static_cast<kernel::GemmParams<T>&>(q) = p;
  q.plan = plan;
  q.m_tiles = m_tiles;
  q.arrivals = ws.as<int>();
  q.partials = reinterpret_cast<T*>(static_cast<char*>(ws.get()) + counter_bytes);
  kernel::gemm_tiled_stream_k_kernel<T, Tag, A_XC, B_XC, C_ROWS>
      <<<unsigned(blocks), S::threads, 0, stream>>>(q);
  runtime::launch_check("gemm_tiled_stream_k_kernel");
  return true;
}

}  // namespace egpu::kernels::device

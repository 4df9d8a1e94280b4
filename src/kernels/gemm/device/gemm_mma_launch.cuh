// Launch of one tensor-core configuration: maps GemmArgs onto MmaParams,
// decides the 16-byte cp.async path per operand (or the element map for
// both), picks the kernel of the operands' layouts, sizes the grid, launches
// and checks. Used by gemm_mma.cu and by bench/gemm_probe.cu (which also
// times experimental shapes).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "egpu/error.hpp"
#include "kernels/gemm/device/gemm_split_k.cuh"
#include "kernels/gemm/device/product_params.cuh"
#include "kernels/gemm/gemm_args.hpp"
#include "kernels/gemm/gemm_mma_config.hpp"
#include "kernels/gemm/gemm_tile_config.hpp"  // vector_elems
#include "kernels/gemm/kernel/gemm_mma_kernel.cuh"
#include "runtime/cuda_check.hpp"
#include "runtime/current_device.hpp"

namespace egpu::kernels::device {

// The 16-byte cp.async path of an operand needs its base aligned to 16 bytes
// and every line along the strided direction to start on a 16-byte boundary.
template <class T>
bool mma_vector_ok(const T* ptr, std::int64_t ld) {
  return reinterpret_cast<std::uintptr_t>(ptr) % 16 == 0 && ld % vector_elems<T> == 0;
}

template <class T, class Tag, MathMode M, bool AK, bool BK, bool EL, bool CHAINED>
void launch_mma_kernel(const kernel::MmaParams<T>& p, std::int64_t tiles, int slices,
                       cudaStream_t stream) {
  using Tr = kernel::MmaKernelTraits<T, Tag, M, AK, BK, EL>;
  auto* fn = &kernel::gemm_mma_kernel<T, Tag, M, AK, BK, EL, CHAINED>;
  // Above 48 KB, dynamic shared memory needs the kernel's opt-in (once).
  static const cudaError_t attr =
      cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, Tr::smem_bytes);
  runtime::cuda_check(attr, "cudaFuncSetAttribute(gemm_mma_kernel)");
  // Tiles on x (the kernel loops beyond 2^31 - 1; chained, beyond the
  // resident blocks), k-slices on y.
  std::int64_t blocks = tiles < 0x7fffffff ? tiles : 0x7fffffff;
  if constexpr (CHAINED) {  // the resident blocks: min_blocks per SM (as plan_split_k counts them)
    const std::int64_t resident = std::int64_t(runtime::current_multiprocessors()) * Tr::S::min_blocks / slices;
    if (resident > 0 && resident < blocks) blocks = resident;
  }
  // A programmatic dependent launch: the blocks may start while the kernel
  // before them in the stream (an operand copy, an expansion) finishes;
  // the kernel waits for it (griddepcontrol.wait) before touching memory.
  cudaLaunchAttribute dependent_attr{};
  dependent_attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  dependent_attr.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3{unsigned(blocks), unsigned(slices)};
  cfg.blockDim = dim3{unsigned(Tr::S::threads)};
  cfg.dynamicSmemBytes = Tr::smem_bytes;
  cfg.stream = stream;
  cfg.attrs = &dependent_attr;
  cfg.numAttrs = runtime::current_compute_major() >= 9 ? 1 : 0;  // per launch: devices may differ
  runtime::cuda_check(cudaLaunchKernelEx(&cfg, fn, p), "launch of gemm_mma_kernel");
  runtime::launch_check("gemm_mma_kernel");
}

// Chained tiles (MmaDims::chain_max_k) for k up to the tag's bound.
template <class T, class Tag, MathMode M, bool AK, bool BK, bool EL>
void launch_mma_chain(const kernel::MmaParams<T>& p, std::int64_t tiles, int slices,
                      cudaStream_t stream) {
  if constexpr (MmaShape<T, Tag, M>::chain_max_k > 0) {
    if (p.k_slice <= MmaShape<T, Tag, M>::chain_max_k) {
      launch_mma_kernel<T, Tag, M, AK, BK, EL, true>(p, tiles, slices, stream);
      return;
    }
  }
  launch_mma_kernel<T, Tag, M, AK, BK, EL, false>(p, tiles, slices, stream);
}

// The copy map of the product: for float, elements (EL) where either
// operand is off the 16-byte grid (tf32x3 on 4095x4097x511: 0.83 -> 0.95 of
// SGEMM against the chunk map's element-by-element chunks; gemm_mma copies
// the operands of products from operand_copy_min_side onto the grid
// instead). fp64 keeps the chunk map there: its large tile would spill
// twice as much on the element map, and its odd shapes run at cuBLAS's rate
// already.
template <class T, class Tag, MathMode M, bool AK, bool BK>
void launch_mma_layout(const kernel::MmaParams<T>& p, std::int64_t tiles, int slices,
                       cudaStream_t stream) {
  if constexpr (sizeof(T) == 4) {
    if (p.k > 0 && !(p.a_vec && p.b_vec)) {
      launch_mma_chain<T, Tag, M, AK, BK, true>(p, tiles, slices, stream);
      return;
    }
  }
  launch_mma_chain<T, Tag, M, AK, BK, false>(p, tiles, slices, stream);
}

// Requires m, n > 0. With slices.count > 1, computes the split-k partial
// products of device/gemm_split_k.cuh's launcher contract (slices on grid y).
template <class T, class Tag, MathMode M>
void launch_mma(const GemmArgs<T>& g, cudaStream_t stream, const KSlices& slices = {}) {
  using S = MmaShape<T, Tag, M>;
  const int nz = slices.count > 1 ? slices.count : 1;
  if (nz > 65535) throw egpu::error("gemm_mma: too many k-slices");
  kernel::MmaParams<T> p{};
  set_product_params(p, g, slices, mma_vector_ok(g.a, g.lda), mma_vector_ok(g.b, g.ldb));
  p.ldc = g.ldc;
  p.m_tiles = (g.m + S::bm - 1) / S::bm;
  p.n_tiles = (g.n + S::bn - 1) / S::bn;
  const std::int64_t tiles = p.m_tiles * p.n_tiles;
  const bool ak = g.a_layout == Layout::row_major, bk = g.b_layout == Layout::col_major;
  if (!ak && !bk)
    launch_mma_layout<T, Tag, M, false, false>(p, tiles, nz, stream);
  else if (!ak && bk)
    launch_mma_layout<T, Tag, M, false, true>(p, tiles, nz, stream);
  else if (ak && !bk)
    launch_mma_layout<T, Tag, M, true, false>(p, tiles, nz, stream);
  else
    launch_mma_layout<T, Tag, M, true, true>(p, tiles, nz, stream);
}

}  // namespace egpu::kernels::device

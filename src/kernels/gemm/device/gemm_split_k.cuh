// Split-k at the device level, for any configuration of the GEMM family.
//
// A product whose C tiles are too few to occupy the GPU (one short side,
// large k) is cut along k into `count` slices. One launch of the wrapped
// configuration computes every slice, each into its own column-major
// m x n partial product in a workspace; a reduction kernel then applies
// alpha and beta into C. The workspace is stream-ordered memory
// (cudaMallocAsync / cudaFreeAsync on the launch stream).
//
// Contract of a wrapped launcher, called as launch(part, slices):
//   compute, for every z < slices.count, the product of part's operands
//   over k in [z * k_slice, min(part.k, (z + 1) * k_slice)) into the
//   column-major part.c + z * slices.c_slice (leading dimension part.ldc),
//   with part.alpha = 1 and C not read (part.beta_is_zero).
// Kernels that take the slices on a grid dimension do this in one launch
// (the SIMT family: blockIdx.z). Any launcher of plain products is wrapped
// by slices_one_by_one, which runs the slices as separate launches.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "egpu/error.hpp"
#include "kernels/gemm/gemm_args.hpp"
#include "kernels/gemm/gemm_problem.hpp"
#include "kernels/gemm/gemm_split_k_plan.hpp"
#include "kernels/gemm/kernel/split_k_reduce_kernel.cuh"
#include "runtime/cuda_check.hpp"

namespace egpu::kernels::device {

// Operand bases moved to depth k0 along k.
template <class T>
void advance_k(GemmArgs<T>& g, std::int64_t k0) {
  g.a += g.a_layout == Layout::col_major ? k0 * g.lda : k0;  // (i, p) at a[i + p * lda]
  g.b += g.b_layout == Layout::row_major ? k0 * g.ldb : k0;  // (p, j) at b[p * ldb + j]
}

// Wraps launch_plain(const GemmArgs<T>&), a launcher of plain products,
// into the contract above: one launch per slice.
template <class T, class LaunchPlain>
auto slices_one_by_one(LaunchPlain launch_plain) {
  return [launch_plain](const GemmArgs<T>& part, const KSlices& s) {
    for (int z = 0; z < s.count; ++z) {
      GemmArgs<T> q = part;
      const std::int64_t k0 = std::int64_t(z) * s.k_slice;
      advance_k(q, k0);
      q.k = part.k - k0 < s.k_slice ? part.k - k0 : s.k_slice;
      q.c = part.c + z * s.c_slice;
      launch_plain(q);
    }
  };
}

// Split-k product of g (m, n > 0; s.count >= 2 from plan_split_k for the
// wrapped configuration). C(i, j) is at g.c[i + j * g.ldc], or at
// g.c[i * g.ldc + j] when c_transposed (g from transpose_problem).
template <class T, class Launch>
void gemm_split_k(const GemmArgs<T>& g, const KSlices& s, cudaStream_t stream, Launch&& launch,
                  bool c_transposed = false) {
  const std::size_t bytes = std::size_t(s.count) * std::size_t(s.c_slice) * sizeof(T);
  void* ws = nullptr;
  runtime::cuda_check(cudaMallocAsync(&ws, bytes, stream), "cudaMallocAsync(split-k workspace)");
  struct Release {  // the workspace goes back on every path, after the work queued before
    void* p;
    cudaStream_t st;
    bool done = false;
    void free_now() {
      done = true;
      runtime::cuda_check(cudaFreeAsync(p, st), "cudaFreeAsync(split-k workspace)");
    }
    ~Release() {
      if (!done) (void)cudaFreeAsync(p, st);
    }
  } release{ws, stream};

  GemmArgs<T> part = g;
  part.c = static_cast<T*>(ws);
  part.ldc = g.m;
  if constexpr (is_complex<T>::value) {
    part.alpha = T{1, 0};
    part.beta = T{0, 0};
  } else {
    part.alpha = T(1);
    part.beta = T(0);
  }
  part.beta_is_zero = true;
  launch(part, s);

  const std::int64_t bx = (g.m + 255) / 256;
  if (bx > 0x7fffffff) throw egpu::error("gemm split-k: m too large for the grid");
  const dim3 grid(unsigned(bx), unsigned(g.n < 65535 ? g.n : 65535));
  kernel::split_k_reduce_kernel<T><<<grid, 256, 0, stream>>>(
      part.c, s.count, s.c_slice, g.m, g.n, g.c, c_transposed ? g.ldc : 1,
      c_transposed ? 1 : g.ldc, g.alpha, g.beta, g.beta_is_zero);
  runtime::launch_check("split_k_reduce_kernel");
  release.free_now();
}

}  // namespace egpu::kernels::device

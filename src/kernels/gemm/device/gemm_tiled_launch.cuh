// Launch of one configuration of the tiled GEMM family: maps GemmArgs onto
// the kernel's strided operand views, decides the vectorised global-load
// path per operand, sizes the grid, launches and checks. Used by
// gemm_tiled.cu (which picks the configuration) and by bench/gemm_probe.cu
// (which also times experimental tile shapes).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "egpu/error.hpp"
#include "kernels/gemm/gemm_args.hpp"
#include "kernels/gemm/gemm_tile_config.hpp"
#include "kernels/gemm/kernel/gemm_tiled_kernel.cuh"
#include "runtime/cuda_check.hpp"

namespace egpu::kernels::device {

inline std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// The vector path of an operand needs its base aligned to the vector and
// every line along the strided direction to start on a vector boundary.
template <class T, int V>
bool vector_ok(const T* ptr, std::int64_t ld) {
  if (V == 1) return true;
  return reinterpret_cast<std::uintptr_t>(ptr) % (std::uintptr_t(V) * sizeof(T)) == 0 &&
         ld % V == 0;
}

// Requires m, n > 0.
template <class T, class Tag>
void launch_tiled(const GemmArgs<T>& g, cudaStream_t stream) {
  using S = TileShape<T, Tag>;
  using LoaderA = block::TileLoader<T, S::bm, S::bk, S::threads>;
  using LoaderB = block::TileLoader<T, S::bn, S::bk, S::threads>;

  kernel::GemmParams<T> p{};
  p.m = g.m;
  p.n = g.n;
  p.k = g.k;
  p.a = g.a;
  p.a_x_contig = g.a_layout == Layout::col_major;  // (i, p) at a[i + p * lda]
  p.a_sx = p.a_x_contig ? 1 : g.lda;
  p.a_sp = p.a_x_contig ? g.lda : 1;
  p.b = g.b;
  p.b_x_contig = g.b_layout == Layout::row_major;  // (p, j) at b[p * ldb + j]
  p.b_sx = p.b_x_contig ? 1 : g.ldb;
  p.b_sp = p.b_x_contig ? g.ldb : 1;
  p.c = g.c;
  p.ldc = g.ldc;
  p.alpha = g.alpha;
  p.beta = g.beta;
  p.beta_is_zero = g.beta_is_zero;
  p.conj_a = is_complex<T>::value && g.conj_a;
  p.conj_b = is_complex<T>::value && g.conj_b;
  p.a_vec = g.k > 0 && vector_ok<T, LoaderA::V>(g.a, g.lda);
  p.b_vec = g.k > 0 && vector_ok<T, LoaderB::V>(g.b, g.ldb);

  const std::int64_t m_tiles = ceil_div(g.m, S::bm);
  const std::int64_t n_tiles = ceil_div(g.n, S::bn);
  if (m_tiles > 0x7fffffff) throw egpu::error("gemm_tiled: m too large for the grid");
  // Row tiles on x (limit 2^31-1); column tiles on y, capped at 65535: the
  // kernel loops over the rest.
  const dim3 grid(unsigned(m_tiles), unsigned(n_tiles < 65535 ? n_tiles : 65535));
  kernel::gemm_tiled_kernel<T, Tag><<<grid, S::threads, 0, stream>>>(p);
  runtime::launch_check("gemm_tiled_kernel");
}

}  // namespace egpu::kernels::device

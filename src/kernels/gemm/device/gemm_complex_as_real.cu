// complex<double> products as one real fp64 product
// (device/gemm_complex_as_real.hpp).
#include "kernels/gemm/device/gemm_complex_as_real.hpp"

#include <cstdint>

#include "egpu/error.hpp"
#include "kernels/gemm/kernel/complex_as_real_kernels.cuh"
#include "runtime/cuda_check.hpp"
#include "runtime/device_buffer.hpp"

namespace egpu::kernels::device {

// From n = 2048 the expansion of A costs about 4 % of the product by its
// traffic (80 / n); not timed between n = 64 (0.81 on the complex kernels)
// and n = 4096.
constexpr std::int64_t complex_as_real_min_n = 2048;

bool runs_complex_as_real(const GemmArgs<cdouble>& g) {
  return g.n >= complex_as_real_min_n && g.m > 0 && g.k > 0 && (g.beta_is_zero || g.beta.im == 0);
}

namespace {

dim3 grid_for(std::int64_t elements) {
  const std::int64_t blocks = (elements + kernel::expand_threads - 1) / kernel::expand_threads;
  return dim3(unsigned(blocks < 65536 ? blocks : 65536));
}

}  // namespace

bool gemm_complex_as_real(const GemmArgs<cdouble>& g, cudaStream_t stream) {
  // B_r is B's own storage where op(B) is B itself; else a copy (k x n, ld k).
  const bool copy_b = g.b_layout != Layout::col_major || g.conj_b;
  const std::size_t elems_a = std::size_t(g.m) * std::size_t(2 * g.k);  // complex elements of A_r
  const std::size_t elems_b = copy_b ? std::size_t(g.k) * std::size_t(g.n) : 0;
  runtime::DeviceBuffer buffer;
  try {
    buffer = runtime::DeviceBuffer((elems_a + elems_b) * sizeof(cdouble), stream);
  } catch (const egpu::error&) {
    return false;
  }
  cdouble* const a_r = buffer.as<cdouble>();
  cdouble* const b_copy = a_r + elems_a;

  kernel::expand_a_kernel<<<grid_for(g.m * g.k), kernel::expand_threads, 0, stream>>>(
      g.a, g.lda, g.a_layout == Layout::row_major, g.conj_a, g.alpha, g.m, g.k, a_r);
  runtime::launch_check("expand_a_kernel (complex product as a real one)");
  if (copy_b) {
    kernel::copy_op_b_kernel<<<grid_for(g.k * g.n), kernel::expand_threads, 0, stream>>>(
        g.b, g.ldb, g.b_layout == Layout::row_major, g.conj_b, g.k, g.n, b_copy);
    runtime::launch_check("copy_op_b_kernel (complex product as a real one)");
  }
  GemmArgs<double> h;
  h.m = 2 * g.m;
  h.n = g.n;
  h.k = 2 * g.k;
  h.a = reinterpret_cast<const double*>(a_r);
  h.lda = 2 * g.m;
  h.a_layout = Layout::col_major;
  h.b = reinterpret_cast<const double*>(copy_b ? b_copy : g.b);
  h.ldb = 2 * (copy_b ? g.k : g.ldb);
  h.b_layout = Layout::col_major;
  h.c = reinterpret_cast<double*>(g.c);
  h.ldc = 2 * g.ldc;
  h.alpha = 1;
  h.beta = g.beta.re;
  h.beta_is_zero = g.beta_is_zero;
  h.math = MathMode::exact;
  gemm_tiled<double>(h, static_cast<void*>(stream), GemmConfig::automatic);
  return true;
}

}  // namespace egpu::kernels::device

// egpu::detail::gemm, the compiled library's entry for products.
#include <atomic>
#include <type_traits>

#include "egpu/detail/gemm_descriptor.hpp"
#include "egpu/detail/testing.hpp"
#include "egpu/error.hpp"
#include "executor/gemm_executor.hpp"
#include "executor/resident_executor.hpp"
#include "runtime/recording.hpp"

namespace egpu::detail {
namespace {

template <class T>
T from_complex(const std::complex<double>& z) {
  if constexpr (std::is_floating_point_v<T>)
    return static_cast<T>(z.real());
  else
    return T(z);
}

// k == 0: the product is zero, so C = beta * C (or zeros); no GPU needed.
template <class T>
void scale_c(const GemmDesc& d) {
  T* c = static_cast<T*>(d.c.data);
  const T beta = from_complex<T>(d.beta);
  for (std::int64_t j = 0; j < d.n; ++j)
    for (std::int64_t i = 0; i < d.m; ++i) {
      T& x = c[i * d.c.row_stride + j * d.c.col_stride];
      x = d.beta_is_zero ? T(0) : beta * x;
    }
}

std::atomic<std::size_t> g_products_on_gpu{0};

}  // namespace

std::size_t products_run_on_gpu() { return g_products_on_gpu.load(); }

void gemm(const GemmDesc& desc, const Options& options) {
  validate(desc);
  if (desc.m == 0 || desc.n == 0) return;
  ++g_products_on_gpu;
  if (executor::touches_device(desc)) return executor::run_resident_gemm(desc, options);
  runtime::refuse_while_recording("a product of host matrices");
  if (desc.k == 0) {
    switch (desc.scalar) {
      case ScalarKind::f32: return scale_c<float>(desc);
      case ScalarKind::f64: return scale_c<double>(desc);
      case ScalarKind::c32: return scale_c<std::complex<float>>(desc);
      case ScalarKind::c64: return scale_c<std::complex<double>>(desc);
    }
  }
  executor::run_gemm(desc, options);
}

}  // namespace egpu::detail

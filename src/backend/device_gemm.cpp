#include "backend/device_gemm.hpp"

namespace egpu::backend {

template <class T>
void device_gemm(Backend backend, const kernels::GemmArgs<T>& args, runtime::Context& ctx) {
  if (backend == Backend::cublas)
    cublas_gemm(args, ctx);
  else
    kernels::gemm_tiled(args, ctx.stream());
}

template void device_gemm<float>(Backend, const kernels::GemmArgs<float>&, runtime::Context&);
template void device_gemm<double>(Backend, const kernels::GemmArgs<double>&, runtime::Context&);
template void device_gemm<kernels::cfloat>(Backend, const kernels::GemmArgs<kernels::cfloat>&, runtime::Context&);
template void device_gemm<kernels::cdouble>(Backend, const kernels::GemmArgs<kernels::cdouble>&, runtime::Context&);

}  // namespace egpu::backend

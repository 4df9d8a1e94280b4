#include "backend/device_gemm.hpp"

namespace egpu::backend {

template <class T>
void device_gemm(Backend backend, const kernels::GemmArgs<T>& args, runtime::Context& ctx, cudaStream_t stream) {
  if (backend == Backend::cublas)
    cublas_gemm(args, ctx, stream);
  else
    kernels::gemm_tiled(args, stream);
}

template void device_gemm<float>(Backend, const kernels::GemmArgs<float>&, runtime::Context&, cudaStream_t);
template void device_gemm<double>(Backend, const kernels::GemmArgs<double>&, runtime::Context&, cudaStream_t);
template void device_gemm<kernels::cfloat>(Backend, const kernels::GemmArgs<kernels::cfloat>&, runtime::Context&, cudaStream_t);
template void device_gemm<kernels::cdouble>(Backend, const kernels::GemmArgs<kernels::cdouble>&, runtime::Context&, cudaStream_t);

}  // namespace egpu::backend

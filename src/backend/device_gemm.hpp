// One product on device memory by the chosen backend: the own tiled kernel
// family or cuBLAS. Both take the same GemmArgs.
#pragma once

#include "egpu/options.hpp"
#include "kernels/gemm/gemm_args.hpp"
#include "runtime/context.hpp"

namespace egpu::backend {

// Whether the backend can conjugate a column-major operand itself (cuBLAS
// has no conjugate-without-transpose op; the own kernel has).
inline bool conjugates_col_major(Backend backend) { return backend == Backend::own; }

// Queues the product on `stream` (one of ctx's streams).
template <class T>
void device_gemm(Backend backend, const kernels::GemmArgs<T>& args, runtime::Context& ctx, cudaStream_t stream);

template <class T>
void cublas_gemm(const kernels::GemmArgs<T>& args, runtime::Context& ctx, cudaStream_t stream);

}  // namespace egpu::backend

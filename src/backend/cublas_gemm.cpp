// The cuBLAS backend: GemmArgs mapped onto cublas<t>gemm_64 (64-bit sizes).
#include <cublas_v2.h>
#include <cuComplex.h>

#include <type_traits>

#include "backend/device_gemm.hpp"
#include "egpu/error.hpp"

namespace egpu::backend {
namespace {

cublasOperation_t op_of(kernels::Layout layout, bool conj) {
  if (layout == kernels::Layout::col_major) {
    if (conj) throw egpu::error("cuBLAS cannot conjugate a column-major operand (the executor conjugates it on upload)");
    return CUBLAS_OP_N;
  }
  return conj ? CUBLAS_OP_C : CUBLAS_OP_T;
}

template <class T> struct cublas_type { using type = T; };
template <> struct cublas_type<kernels::cfloat> { using type = cuComplex; };
template <> struct cublas_type<kernels::cdouble> { using type = cuDoubleComplex; };

template <class T>
const typename cublas_type<T>::type* cast(const T* p) {
  return reinterpret_cast<const typename cublas_type<T>::type*>(p);
}
template <class T>
typename cublas_type<T>::type* cast(T* p) {
  return reinterpret_cast<typename cublas_type<T>::type*>(p);
}

cublasStatus_t call(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, std::int64_t m, std::int64_t n,
                    std::int64_t k, const float* alpha, const float* a, std::int64_t lda, const float* b,
                    std::int64_t ldb, const float* beta, float* c, std::int64_t ldc) {
  return cublasSgemm_64(h, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
cublasStatus_t call(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, std::int64_t m, std::int64_t n,
                    std::int64_t k, const double* alpha, const double* a, std::int64_t lda, const double* b,
                    std::int64_t ldb, const double* beta, double* c, std::int64_t ldc) {
  return cublasDgemm_64(h, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
cublasStatus_t call(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, std::int64_t m, std::int64_t n,
                    std::int64_t k, const cuComplex* alpha, const cuComplex* a, std::int64_t lda, const cuComplex* b,
                    std::int64_t ldb, const cuComplex* beta, cuComplex* c, std::int64_t ldc) {
  return cublasCgemm_64(h, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
cublasStatus_t call(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, std::int64_t m, std::int64_t n,
                    std::int64_t k, const cuDoubleComplex* alpha, const cuDoubleComplex* a, std::int64_t lda,
                    const cuDoubleComplex* b, std::int64_t ldb, const cuDoubleComplex* beta, cuDoubleComplex* c,
                    std::int64_t ldc) {
  return cublasZgemm_64(h, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

}  // namespace

template <class T>
void cublas_gemm(const kernels::GemmArgs<T>& args, runtime::Context& ctx, cudaStream_t stream) {
  if (args.m == 0 || args.n == 0) return;
  runtime::cublas_check(cublasSetStream(ctx.cublas(), stream), "cublasSetStream");
  // TF32 tensor cores only where asked; cuBLAS has no split-operand mode, so
  // tf32x3 runs its exact fp32 GEMM (the accuracy tf32x3 stands for).
  const bool tf32 = std::is_same<T, float>::value && args.math == kernels::MathMode::tf32;
  runtime::cublas_check(cublasSetMathMode(ctx.cublas(), tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH),
                        "cublasSetMathMode");
  const T beta = args.beta_is_zero ? T{} : args.beta;  // cuBLAS reads no C when beta is exactly zero
  // cuBLAS wants lda >= 1 and a valid ld even when k == 0.
  runtime::cublas_check(
      call(ctx.cublas(), op_of(args.a_layout, args.conj_a), op_of(args.b_layout, args.conj_b), args.m, args.n,
           args.k, cast(&args.alpha), cast(args.a), std::max<std::int64_t>(args.lda, 1), cast(args.b),
           std::max<std::int64_t>(args.ldb, 1), cast(&beta), cast(args.c), args.ldc),
      "cublas gemm");
}

template void cublas_gemm<float>(const kernels::GemmArgs<float>&, runtime::Context&, cudaStream_t);
template void cublas_gemm<double>(const kernels::GemmArgs<double>&, runtime::Context&, cudaStream_t);
template void cublas_gemm<kernels::cfloat>(const kernels::GemmArgs<kernels::cfloat>&, runtime::Context&, cudaStream_t);
template void cublas_gemm<kernels::cdouble>(const kernels::GemmArgs<kernels::cdouble>&, runtime::Context&, cudaStream_t);

}  // namespace egpu::backend

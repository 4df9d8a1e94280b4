// CUDA and cuBLAS pieces shared by egpu-bench's device-side code
// (gpu_baselines.cpp, gemm.cpp): status checks, RAII holders for streams,
// events and memory, event timing on a stream, the host -> kernel scalar
// mapping and cublas<t>gemm overloads by scalar. Host C++ only.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <complex>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/gemm/gemm_args.hpp"

namespace egpu_bench::gpu {

inline void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    (void)cudaGetLastError();
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
  }
}

inline void check(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string(what) + ": cuBLAS status " + std::to_string(static_cast<int>(status)));
}

// RAII holders, freed in reverse order of creation.
struct Stream {
  cudaStream_t s = nullptr;
  Stream() { check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate"); }
  ~Stream() { cudaStreamDestroy(s); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
};

struct Event {
  cudaEvent_t e = nullptr;
  Event() { check(cudaEventCreate(&e), "cudaEventCreate"); }
  ~Event() { cudaEventDestroy(e); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
};

// Device memory from the device's default stream-ordered pool, which egpu
// also draws from (its release threshold keeps freed memory there): what
// the bench frees goes back to where egpu's calls find it.
struct DeviceMemory {
  void* p = nullptr;
  cudaStream_t stream;
  DeviceMemory(std::size_t bytes, cudaStream_t s) : stream(s) {
    check(cudaMallocAsync(&p, bytes, stream), "cudaMallocAsync");
  }
  ~DeviceMemory() {
    cudaFreeAsync(p, stream);
    cudaStreamSynchronize(stream);
  }
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;
};

struct PinnedMemory {
  void* p = nullptr;
  explicit PinnedMemory(std::size_t bytes) { check(cudaMallocHost(&p, bytes), "cudaMallocHost"); }
  ~PinnedMemory() { cudaFreeHost(p); }
  PinnedMemory(const PinnedMemory&) = delete;
  PinnedMemory& operator=(const PinnedMemory&) = delete;
};

// A cuBLAS handle bound to a stream.
struct Cublas {
  cublasHandle_t h = nullptr;
  explicit Cublas(cudaStream_t stream) {
    check(cublasCreate(&h), "cublasCreate");
    const cublasStatus_t status = cublasSetStream(h, stream);
    if (status != CUBLAS_STATUS_SUCCESS) cublasDestroy(h);
    check(status, "cublasSetStream");
  }
  ~Cublas() { cublasDestroy(h); }
  Cublas(const Cublas&) = delete;
  Cublas& operator=(const Cublas&) = delete;
};

// Seconds of `repeats` event-timed runs of enqueue(stream) after `warmups`.
template <class F>
std::vector<double> time_on_stream(cudaStream_t stream, int warmups, int repeats, F&& enqueue) {
  Event start, stop;
  for (int i = 0; i < warmups; ++i) enqueue();
  check(cudaStreamSynchronize(stream), "warm-up");
  std::vector<double> seconds;
  for (int i = 0; i < repeats; ++i) {
    check(cudaEventRecord(start.e, stream), "cudaEventRecord");
    enqueue();
    check(cudaEventRecord(stop.e, stream), "cudaEventRecord");
    check(cudaEventSynchronize(stop.e), "cudaEventSynchronize");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start.e, stop.e), "cudaEventElapsedTime");
    seconds.push_back(1e-3 * static_cast<double>(ms));
  }
  return seconds;
}

// Host scalar -> the kernels' scalar (layout-compatible).
template <class S> struct kernel_type { using type = S; };
template <> struct kernel_type<std::complex<float>> { using type = egpu::kernels::cfloat; };
template <> struct kernel_type<std::complex<double>> { using type = egpu::kernels::cdouble; };

// 1 and 0 of a kernel scalar.
template <class K>
K one() {
  if constexpr (egpu::kernels::is_complex<K>::value) return K{1, 0};
  else return K(1);
}
template <class K>
K zero() {
  if constexpr (egpu::kernels::is_complex<K>::value) return K{0, 0};
  else return K(0);
}

// cublas<t>gemm by host scalar: C = alpha op(A) op(B) + beta C, column-major.
inline cublasStatus_t cublas_gemm(cublasHandle_t h, cublasOperation_t op_a, cublasOperation_t op_b, int m, int n,
                                  int k, float alpha, const float* a, int lda, const float* b, int ldb, float beta,
                                  float* c, int ldc) {
  return cublasSgemm(h, op_a, op_b, m, n, k, &alpha, a, lda, b, ldb, &beta, c, ldc);
}
inline cublasStatus_t cublas_gemm(cublasHandle_t h, cublasOperation_t op_a, cublasOperation_t op_b, int m, int n,
                                  int k, double alpha, const double* a, int lda, const double* b, int ldb,
                                  double beta, double* c, int ldc) {
  return cublasDgemm(h, op_a, op_b, m, n, k, &alpha, a, lda, b, ldb, &beta, c, ldc);
}
inline cublasStatus_t cublas_gemm(cublasHandle_t h, cublasOperation_t op_a, cublasOperation_t op_b, int m, int n,
                                  int k, std::complex<float> alpha, const std::complex<float>* a, int lda,
                                  const std::complex<float>* b, int ldb, std::complex<float> beta,
                                  std::complex<float>* c, int ldc) {
  return cublasCgemm(h, op_a, op_b, m, n, k, reinterpret_cast<const cuComplex*>(&alpha),
                     reinterpret_cast<const cuComplex*>(a), lda, reinterpret_cast<const cuComplex*>(b), ldb,
                     reinterpret_cast<const cuComplex*>(&beta), reinterpret_cast<cuComplex*>(c), ldc);
}
inline cublasStatus_t cublas_gemm(cublasHandle_t h, cublasOperation_t op_a, cublasOperation_t op_b, int m, int n,
                                  int k, std::complex<double> alpha, const std::complex<double>* a, int lda,
                                  const std::complex<double>* b, int ldb, std::complex<double> beta,
                                  std::complex<double>* c, int ldc) {
  return cublasZgemm(h, op_a, op_b, m, n, k, reinterpret_cast<const cuDoubleComplex*>(&alpha),
                     reinterpret_cast<const cuDoubleComplex*>(a), lda, reinterpret_cast<const cuDoubleComplex*>(b),
                     ldb, reinterpret_cast<const cuDoubleComplex*>(&beta), reinterpret_cast<cuDoubleComplex*>(c),
                     ldc);
}

}  // namespace egpu_bench::gpu

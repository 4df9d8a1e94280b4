// CUDA and cuBLAS pieces shared by egpu-bench's device-side code
// (gpu_baselines.cpp, gemm.cpp): status checks, RAII holders for streams,
// events and memory, event timing on a stream, the host -> kernel scalar
// mapping and cublas<t>gemm overloads by scalar. Host C++ only.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <atomic>
#include <chrono>
#include <complex>
#include <cstddef>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
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

// Holds a stream behind a host function until release(): the calls queued
// behind it start only once the host has queued all of them, so an event
// recorded after the hold times the device's work and not the host's
// launch latency. A call that waits for its own stream would wait for the
// hold: the hold gives way after a second and expired() says so.
class StreamHold {
  struct State {
    std::atomic<bool> released{false}, expired{false};
  };

 public:
  explicit StreamHold(cudaStream_t stream) : m_state(std::make_shared<State>()) {
    // The host function owns a reference of its own: it may still run after
    // this object is gone.
    auto* state = new std::shared_ptr<State>(m_state);
    const cudaError_t status = cudaLaunchHostFunc(stream, &StreamHold::wait, state);
    if (status != cudaSuccess) delete state;
    check(status, "cudaLaunchHostFunc (stream hold)");
  }
  ~StreamHold() { release(); }
  StreamHold(const StreamHold&) = delete;
  StreamHold& operator=(const StreamHold&) = delete;
  void release() { m_state->released.store(true, std::memory_order_release); }
  bool expired() const { return m_state->expired.load(std::memory_order_acquire); }

 private:
  static void CUDART_CB wait(void* data) {
    const std::unique_ptr<std::shared_ptr<State>> state(static_cast<std::shared_ptr<State>*>(data));
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    while (!(*state)->released.load(std::memory_order_acquire))
      if (std::chrono::steady_clock::now() < deadline) {
        std::this_thread::yield();
      } else {
        (*state)->expired.store(true, std::memory_order_release);
        return;
      }
  }
  std::shared_ptr<State> m_state;
};

// Seconds of `repeats` event-timed runs of each of `systems` after `warmups`
// untimed runs of each: the systems take turns run by run, so that a drift
// of the clocks over the runs reaches all of them alike, and each timed run
// is queued behind a StreamHold. Result: [system][run].
inline std::vector<std::vector<double>> time_in_turn(cudaStream_t stream, int warmups, int repeats,
                                                     const std::vector<std::function<void()>>& systems) {
  Event start, stop;
  for (const auto& enqueue : systems)
    for (int i = 0; i < warmups; ++i) enqueue();
  check(cudaStreamSynchronize(stream), "warm-up");
  std::vector<std::vector<double>> seconds(systems.size());
  for (int i = 0; i < repeats; ++i)
    for (std::size_t s = 0; s < systems.size(); ++s) {
      StreamHold hold(stream);
      check(cudaEventRecord(start.e, stream), "cudaEventRecord");
      systems[s]();
      check(cudaEventRecord(stop.e, stream), "cudaEventRecord");
      hold.release();
      check(cudaEventSynchronize(stop.e), "cudaEventSynchronize");
      if (hold.expired()) throw std::runtime_error("timing: the call waited for its own stream");
      float ms = 0;
      check(cudaEventElapsedTime(&ms, start.e, stop.e), "cudaEventElapsedTime");
      seconds[s].push_back(1e-3 * static_cast<double>(ms));
    }
  return seconds;
}

// Seconds of `repeats` event-timed runs of enqueue after `warmups`.
template <class F>
std::vector<double> time_on_stream(cudaStream_t stream, int warmups, int repeats, F&& enqueue) {
  return time_in_turn(stream, warmups, repeats, {std::function<void()>(enqueue)}).front();
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

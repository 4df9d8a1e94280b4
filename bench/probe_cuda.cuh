// What the kernel developers' CUDA probes share (egpu-stream-probe,
// egpu-streamed-probe): checks that end the program with a message that
// starts with the probe's name, the driver's stream memory operations
// (cuStreamWriteValue32 / cuStreamWaitValue32, looked up through the
// runtime so that the probes need no driver library at link time), the
// global timer, and the loads that flags are polled with.
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

namespace probe {

// Each probe sets it first thing in main.
inline const char* name = "probe";

inline void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    std::fprintf(stderr, "%s: %s: %s\n", name, what, cudaGetErrorString(status));
    std::exit(1);
  }
}
inline void check(CUresult status, const char* what) {
  if (status != CUDA_SUCCESS) {
    std::fprintf(stderr, "%s: %s: driver error %d\n", name, what, static_cast<int>(status));
    std::exit(1);
  }
}

// cuStreamWriteValue32 and cuStreamWaitValue32 have this type.
using StreamValue32 = CUresult(CUDAAPI*)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);

template <class F>
F driver_entry(const char* symbol) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found{};
  check(cudaGetDriverEntryPointByVersion(symbol, &fn, 12000, cudaEnableDefault, &found), symbol);
  if (found != cudaDriverEntryPointSuccess || fn == nullptr) {
    std::fprintf(stderr, "%s: the driver has no %s\n", name, symbol);
    std::exit(1);
  }
  return reinterpret_cast<F>(fn);
}

__device__ inline unsigned long long now_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__device__ inline unsigned int load_acquire_sys(const unsigned int* p) {
  unsigned int v;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ inline unsigned int load_acquire_gpu(const unsigned int* p) {
  unsigned int v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ inline unsigned int load_relaxed_gpu(const unsigned int* p) {
  unsigned int v;
  asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

}  // namespace probe

// What egpu-bench measures on the GPU besides egpu itself, with CUDA and
// cuBLAS called directly (host C++; egpu-bench links the CUDA runtime and
// cuBLAS through egpu's own link interface):
//   - the floors of host-resident calls: pinned copy bandwidth each way,
//     the host's copy rate between pageable and pinned memory, and the
//     device-resident GEMM time of a backend (egpu's own kernel
//     egpu::kernels::gemm_tiled, or cublas<t>gemm with default math);
//   - cuBLASXt (cublasXt<t>gemm on host pointers, one device, its pinning
//     mode on), the existing tool egpu is compared against.
// Call nothing here unless egpu::has_device() is true: without a driver
// these functions throw.
//
// Scalars are the host's: float, double, std::complex<float>,
// std::complex<double>; matrices are n x n, column-major, contiguous.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace egpu_bench::gpu {

// The device egpu uses (EGPU_DEVICE when it is an index, else 0); made
// current on the calling thread by every function below.
int device_index();

// Pinned host <-> device copy bandwidth in bytes per second: cudaMemcpyAsync
// of `bytes` each way, timed with events, median of `repeats` after one
// warm-up. Both directions measured separately; both = the bytes of the
// two directions at once (`bytes` each way on two streams) over the time,
// timed on the host.
struct Bandwidth {
  double h2d = 0, d2h = 0, both = 0;
};
Bandwidth measure_bandwidth(std::size_t bytes, int repeats);

// The host's own copy rate between pageable and pinned memory in bytes per
// second: what staging threads do for pageable operands. `threads` threads
// each copy a contiguous share of `bytes` (std::memcpy, and egpu's staging
// copy, which stores past the caches), timed from the moment all of them
// are running to the end of the last (thread start-up left out); the
// fastest of `repeats` runs of either, after one warm-up. pack = pageable -> pinned,
// unpack = pinned -> pageable, measured separately; both = the bytes of
// both directions at once (half the threads pack `bytes`, the others unpack
// as many) over the time.
struct HostCopyRate {
  double pack = 0, unpack = 0, both = 0;
  int threads = 0;
};
HostCopyRate measure_host_copy(std::size_t bytes, int threads, int repeats);

// The host's copy rate while the DMA runs, which it slows: for each count
// in `thread_counts` (raised to 2 where smaller), that many threads pack and unpack as in
// HostCopyRate::both (`bytes` each way) again and again while copies of
// 32 MiB go up and down between two other pinned buffers and the device
// back to back, on two streams. host = the fastest copy that ended while
// both directions still ran, in bytes per second (both ways); dma = the
// bytes of both directions over the longer direction's time, the fastest
// of the runs: `repeats` runs with memcpy and as many with egpu's staging
// copy. A count with no copy inside the DMA's run has host = dma = 0.
struct CopyUnderDma {
  int threads = 0;
  double host = 0, dma = 0;
};
std::vector<CopyUnderDma> measure_copy_under_dma(std::size_t bytes, const std::vector<int>& thread_counts,
                                                 int repeats);

// The bytes of a host-resident product moved with no product and no order
// between them: A and B (`bytes` each) up, C (`bytes`) down, all at once
// from the start, on two streams, each as one copy. pageable: A and B are
// also packed into pinned buffers and C unpacked from one by `threads`
// threads at the same time (a share of them packing, the rest unpacking;
// the DMA moves those pinned buffers as the host writes and reads them).
// Seconds from the start to the end of the last copy, the fastest of
// `repeats` runs of each share (a half, two thirds and three quarters of
// the threads packing) with memcpy and with egpu's staging copy; pinned: A,
// B and C are page-locked and only the DMA runs. With nothing to wait for,
// the copies overlap as far as the host and the link let them: the time a
// call that moves these bytes behind its kernels is set against (the host
// drifts between runs, so a call may come in under it).
double movement_seconds(const void* a, const void* b, void* c, std::size_t bytes, bool pageable, int threads,
                        int repeats);

// Median seconds of C = A * B on device-resident copies of a and b (copied
// up once, outside the timing), device events around each call, after
// `warmups` untimed calls.
enum class DeviceGemm { own, cublas };
template <class Scalar>
double device_gemm_seconds(DeviceGemm which, long n, const Scalar* a, const Scalar* b, int warmups, int repeats);

// A cuBLASXt handle on device_index(), pinning mode enabled.
class Xt {
 public:
  Xt();
  ~Xt();
  Xt(const Xt&) = delete;
  Xt& operator=(const Xt&) = delete;
  void set_block_dim(int block);  // cublasXtSetBlockDim
  // C = A * B, all host pointers; returns when C is written.
  template <class Scalar>
  void gemm(long n, const Scalar* a, const Scalar* b, Scalar* c);

 private:
  void* m_handle = nullptr;  // cublasXtHandle_t
};

}  // namespace egpu_bench::gpu

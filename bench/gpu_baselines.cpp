#include "gpu_baselines.hpp"

#include <cublasXt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <complex>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "bench_common.hpp"
#include "executor/host_copy.hpp"
#include "gpu_util.hpp"
#include "kernels/gemm/gemm_args.hpp"

namespace egpu_bench::gpu {
namespace {

void use_device() { check(cudaSetDevice(device_index()), "cudaSetDevice"); }

// C = A * B, all n x n, through cublas<t>gemm.
template <class Scalar>
cublasStatus_t square_gemm(cublasHandle_t h, int n, const Scalar* a, const Scalar* b, Scalar* c) {
  return cublas_gemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, Scalar(1), a, n, b, n, Scalar(0), c, n);
}

cublasStatus_t xt_gemm(cublasXtHandle_t h, std::size_t n, const float* a, const float* b, float* c) {
  const float alpha = 1, beta = 0;
  return cublasXtSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, a, n, b, n, &beta, c, n);
}
cublasStatus_t xt_gemm(cublasXtHandle_t h, std::size_t n, const double* a, const double* b, double* c) {
  const double alpha = 1, beta = 0;
  return cublasXtDgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, a, n, b, n, &beta, c, n);
}
cublasStatus_t xt_gemm(cublasXtHandle_t h, std::size_t n, const std::complex<float>* a, const std::complex<float>* b,
                       std::complex<float>* c) {
  const cuComplex alpha{1, 0}, beta{0, 0};
  return cublasXtCgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, reinterpret_cast<const cuComplex*>(a), n,
                       reinterpret_cast<const cuComplex*>(b), n, &beta, reinterpret_cast<cuComplex*>(c), n);
}
cublasStatus_t xt_gemm(cublasXtHandle_t h, std::size_t n, const std::complex<double>* a,
                       const std::complex<double>* b, std::complex<double>* c) {
  const cuDoubleComplex alpha{1, 0}, beta{0, 0};
  return cublasXtZgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, reinterpret_cast<const cuDoubleComplex*>(a),
                       n, reinterpret_cast<const cuDoubleComplex*>(b), n, &beta,
                       reinterpret_cast<cuDoubleComplex*>(c), n);
}

// One copy for parallel_copy_seconds: `bytes` from src to dst by `threads`
// threads.
struct CopyJob {
  unsigned char* dst;
  const unsigned char* src;
  std::size_t bytes;
  int threads;
  bool streaming = false;  // egpu's staging copy (non-temporal stores) instead of memcpy
};

// Seconds until every job's copy is done, the jobs running at once, each
// thread copying a contiguous share of its job (cut at 4 KiB so no two
// threads write one page). The clock starts once every thread is running:
// thread creation is not the copy's cost.
double parallel_copy_seconds(const std::vector<CopyJob>& jobs, const std::function<void()>& at_start = {}) {
  int threads = 0;
  for (const CopyJob& job : jobs) threads += job.threads;
  auto cut = [](const CopyJob& job, int t) {
    const std::size_t pages = (job.bytes + 4095) / 4096;
    return std::min(job.bytes, pages * static_cast<std::size_t>(t) / static_cast<std::size_t>(job.threads) * 4096);
  };
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> workers;
  workers.reserve(static_cast<std::size_t>(threads));
  try {
    for (const CopyJob& job : jobs)
      for (int t = 0; t < job.threads; ++t)
        workers.emplace_back([&, t] {
          const std::size_t begin = cut(job, t), end = cut(job, t + 1);
          ready.fetch_add(1, std::memory_order_acq_rel);
          while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
          if (job.streaming) {
            egpu::executor::stream_copy(job.dst + begin, job.src + begin, end - begin);
            egpu::executor::fence_stream_copies();
          } else {
            std::memcpy(job.dst + begin, job.src + begin, end - begin);
          }
        });
  } catch (...) {
    go.store(true, std::memory_order_release);  // the started ones finish and can be joined
    for (std::thread& w : workers) w.join();
    throw;
  }
  while (ready.load(std::memory_order_acquire) < threads) std::this_thread::yield();
  if (at_start) at_start();
  const double start = now_seconds();
  go.store(true, std::memory_order_release);
  for (std::thread& w : workers) w.join();
  return now_seconds() - start;
}

// The fastest of `repeats` (at least one) timed runs, after one untimed:
// run() returns its own seconds.
double fastest_run(int repeats, const std::function<double()>& run) {
  run();
  double best = run();
  for (int i = 1; i < repeats; ++i) best = std::min(best, run());
  return best;
}

// Two pinned and two pageable buffers of `bytes`, for the host's copies
// both ways at once. Every page is written before a clock runs (a user's
// array is written before it is used), the pageable ones by `threads`
// threads, as the copies will write them.
struct HostCopyBuffers {
  PinnedMemory pinned, pinned2;
  std::unique_ptr<unsigned char[]> pageable_memory, pageable2_memory;
  unsigned char *pin, *pin2, *pageable, *pageable2;

  HostCopyBuffers(std::size_t bytes, int threads)
      : pinned(bytes),
        pinned2(bytes),
        pageable_memory(new unsigned char[bytes]),
        pageable2_memory(new unsigned char[bytes]),
        pin(static_cast<unsigned char*>(pinned.p)),
        pin2(static_cast<unsigned char*>(pinned2.p)),
        pageable(pageable_memory.get()),
        pageable2(pageable2_memory.get()) {
    std::memset(pin, 1, bytes);
    std::memset(pin2, 1, bytes);
    parallel_copy_seconds({{pageable, pin, bytes, threads}});
    parallel_copy_seconds({{pageable2, pin2, bytes, threads}});
  }
};

}  // namespace

int device_index() {
  const char* env = std::getenv("EGPU_DEVICE");
  if (env == nullptr || *env == '\0') return 0;
  char* end = nullptr;
  const long index = std::strtol(env, &end, 10);
  return (*end == '\0' && index >= 0 && index < 1024) ? static_cast<int>(index) : 0;
}

Bandwidth measure_bandwidth(std::size_t bytes, int repeats) {
  use_device();
  Stream stream;
  PinnedMemory host(bytes);
  DeviceMemory device(bytes, stream.s);
  // Touch the pinned buffer so no first-use cost lands in the timing.
  std::fill_n(static_cast<unsigned char*>(host.p), bytes, static_cast<unsigned char>(1));
  Bandwidth bw;
  const double h2d = median(time_on_stream(stream.s, 1, repeats, [&] {
    check(cudaMemcpyAsync(device.p, host.p, bytes, cudaMemcpyHostToDevice, stream.s), "cudaMemcpyAsync H2D");
  }));
  const double d2h = median(time_on_stream(stream.s, 1, repeats, [&] {
    check(cudaMemcpyAsync(host.p, device.p, bytes, cudaMemcpyDeviceToHost, stream.s), "cudaMemcpyAsync D2H");
  }));
  bw.h2d = static_cast<double>(bytes) / h2d;
  bw.d2h = static_cast<double>(bytes) / d2h;
  // Both at once: `bytes` up on one stream while as many go down on another
  // (from and into a second pinned buffer), timed on the host.
  {
    Stream down;
    PinnedMemory host2(bytes);
    DeviceMemory device2(bytes, stream.s);
    std::fill_n(static_cast<unsigned char*>(host2.p), bytes, static_cast<unsigned char>(1));
    check(cudaStreamSynchronize(stream.s), "allocation");
    std::vector<double> seconds;
    for (int i = 0; i <= std::max(1, repeats); ++i) {
      const double start = now_seconds();
      check(cudaMemcpyAsync(device.p, host.p, bytes, cudaMemcpyHostToDevice, stream.s), "cudaMemcpyAsync H2D");
      check(cudaMemcpyAsync(host2.p, device2.p, bytes, cudaMemcpyDeviceToHost, down.s), "cudaMemcpyAsync D2H");
      check(cudaStreamSynchronize(stream.s), "H2D");
      check(cudaStreamSynchronize(down.s), "D2H");
      if (i > 0) seconds.push_back(now_seconds() - start);  // the first is a warm-up
    }
    bw.both = 2 * static_cast<double>(bytes) / median(seconds);
  }
  return bw;
}

HostCopyRate measure_host_copy(std::size_t bytes, int threads, int repeats) {
  if (bytes == 0) throw std::invalid_argument("measure_host_copy: no bytes");
  threads = std::max(1, threads);
  use_device();
  const HostCopyBuffers buffers(bytes, threads);
  unsigned char *const pin = buffers.pin, *const pin2 = buffers.pin2;
  unsigned char *const pageable = buffers.pageable, *const pageable2 = buffers.pageable2;
  // The fastest run of memcpy and of egpu's own staging copy: a floor takes
  // the best the host has shown (its copy rate varies by a fifth from run
  // to run on a lent machine, and a median taken in a slow moment would
  // make a floor that the pipeline beats).
  auto seconds = [&](std::vector<CopyJob> jobs) {
    double best = std::numeric_limits<double>::infinity();
    for (bool streaming : {false, true}) {
      for (CopyJob& job : jobs) job.streaming = streaming;
      best = std::min(best, fastest_run(repeats, [&] { return parallel_copy_seconds(jobs); }));
    }
    return best;
  };
  HostCopyRate r;
  r.threads = threads;
  r.pack = static_cast<double>(bytes) / seconds({{pin, pageable, bytes, threads}});
  r.unpack = static_cast<double>(bytes) / seconds({{pageable, pin, bytes, threads}});
  // Half the threads pack while the others unpack (one thread each when
  // there is one).
  const int half = std::max(1, threads / 2), rest = std::max(1, threads - half);
  r.both = 2 * static_cast<double>(bytes) /
           seconds({{pin, pageable, bytes, half}, {pageable2, pin2, bytes, rest}});
  return r;
}

std::vector<CopyUnderDma> measure_copy_under_dma(std::size_t bytes, const std::vector<int>& thread_counts,
                                                 int repeats) {
  if (bytes == 0 || thread_counts.empty()) throw std::invalid_argument("measure_copy_under_dma: no bytes or threads");
  use_device();
  const int most = std::max(2, *std::max_element(thread_counts.begin(), thread_counts.end()));
  const HostCopyBuffers buffers(bytes, most);
  // The DMA's own buffers: 64 copies of 32 MiB each way, about 50 ms at
  // 45 GB/s, long enough for a few of the host's copies inside it (a
  // quarter of 16 threads copies 256 MiB in 15-20 ms).
  constexpr std::size_t kChunk = std::size_t(32) << 20;
  constexpr int kChunks = 64;
  Stream up, down;
  PinnedMemory dma_host_up(kChunk), dma_host_down(kChunk);
  DeviceMemory dma_dev_up(kChunk, up.s), dma_dev_down(kChunk, down.s);
  std::memset(dma_host_up.p, 1, kChunk);
  check(cudaMemsetAsync(dma_dev_down.p, 1, kChunk, down.s), "cudaMemsetAsync");
  check(cudaStreamSynchronize(down.s), "cudaMemsetAsync");
  check(cudaStreamSynchronize(up.s), "cudaMallocAsync");
  // Whether the work before `e` is still running (or queued).
  auto pending = [](cudaEvent_t e) {
    const cudaError_t status = cudaEventQuery(e);
    if (status == cudaErrorNotReady) return true;
    check(status, "cudaEventQuery");
    return false;
  };

  std::vector<CopyUnderDma> modes;
  for (int threads : thread_counts) {
    CopyUnderDma mode;
    mode.threads = std::max(2, threads);
    const int half = mode.threads / 2, rest = mode.threads - half;
    for (bool streaming : {false, true})
      for (int run = 0; run < std::max(1, repeats); ++run) {
        Event up_start, up_end, down_start, down_end;
        check(cudaEventRecord(up_start.e, up.s), "cudaEventRecord");
        check(cudaEventRecord(down_start.e, down.s), "cudaEventRecord");
        for (int c = 0; c < kChunks; ++c) {
          check(cudaMemcpyAsync(dma_dev_up.p, dma_host_up.p, kChunk, cudaMemcpyHostToDevice, up.s),
                "cudaMemcpyAsync H2D");
          check(cudaMemcpyAsync(dma_host_down.p, dma_dev_down.p, kChunk, cudaMemcpyDeviceToHost, down.s),
                "cudaMemcpyAsync D2H");
        }
        check(cudaEventRecord(up_end.e, up.s), "cudaEventRecord");
        check(cudaEventRecord(down_end.e, down.s), "cudaEventRecord");
        while (pending(up_start.e) || pending(down_start.e)) std::this_thread::yield();
        double host = 0;
        for (;;) {
          const double s = parallel_copy_seconds({{buffers.pin, buffers.pageable, bytes, half, streaming},
                                                  {buffers.pageable2, buffers.pin2, bytes, rest, streaming}});
          if (!pending(up_end.e) || !pending(down_end.e)) break;  // the DMA ended during this copy
          host = std::max(host, 2 * static_cast<double>(bytes) / s);
        }
        check(cudaEventSynchronize(up_end.e), "H2D");
        check(cudaEventSynchronize(down_end.e), "D2H");
        float up_ms = 0, down_ms = 0;
        check(cudaEventElapsedTime(&up_ms, up_start.e, up_end.e), "cudaEventElapsedTime");
        check(cudaEventElapsedTime(&down_ms, down_start.e, down_end.e), "cudaEventElapsedTime");
        if (host <= 0) continue;
        mode.host = std::max(mode.host, host);
        const double dma_seconds = 1e-3 * std::max(up_ms, down_ms);
        mode.dma = std::max(mode.dma, 2.0 * kChunks * static_cast<double>(kChunk) / dma_seconds);
      }
    modes.push_back(mode);
  }
  return modes;
}

double movement_seconds(const void* a, const void* b, void* c, std::size_t bytes, bool pageable, int threads,
                        int repeats) {
  if (bytes == 0) throw std::invalid_argument("movement_seconds: no bytes");
  use_device();
  Stream up, down;
  DeviceMemory dev_up(bytes, up.s), dev_down(bytes, down.s);
  check(cudaMemsetAsync(dev_down.p, 1, bytes, down.s), "cudaMemsetAsync");
  check(cudaStreamSynchronize(down.s), "cudaMemsetAsync");
  check(cudaStreamSynchronize(up.s), "cudaMallocAsync");
  // The DMA's ends: pageable operands go through pinned buffers.
  std::unique_ptr<PinnedMemory> pin_a, pin_b, pin_c;
  const void *up_a = a, *up_b = b;
  void* down_c = c;
  if (pageable) {
    pin_a = std::make_unique<PinnedMemory>(bytes);
    pin_b = std::make_unique<PinnedMemory>(bytes);
    pin_c = std::make_unique<PinnedMemory>(bytes);
    for (const auto* m : {pin_a.get(), pin_b.get(), pin_c.get()}) std::memset(m->p, 1, bytes);
    up_a = pin_a->p;
    up_b = pin_b->p;
    down_c = pin_c->p;
  }
  double start = 0;
  auto issue_dma = [&] {
    start = now_seconds();
    check(cudaMemcpyAsync(dev_up.p, up_a, bytes, cudaMemcpyHostToDevice, up.s), "cudaMemcpyAsync H2D");
    check(cudaMemcpyAsync(dev_up.p, up_b, bytes, cudaMemcpyHostToDevice, up.s), "cudaMemcpyAsync H2D");
    check(cudaMemcpyAsync(down_c, dev_down.p, bytes, cudaMemcpyDeviceToHost, down.s), "cudaMemcpyAsync D2H");
  };
  auto finish = [&] {
    check(cudaStreamSynchronize(up.s), "H2D");
    check(cudaStreamSynchronize(down.s), "D2H");
    return now_seconds() - start;
  };
  if (!pageable)
    return fastest_run(repeats, [&] {
      issue_dma();
      return finish();
    });
  threads = std::max(3, threads);
  auto* const dst_a = static_cast<unsigned char*>(pin_a->p);
  auto* const dst_b = static_cast<unsigned char*>(pin_b->p);
  const auto* const src_c = static_cast<const unsigned char*>(pin_c->p);
  double best = std::numeric_limits<double>::infinity();
  for (const int quarters_of_12 : {6, 8, 9}) {  // a half, two thirds, three quarters packing
    const int packing = std::clamp(threads * quarters_of_12 / 12, 2, threads - 1), unpacking = threads - packing;
    for (bool streaming : {false, true})
      best = std::min(best, fastest_run(repeats, [&] {
        parallel_copy_seconds({{dst_a, static_cast<const unsigned char*>(a), bytes, packing / 2, streaming},
                               {dst_b, static_cast<const unsigned char*>(b), bytes, packing - packing / 2, streaming},
                               {static_cast<unsigned char*>(c), src_c, bytes, unpacking, streaming}},
                              issue_dma);
        return finish();
      }));
  }
  return best;
}

template <class Scalar>
double device_gemm_seconds(DeviceGemm which, long n, const Scalar* a, const Scalar* b, int warmups, int repeats) {
  use_device();
  using K = typename kernel_type<Scalar>::type;
  static_assert(sizeof(K) == sizeof(Scalar), "kernel scalar must match the host scalar");
  const std::size_t bytes = static_cast<std::size_t>(n) * static_cast<std::size_t>(n) * sizeof(Scalar);
  Stream stream;
  DeviceMemory da(bytes, stream.s), db(bytes, stream.s), dc(bytes, stream.s);
  check(cudaMemcpyAsync(da.p, a, bytes, cudaMemcpyHostToDevice, stream.s), "cudaMemcpyAsync A");
  check(cudaMemcpyAsync(db.p, b, bytes, cudaMemcpyHostToDevice, stream.s), "cudaMemcpyAsync B");
  check(cudaStreamSynchronize(stream.s), "upload");

  if (which == DeviceGemm::own) {
    egpu::kernels::GemmArgs<K> args;
    args.m = args.n = args.k = n;
    args.a = static_cast<const K*>(da.p);
    args.b = static_cast<const K*>(db.p);
    args.c = static_cast<K*>(dc.p);
    args.lda = args.ldb = args.ldc = n;
    args.alpha = one<K>();
    args.beta = K{};
    args.beta_is_zero = true;
    return median(time_on_stream(stream.s, warmups, repeats,
                                 [&] { egpu::kernels::gemm_tiled<K>(args, static_cast<void*>(stream.s)); }));
  }
  if (n > 2147483647L) throw std::runtime_error("cuBLAS reference: n too large");
  Cublas cublas(stream.s);  // default math mode: no TF32
  return median(time_on_stream(stream.s, warmups, repeats, [&] {
    check(square_gemm(cublas.h, static_cast<int>(n), static_cast<const Scalar*>(da.p),
                      static_cast<const Scalar*>(db.p), static_cast<Scalar*>(dc.p)),
          "cublas gemm");
  }));
}

template double device_gemm_seconds<float>(DeviceGemm, long, const float*, const float*, int, int);
template double device_gemm_seconds<double>(DeviceGemm, long, const double*, const double*, int, int);
template double device_gemm_seconds<std::complex<float>>(DeviceGemm, long, const std::complex<float>*,
                                                          const std::complex<float>*, int, int);
template double device_gemm_seconds<std::complex<double>>(DeviceGemm, long, const std::complex<double>*,
                                                           const std::complex<double>*, int, int);

Xt::Xt() {
  use_device();
  cublasXtHandle_t handle = nullptr;
  check(cublasXtCreate(&handle), "cublasXtCreate");
  m_handle = handle;
  int devices[1] = {device_index()};
  try {
    check(cublasXtDeviceSelect(handle, 1, devices), "cublasXtDeviceSelect");
    check(cublasXtSetPinningMemMode(handle, CUBLASXT_PINNING_ENABLED), "cublasXtSetPinningMemMode");
  } catch (...) {
    cublasXtDestroy(handle);
    throw;
  }
}

Xt::~Xt() { cublasXtDestroy(static_cast<cublasXtHandle_t>(m_handle)); }

void Xt::set_block_dim(int block) {
  check(cublasXtSetBlockDim(static_cast<cublasXtHandle_t>(m_handle), block), "cublasXtSetBlockDim");
}

template <class Scalar>
void Xt::gemm(long n, const Scalar* a, const Scalar* b, Scalar* c) {
  use_device();
  check(xt_gemm(static_cast<cublasXtHandle_t>(m_handle), static_cast<std::size_t>(n), a, b, c), "cublasXt gemm");
}

template void Xt::gemm<float>(long, const float*, const float*, float*);
template void Xt::gemm<double>(long, const double*, const double*, double*);
template void Xt::gemm<std::complex<float>>(long, const std::complex<float>*, const std::complex<float>*,
                                            std::complex<float>*);
template void Xt::gemm<std::complex<double>>(long, const std::complex<double>*, const std::complex<double>*,
                                             std::complex<double>*);

}  // namespace egpu_bench::gpu

// egpu-stream-probe: can a kernel that is already running consume pieces of
// its operands as their copies land, and can downloads start on pieces of
// its result as it finishes them? A streamed product would rest on both
// (bench/RESULTS.md, "how near any schedule could come to the page-locked
// floors"): this measures the two mechanisms alone, without a product.
//
// Up: P pieces of S MiB go from page-locked memory to the device, one copy
// each on an upload stream, each followed by a 32-bit write of its flag
// (cuStreamWriteValue32, which orders the write after the copy); a kernel
// launched before the first copy has one block per piece, each waiting on
// its flag, then summing its piece. The device buffer holds other values
// before the copies, so a block that read before its copy had landed sums
// the wrong values. Timed against the same copies alone.
//
// Down: a kernel's block p fills piece p of a device buffer, no earlier
// than p x --stagger-us after the kernel starts, then sets flag p (after a
// system-scope fence); a download stream waits on each flag in turn
// (cuStreamWaitValue32) and copies that piece to page-locked memory. Every
// byte that arrives is checked. Timed against the kernel's last piece and
// the copies alone.
//
// Up, each block waits at most --timeout-ms for its flag and then gives up
// (the run says so); down, the kernel is checked before the downloads are
// waited for: a mechanism that does not work fails, it does not hang.
//
//   egpu-stream-probe [--pieces P] [--piece-mib S] [--stagger-us U] [--repeats R] [--timeout-ms T] [--sleep-ns N]
//
// --sleep-ns N: the blocks waiting for pieces poll with a relaxed load and
// sleep N ns between polls, instead of spinning on a system-scope acquire.
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "probe_cuda.cuh"

namespace {

using probe::check;
using probe::load_acquire_sys;
using probe::load_relaxed_gpu;
using probe::now_ns;

// Block p: waits for flag p (thread 0), then sums piece p; seen[p] is when
// the flag was seen (0: never, within the timeout), summed[p] when the sum
// was done. sleep_ns > 0: the wait polls with a relaxed load and sleeps
// between polls (then fences); else it spins on a system-scope acquire.
__global__ void consume(const float* data, std::size_t piece_elems, const unsigned int* flags,
                        unsigned long long* seen, unsigned long long* summed, double* sums,
                        unsigned long long timeout_ns, unsigned int sleep_ns) {
  __shared__ int ready;
  __shared__ double partial[256];
  const unsigned int p = blockIdx.x;
  if (threadIdx.x == 0) {
    const unsigned long long start = now_ns();
    if (sleep_ns > 0) {
      for (unsigned long long waited = 0; load_relaxed_gpu(flags + p) == 0 && waited < timeout_ns;) {
        __nanosleep(sleep_ns);
        waited = now_ns() - start;
      }
      __threadfence();
      ready = load_acquire_sys(flags + p) != 0;
    } else {
      for (unsigned long long waited = 0; load_acquire_sys(flags + p) == 0 && waited < timeout_ns;) waited = now_ns() - start;
      ready = load_acquire_sys(flags + p) != 0;
    }
    seen[p] = ready ? now_ns() : 0;
  }
  __syncthreads();
  if (!ready) return;
  double s = 0;
  const float* piece = data + p * piece_elems;
  for (std::size_t i = threadIdx.x; i < piece_elems; i += blockDim.x) s += piece[i];
  partial[threadIdx.x] = s;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) partial[threadIdx.x] += partial[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    sums[p] = partial[0];
    summed[p] = now_ns();
  }
}

// Block p: from p x stagger_ns after `origin` (the first block's start),
// fills piece p with p + 1 and sets flag p; done[p] is when.
__global__ void produce(float* data, std::size_t piece_elems, unsigned int* flags, unsigned long long* done,
                        unsigned long long* origin, unsigned long long stagger_ns) {
  const unsigned int p = blockIdx.x;
  if (threadIdx.x == 0) {
    unsigned long long zero = 0;
    atomicCAS(origin, zero, now_ns());
    const unsigned long long at = *reinterpret_cast<volatile unsigned long long*>(origin) + p * stagger_ns;
    while (now_ns() < at) {
    }
  }
  __syncthreads();
  float* piece = data + p * piece_elems;
  for (std::size_t i = threadIdx.x; i < piece_elems; i += blockDim.x) piece[i] = static_cast<float>(p + 1);
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence_system();
    asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(flags + p), "r"(1u) : "memory");
    done[p] = now_ns();
  }
}

struct Args {
  int pieces = 64;
  std::size_t piece_mib = 4;
  double stagger_us = 100;
  int repeats = 5;
  double timeout_ms = 2000;
  unsigned int sleep_ns = 0;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    if (k == "--help" || k == "-h") {
      std::printf("usage: egpu-stream-probe [--pieces P] [--piece-mib S] [--stagger-us U] [--repeats R] [--timeout-ms T] [--sleep-ns N]\n");
      std::exit(0);
    }
    if (v == nullptr) {
      std::fprintf(stderr, "egpu-stream-probe: %s needs a value\n", k.c_str());
      std::exit(2);
    }
    if (k == "--pieces") a.pieces = std::atoi(v);
    else if (k == "--piece-mib") a.piece_mib = static_cast<std::size_t>(std::atol(v));
    else if (k == "--stagger-us") a.stagger_us = std::atof(v);
    else if (k == "--repeats") a.repeats = std::atoi(v);
    else if (k == "--timeout-ms") a.timeout_ms = std::atof(v);
    else if (k == "--sleep-ns") a.sleep_ns = static_cast<unsigned int>(std::atoi(v));
    else {
      std::fprintf(stderr, "egpu-stream-probe: unknown option %s\n", k.c_str());
      std::exit(2);
    }
    ++i;
  }
  if (a.pieces < 1 || a.pieces > 1024 || a.piece_mib < 1 || a.repeats < 1 || a.stagger_us < 0 || a.timeout_ms <= 0) {
    std::fprintf(stderr, "egpu-stream-probe: bad option value\n");
    std::exit(2);
  }
  return a;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  probe::name = "egpu-stream-probe";
  const Args a = parse(argc, argv);
  const auto write_value = probe::driver_entry<probe::StreamValue32>("cuStreamWriteValue32");
  const auto wait_value = probe::driver_entry<probe::StreamValue32>("cuStreamWaitValue32");
  int device = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
  const std::size_t piece_elems = a.piece_mib * (std::size_t(1) << 20) / sizeof(float);
  const std::size_t elems = piece_elems * static_cast<std::size_t>(a.pieces), bytes = elems * sizeof(float);
  std::printf("egpu-stream-probe: %s, %d pieces of %zu MiB, stagger %.0f us, median of %d\n", prop.name, a.pieces,
              a.piece_mib, a.stagger_us, a.repeats);

  float *host = nullptr, *dev = nullptr;
  unsigned int* flags = nullptr;
  unsigned long long *stamps = nullptr, *stamps2 = nullptr, *origin = nullptr;
  double* sums = nullptr;
  check(cudaMallocHost(&host, bytes), "cudaMallocHost");
  check(cudaMalloc(&dev, bytes), "cudaMalloc");
  check(cudaMalloc(&flags, sizeof(unsigned int) * a.pieces), "cudaMalloc(flags)");
  check(cudaMalloc(&stamps, sizeof(unsigned long long) * a.pieces), "cudaMalloc(stamps)");
  check(cudaMalloc(&stamps2, sizeof(unsigned long long) * a.pieces), "cudaMalloc(stamps)");
  check(cudaMalloc(&origin, sizeof(unsigned long long)), "cudaMalloc(origin)");
  check(cudaMalloc(&sums, sizeof(double) * a.pieces), "cudaMalloc(sums)");
  cudaStream_t compute, copies;
  check(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking), "cudaStreamCreate");
  check(cudaStreamCreateWithFlags(&copies, cudaStreamNonBlocking), "cudaStreamCreate");
  const unsigned long long timeout_ns = static_cast<unsigned long long>(a.timeout_ms * 1e6);
  const unsigned long long stagger_ns = static_cast<unsigned long long>(a.stagger_us * 1e3);
  // Piece p holds small integers (exact sums in double): (i % 7) + p.
  for (std::size_t i = 0; i < elems; ++i) host[i] = static_cast<float>(i % 7 + i / piece_elems);
  const bool to_device = true, to_host = false;
  // Queues the copy of piece p up (host to device) or down on `stream`.
  auto copy_piece = [&](int p, bool up, cudaStream_t stream) {
    float* const d = dev + p * piece_elems;
    float* const h = host + p * piece_elems;
    const std::size_t n = piece_elems * sizeof(float);
    check(up ? cudaMemcpyAsync(d, h, n, cudaMemcpyHostToDevice, stream) : cudaMemcpyAsync(h, d, n, cudaMemcpyDeviceToHost, stream),
          up ? "copy up" : "copy down");
  };
  // Every piece one after another, alone: seconds.
  auto copies_alone = [&](bool up) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int p = 0; p < a.pieces; ++p) copy_piece(p, up, copies);
    check(cudaStreamSynchronize(copies), "sync");
    return seconds_since(t0);
  };

  // --- up ---
  std::vector<double> alone, flagged, gaps, sum_times;
  int wrong_up = 0, missed_up = 0;
  for (int r = 0; r < a.repeats; ++r) {
    alone.push_back(copies_alone(to_device));

    check(cudaMemset(dev, 0xff, bytes), "poison");  // NaN: a read before the copy shows
    check(cudaMemset(flags, 0, sizeof(unsigned int) * a.pieces), "clear flags");
    check(cudaDeviceSynchronize(), "sync");
    auto t0 = std::chrono::steady_clock::now();
    consume<<<a.pieces, 256, 0, compute>>>(dev, piece_elems, flags, stamps, stamps2, sums, timeout_ns, a.sleep_ns);
    check(cudaGetLastError(), "launch consume");
    for (int p = 0; p < a.pieces; ++p) {
      copy_piece(p, to_device, copies);
      check(write_value(reinterpret_cast<CUstream>(copies), reinterpret_cast<CUdeviceptr>(flags + p), 1,
                        CU_STREAM_WRITE_VALUE_DEFAULT),
            "cuStreamWriteValue32");
    }
    check(cudaStreamSynchronize(copies), "sync");
    check(cudaStreamSynchronize(compute), "sync");
    flagged.push_back(seconds_since(t0));
    std::vector<double> got(static_cast<std::size_t>(a.pieces));
    std::vector<unsigned long long> seen(static_cast<std::size_t>(a.pieces));
    check(cudaMemcpy(got.data(), sums, sizeof(double) * a.pieces, cudaMemcpyDeviceToHost), "read sums");
    std::vector<unsigned long long> done(static_cast<std::size_t>(a.pieces));
    check(cudaMemcpy(seen.data(), stamps, sizeof(unsigned long long) * a.pieces, cudaMemcpyDeviceToHost), "read stamps");
    check(cudaMemcpy(done.data(), stamps2, sizeof(unsigned long long) * a.pieces, cudaMemcpyDeviceToHost), "read stamps");
    if (seen.front() != 0 && seen.back() != 0) gaps.push_back(double(seen.back() - seen.front()) / (a.pieces - 1) * 1e-9);
    for (int p = 0; p < a.pieces; ++p)
      if (seen[p] != 0 && done[p] >= seen[p]) sum_times.push_back(double(done[p] - seen[p]) * 1e-9);
    for (int p = 0; p < a.pieces; ++p) {
      if (seen[p] == 0) {
        ++missed_up;
        continue;
      }
      double expect = 0;
      for (std::size_t i = 0; i < piece_elems; ++i) expect += host[p * piece_elems + i];
      if (got[p] != expect) ++wrong_up;
    }
  }
  const double gb = static_cast<double>(bytes) / 1e9;
  std::printf("up:   copies alone %.3f ms (%.1f GB/s); with flags and a kernel consuming each piece %.3f ms "
              "(%.3f of alone); pieces never seen %d, summed wrong %d (of %d)\n",
              median(alone) * 1e3, gb / median(alone), median(flagged) * 1e3, median(flagged) / median(alone),
              missed_up, wrong_up, a.pieces * a.repeats);
  if (!gaps.empty() && !sum_times.empty())
    std::printf("      flags seen %.1f us apart (one piece's copy alone %.1f us); a block sums its piece in %.1f us\n",
                median(gaps) * 1e6, median(alone) * 1e6 / a.pieces, median(sum_times) * 1e6);

  // --- down ---
  std::vector<double> down_alone, down_flagged, produce_alone;
  int wrong_down = 0;
  for (int r = 0; r < a.repeats; ++r) {
    down_alone.push_back(copies_alone(to_host));

    check(cudaMemset(flags, 0, sizeof(unsigned int) * a.pieces), "clear flags");
    check(cudaMemset(origin, 0, sizeof(unsigned long long)), "clear origin");
    check(cudaDeviceSynchronize(), "sync");
    auto t0 = std::chrono::steady_clock::now();
    produce<<<a.pieces, 256, 0, compute>>>(dev, piece_elems, flags, stamps, origin, stagger_ns);
    check(cudaGetLastError(), "launch produce");
    check(cudaStreamSynchronize(compute), "sync");
    produce_alone.push_back(seconds_since(t0));

    std::memset(host, 0, bytes);
    check(cudaMemset(flags, 0, sizeof(unsigned int) * a.pieces), "clear flags");
    check(cudaMemset(origin, 0, sizeof(unsigned long long)), "clear origin");
    check(cudaMemset(dev, 0, bytes), "clear data");
    check(cudaDeviceSynchronize(), "sync");
    t0 = std::chrono::steady_clock::now();
    produce<<<a.pieces, 256, 0, compute>>>(dev, piece_elems, flags, stamps, origin, stagger_ns);
    check(cudaGetLastError(), "launch produce");
    for (int p = 0; p < a.pieces; ++p) {
      check(wait_value(reinterpret_cast<CUstream>(copies), reinterpret_cast<CUdeviceptr>(flags + p), 1,
                       CU_STREAM_WAIT_VALUE_GEQ),
            "cuStreamWaitValue32");
      copy_piece(p, to_host, copies);
    }
    // The kernel first: had it failed, its flags would never be set and the
    // download stream would wait for them for ever.
    check(cudaStreamSynchronize(compute), "produce");
    check(cudaStreamSynchronize(copies), "sync");
    down_flagged.push_back(seconds_since(t0));
    for (int p = 0; p < a.pieces; ++p) {
      bool ok = true;
      for (std::size_t i = 0; i < piece_elems && ok; ++i) ok = host[p * piece_elems + i] == static_cast<float>(p + 1);
      if (!ok) ++wrong_down;
    }
  }
  std::printf("down: the kernel alone (last piece at %.3f ms after the first) %.3f ms; copies alone %.3f ms; "
              "kernel and downloads that wait on each piece's flag %.3f ms (%.3f ms after the kernel alone, "
              "one piece's copy %.3f ms); pieces that arrived wrong %d (of %d)\n",
              a.stagger_us * 1e-3 * (a.pieces - 1), median(produce_alone) * 1e3, median(down_alone) * 1e3,
              median(down_flagged) * 1e3, (median(down_flagged) - median(produce_alone)) * 1e3,
              median(down_alone) * 1e3 / a.pieces, wrong_down, a.pieces * a.repeats);
  check(cudaFreeHost(host), "cudaFreeHost");
  check(cudaFree(dev), "cudaFree");
  check(cudaFree(flags), "cudaFree");
  check(cudaFree(stamps), "cudaFree");
  check(cudaFree(stamps2), "cudaFree");
  check(cudaFree(origin), "cudaFree");
  check(cudaFree(sums), "cudaFree");
  return wrong_up + missed_up + wrong_down == 0 ? 0 : 1;
}

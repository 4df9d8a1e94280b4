// egpu-streamed-probe: how near its floor a host-resident double or float
// product comes when one persistent kernel multiplies pieces of A and B as
// their copies land and C goes down in regions as the kernel finishes them
// (bench/RESULTS.md: the schedules that could reach issue 19's page-locked
// targets need both). The mechanisms are egpu-stream-probe's; the kernel's
// main loop is the own fp64 tensor-core kernel's (kernel/gemm_mma_kernel.cuh)
// or, with --float, the tiled SIMT kernel's (kernel/gemm_tiled_kernel.cuh).
//
// C = A B, all N x N column-major in page-locked host memory (registered,
// as egpu::PinGuard registers Eigen's storage). The device holds all of A,
// B and C. The schedule has two phases:
//   1. k order: the first K1 = S1 x KS of k go up in slabs of KS (A(:, slab)
//      in chunks KA deep, contiguous; B(slab, :) in pieces WB wide); every
//      block tile of C accumulates each slab as it lands;
//   2. completion: C in R x W regions, in growing squares over the regions
//      (rows and columns in turn); a region's rest of k needs A(rows, K1:)
//      (chunks KA2 deep) and B(K1:, cols) (chunks KB2 deep), which go up
//      when the first region needing them comes (B's first with
//      --b-first); each region goes down once its tiles are done. With
//      --split P2 each tile's rest of k is P2 units, which can run on P2
//      SMs at once (partial sums through C, in order).
// --between P builds the other schedule, build_mixed_schedule's: k keeps
// going up in steps over the rows and columns not yet complete while row
// and column bands are completed in turn, P steps between completions.
// Each copy is followed by a 32-bit flag write (cuStreamWriteValue32, set
// to the run's number); the kernel's blocks take work units (a block tile
// of C over a k range) in order from a counter, wait for the flags of the
// chunks their k loop reaches, wait before storing for the unit of the
// same tile before theirs, and count each region's finished tiles; the
// download stream waits on those counts (cuStreamWaitValue32). Uploads are
// held until everything is issued, so the time is the schedule's, not the
// host's issue rate. --pack THREADS: host threads first pack every strided
// piece into page-locked staging (class Packer), the call starting with
// the packing.
//
// Printed, all measured in the same run, each timing after 100 ms idle
// (back-to-back tensor-core kernels lower the clocks):
// - the bytes alone: A and B up, C down, and all three at once (A and B up
//   while C comes down, which the floor takes as measured);
// - the device GEMMs (own: egpu::kernels::gemm_tiled; cuBLAS), the
//   streamed kernel on resident data (flags all set) with and without its
//   waits compiled in (and, with S1 = 0, without its dispenser or its
//   signals), and the plain kernel of the same tile, a block per tile and
//   with the resident blocks looping;
// - the streamed call, first upload to last download, against the floor
//   max(own GEMM, up, down, all three at once); when its uploads and its
//   kernel ended;
// - the largest difference from cuBLAS's product (every element written).
// Waits time out (--timeout-ms) and the run then fails instead of hanging.
//
//   egpu-streamed-probe [--n N] [--ks KS] [--slabs S1] [--ka KA] [--wb WB] [--r R] [--w W]
//                       [--ka2 KA2] [--kb2 KB2] [--repeats REP] [--timeout-ms T] [--pack THREADS]
//                       [--warp-polls] [--grouped] [--between P] [--float] [--split P2] [--b-first]
// --warp-polls: one lane of each warp waits on a flag, then the warp syncs
// (double; the float kernel's thread 0 waits, then the block syncs).
// --grouped: phase 2's units in the plain kernel's tile order (no regions
// of their own: for the resident timings).
#include <cublas_v2.h>
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "kernels/gemm/gemm_args.hpp"
#include "probe_cuda.cuh"
#include "kernels/gemm/kernel/gemm_mma_kernel.cuh"
#include "kernels/gemm/kernel/gemm_tiled_kernel.cuh"

namespace {

namespace kk = egpu::kernels;
// double: the fp64 tensor-core kernel's tile. A and B column-major: op(A)
// is m-contiguous (AK false), op(B) k-contiguous (BK true).
using Traits = kk::kernel::MmaKernelTraits<double, kk::TensorLargeTag, kk::MathMode::exact, false, true>;
using Shape = Traits::S;
using LoaderA = Traits::LoaderA;
using LoaderB = Traits::LoaderB;
// float (--float): the tiled SIMT kernel's large NN tile, the same layouts
// (A x-contiguous, B k-contiguous: kernel/gemm_tiled_kernel.cuh).
using SimtShape = kk::TileShape<float, kk::LargeTag>;

using probe::check;
using probe::load_acquire_gpu;
using probe::load_acquire_sys;
using probe::now_ns;

void check(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "%s: %s: cuBLAS status %d\n", probe::name, what, static_cast<int>(status));
    std::exit(1);
  }
}

// A block tile of C over k [k0, k1). Its k loop reaches A's chunks at flags
// a_flag, a_flag + 1, ... (each a_chunk deep, the first starting a_off
// before k0) and B's at b_flag, ... The unit is number `seq` of its tile's
// units; its tile's last unit (last) adds the tile to its region's count
// (region >= 0).
struct Unit {
  int m0, n0, k0, k1;
  int a_flag, a_chunk, b_flag, b_chunk;
  int tile, seq, region, last;
  int a_off, b_off;  // 0 where not given
};

template <class T>
struct StreamArgs {
  const T* a;
  const T* b;
  T* c;
  int n;
  const Unit* units;
  int unit_count;
  unsigned int* next_unit;      // the dispenser, zero before each run
  const unsigned int* flags;    // pieces up: >= epoch
  unsigned int* tile_done;      // units finished, zero before each run
  unsigned int* region_done;    // tiles finished, counted over all runs
  unsigned int* failed;         // a wait timed out
  unsigned int epoch;           // this run's number, from 1
  unsigned long long timeout_ns;
  bool warp_polls;              // one lane of each warp polls, the warp then syncs
};

// Every thread waits itself, so that its own later reads are ordered after
// its acquire. Past the deadline the wait gives up and marks the run failed
// (the kernel then runs to its end on whatever is there).
template <bool SYS>
__device__ void wait_at_least(const unsigned int* p, unsigned int v, unsigned long long deadline,
                              unsigned int* failed) {
  while ((SYS ? load_acquire_sys(p) : load_acquire_gpu(p)) < v) {
    if (now_ns() > deadline) {
      atomicExch(failed, 1u);
      return;
    }
  }
}

// A piece's flag: every thread waits, or (warp_polls) lane 0 of each warp
// waits and the warp's barrier orders the other lanes' reads after its
// acquire.
template <class T>
__device__ void wait_piece(const StreamArgs<T>& s, const unsigned int* p, unsigned long long deadline) {
  if (s.warp_polls) {
    if (threadIdx.x % 32 == 0) wait_at_least<true>(p, s.epoch, deadline, s.failed);
    __syncwarp();
  } else {
    wait_at_least<true>(p, s.epoch, deadline, s.failed);
  }
}

// WAITS = false: resident data, the k loop does not look at the flags.
// The unit and the deadline live in shared memory, read where needed:
// held in registers through the k loop, the kernel took 1.23-1.28x the own
// GEMM's time on resident data with one unit per tile, against 1.05-1.12x
// so (results/streamed-probe-2026-11-28-h200.txt, calls 4, 5 and 7).
// DISPENSE = false: block b takes units b, b + grid, ... (resident data
// only); SIGNAL = false: no fence and counts after a unit (resident data,
// one unit per tile only). Both only to time what those steps cost.
template <bool WAITS, bool DISPENSE = true, bool SIGNAL = true>
__global__ void __launch_bounds__(Shape::threads, Shape::min_blocks) streamed_product(const StreamArgs<double> s) {
  using T = double;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  __shared__ Unit unit;
  __shared__ unsigned long long deadline;
  T* const sa = reinterpret_cast<T*>(smem_raw);
  T* const sb = sa + Shape::stages * LoaderA::stage_elems;
  if (threadIdx.x == 0) deadline = now_ns() + s.timeout_ns;

  const int warp_id = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32;
  const int wm0 = (warp_id % Shape::warps_m) * Shape::wm, wn0 = (warp_id / Shape::warps_m) * Shape::wn;
  const int g = lane / 4, t = lane % 4;
  const int a_lane = kk::warp::tile_off<false, LoaderA::ld>(wm0 + g, t);
  const int b_lane = kk::warp::tile_off<true, LoaderB::ld>(wn0 + g, t);
  const std::int64_t ld = s.n;

  for (unsigned int step = blockIdx.x;; step += gridDim.x) {
    if (threadIdx.x == 0) {
      const unsigned int ui = DISPENSE ? atomicAdd(s.next_unit, 1u) : step;
      if (ui < unsigned(s.unit_count)) unit = s.units[ui];
      else unit.m0 = -1;  // no units left
    }
    __syncthreads();
    if (unit.m0 < 0) break;
    const std::int64_t kz = unit.k1 - unit.k0;
    LoaderA la(s.a + std::int64_t(unit.k0) * ld, ld, s.n, unit.m0, true);
    LoaderB lb(s.b + unit.k0, ld, s.n, unit.n0, true);
    typename Traits::Warp w;
    w.clear();
    const std::int64_t ktiles = (kz + Shape::bk - 1) / Shape::bk;
    // Where (k from k0) the next chunk of each operand starts, and its
    // number among the unit's chunks.
    int a_at = 0, b_at = 0, a_i = 0, b_i = 0;
    auto load_stage = [&](int slot, std::int64_t kt) {
      if (kt < ktiles) {
        const int k = int(kt) * Shape::bk;
        if constexpr (WAITS) {
          if (k >= a_at) {
            wait_piece(s, s.flags + unit.a_flag + a_i++, deadline);
            a_at = a_i * unit.a_chunk - unit.a_off;
          }
          if (k >= b_at) {
            wait_piece(s, s.flags + unit.b_flag + b_i++, deadline);
            b_at = b_i * unit.b_chunk - unit.b_off;
          }
        }
        la.load(sa + slot * LoaderA::stage_elems, kz - k, s.a);
        lb.load(sb + slot * LoaderB::stage_elems, kz - k, s.b);
      }
      kk::block::cp_async_commit();
    };
#pragma unroll
    for (int st = 0; st < Shape::stages - 1; ++st) load_stage(st, st);
    kk::kernel::MmaKLoop<Traits, false, true>::pipelined(w, sa + a_lane, sb + b_lane, ktiles, load_stage);
    kk::block::cp_async_wait<0>();
    __syncthreads();

    // The tile's earlier units have stored their part of C.
    if (unit.seq > 0)
      wait_at_least<false>(s.tile_done + unit.tile, unit.seq, deadline, s.failed);
    const std::int64_t mrem = s.n - unit.m0 - wm0, nrem = s.n - unit.n0 - wn0;
    if (mrem > 0 && nrem > 0)
      w.store(s.c + (unit.m0 + wm0) + (unit.n0 + wn0) * ld, ld, mrem, nrem, T(1), T(1), unit.seq == 0);
    __syncthreads();  // every thread's stores come before thread 0's fence; unit is rewritten next
    if (SIGNAL && threadIdx.x == 0) {
      __threadfence_system();
      atomicAdd(s.tile_done + unit.tile, 1u);
      if (unit.last && unit.region >= 0) atomicAdd(s.region_done + unit.region, 1u);
    }
  }
}

// The float kernel: the tiled SIMT kernel's k loop (kernel/gemm_tiled_kernel.cuh)
// run once per stretch of k that lies in one chunk of A and one of B, after
// waiting for both; each stretch starts its double buffer afresh. N is a
// multiple of the tile, so every tile is whole along m and n.
template <bool WAITS, bool DISPENSE = true, bool SIGNAL = true>
__global__ void __launch_bounds__(SimtShape::threads, SimtShape::min_blocks)
    streamed_product_simt(const StreamArgs<float> s) {
  using T = float;
  using S = SimtShape;
  using Smem = kk::block::SharedTiles<T, S>;
  using Micro = kk::thread::MicroTile<T, S>;
  using LA = kk::kernel::OperandLoader<T, S, S::bm, true, true>;
  using LB = kk::kernel::OperandLoader<T, S, S::bn, false, true>;
  __shared__ Smem smem;
  __shared__ Unit unit;
  __shared__ unsigned long long deadline;
  if (threadIdx.x == 0) deadline = now_ns() + s.timeout_ns;
  const int r0 = Micro::origin_row(threadIdx.x), c0 = Micro::origin_col(threadIdx.x);
  const std::int64_t ld = s.n;

  for (unsigned int step = blockIdx.x;; step += gridDim.x) {
    __syncthreads();  // the last unit's reads of `unit` and of the shared tiles are done
    if (threadIdx.x == 0) {
      const unsigned int ui = DISPENSE ? atomicAdd(s.next_unit, 1u) : step;
      if (ui < unsigned(s.unit_count)) unit = s.units[ui];
      else unit.m0 = -1;
    }
    __syncthreads();
    if (unit.m0 < 0) break;
    Micro acc;
    acc.clear();
    int a_i = 0, b_i = 0;
    for (int k = 0, kz = unit.k1 - unit.k0; k < kz;) {
      // This stretch ends where the next chunk of either operand starts.
      const int a_end = (a_i + 1) * unit.a_chunk - unit.a_off, b_end = (b_i + 1) * unit.b_chunk - unit.b_off;
      const int k_end = min(kz, min(a_end, b_end));
      // Thread 0 waits and the barrier orders the block's reads after its
      // acquire (the pieces' bytes are read for the first time in the
      // call); the barrier also ends the stretch before's shared reads.
      if (WAITS && threadIdx.x == 0) {
        wait_at_least<true>(s.flags + unit.a_flag + a_i, s.epoch, deadline, s.failed);
        wait_at_least<true>(s.flags + unit.b_flag + b_i, s.epoch, deadline, s.failed);
      }
      if (k_end == a_end) ++a_i;
      if (k_end == b_end) ++b_i;
      __syncthreads();
      const std::int64_t kabs = unit.k0 + k;
      LA la(s.a + kabs * ld, ld, s.n, unit.m0, false);
      LB lb(s.b + kabs, ld, s.n, unit.n0, false);
      kk::kernel::k_loop<false, S>(smem, la, lb, acc, k_end - k, S::bk * ld, S::bk, r0, c0);
      k = k_end;
    }
    if (unit.seq > 0)
      wait_at_least<false>(s.tile_done + unit.tile, unit.seq, deadline, s.failed);
    acc.store(s.c + unit.m0 + std::int64_t(unit.n0) * ld, 1, ld, s.n - unit.m0, s.n - unit.n0, r0, c0, T(1), T(1),
              unit.seq == 0, true);
    __syncthreads();
    // The tile's next unit reads C on the GPU: a GPU-scope fence; the
    // download after its last reads it from the host's side.
    if (SIGNAL && threadIdx.x == 0) {
      if (unit.last) __threadfence_system();
      else __threadfence();
      atomicAdd(s.tile_done + unit.tile, 1u);
      if (unit.last && unit.region >= 0) atomicAdd(s.region_done + unit.region, 1u);
    }
  }
}

// What differs between the two scalars: the streamed kernel of each
// variant (0 the streamed kernel, 1 without the waits, 2 also without the
// dispenser, 3 without the signals, 4 without either), its block and
// dynamic shared memory, the plain kernel of the same tile on resident
// data (blocks: 0 a block per tile, else that many resident blocks looping
// over the tiles) and cuBLAS's GEMM.
template <class T> struct Kernels;
template <> struct Kernels<double> {
  using Fn = void (*)(StreamArgs<double>);
  static constexpr int threads = Shape::threads, smem = Traits::smem_bytes;
  static Fn streamed(int variant) {
    return variant == 0 ? &streamed_product<true> : variant == 1 ? &streamed_product<false>
         : variant == 2 ? &streamed_product<false, false> : variant == 3 ? &streamed_product<false, true, false>
         : &streamed_product<false, false, false>;
  }
  static constexpr auto plain_kernel = kk::kernel::gemm_mma_kernel<double, kk::TensorLargeTag, kk::MathMode::exact, false, true>;
  static void setup() {
    check(cudaFuncSetAttribute(plain_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem), "cudaFuncSetAttribute");
  }
  static void plain(const double* a, const double* b, double* c, int n, unsigned blocks, cudaStream_t stream) {
    kk::kernel::MmaParams<double> p{};
    p.m = p.n = p.k = n;
    p.a = a; p.lda = n; p.b = b; p.ldb = n; p.c = c; p.ldc = n;
    p.k_slice = n; p.c_slice = 0; p.alpha = 1; p.beta = 0; p.beta_is_zero = true;
    p.a_vec = p.b_vec = true;
    p.m_tiles = (n + Shape::bm - 1) / Shape::bm;
    p.n_tiles = (n + Shape::bn - 1) / Shape::bn;
    plain_kernel<<<blocks ? blocks : unsigned(p.m_tiles * p.n_tiles), threads, smem, stream>>>(p);
    check(cudaGetLastError(), "launch of gemm_mma_kernel");
  }
  static cublasStatus_t gemm(cublasHandle_t h, int n, const double* a, const double* b, double* c) {
    const double one = 1, zero = 0;
    return cublasDgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, n, b, n, &zero, c, n);
  }
};
template <> struct Kernels<float> {
  using Fn = void (*)(StreamArgs<float>);
  static constexpr int threads = SimtShape::threads, smem = 0;
  static Fn streamed(int variant) {
    return variant == 0 ? &streamed_product_simt<true> : variant == 1 ? &streamed_product_simt<false>
         : variant == 2 ? &streamed_product_simt<false, false> : variant == 3 ? &streamed_product_simt<false, true, false>
         : &streamed_product_simt<false, false, false>;
  }
  static void setup() {}
  // Looping, the kernel's rows of blocks walk the column tiles.
  static void plain(const float* a, const float* b, float* c, int n, unsigned blocks, cudaStream_t stream) {
    kk::kernel::GemmParams<float> p{};
    p.m = p.n = p.k = n;
    p.a = a; p.lda = n; p.b = b; p.ldb = n; p.c = c;
    p.k_slice = n; p.c_slice = 0; p.alpha = 1; p.beta = 0; p.beta_is_zero = true;
    p.a_vec = p.b_vec = true;
    p.c_rs = 1; p.c_cs = n; p.c_vec = true;
    const unsigned m_tiles = unsigned(n / SimtShape::bm), n_tiles = unsigned(n / SimtShape::bn);
    const unsigned rows = blocks ? std::max(1u, std::min(n_tiles, blocks / m_tiles)) : n_tiles;
    kk::kernel::gemm_tiled_kernel<float, kk::LargeTag, true, false, true><<<dim3(m_tiles, rows), threads, 0, stream>>>(p);
    check(cudaGetLastError(), "launch of gemm_tiled_kernel");
  }
  static cublasStatus_t gemm(cublasHandle_t h, int n, const float* a, const float* b, float* c) {
    const float one = 1, zero = 0;
    return cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, n, b, n, &zero, c, n);
  }
};

struct Options {
  int n = 8192, ks = 512, slabs = 8, ka = 128, wb = 1024, r = 2048, w = 1024, ka2 = 512, kb2 = 0;
  int repeats = 5;
  double timeout_ms = 5000;
  bool warp_polls = false;
  bool grouped = false;  // phase 2's units in the plain kernel's tile order (resident timing only)
  int pack_threads = 0;  // > 0: strided pieces packed on the host first (see Packer)
  int between = -1;      // >= 0: the mixed schedule (build_mixed_schedule), P k steps between completions
  bool single = false;   // --float: the product in float (streamed_product_simt)
  int split = 1;         // phase 2: each tile's rest of k in this many units, which run side by side
  bool b_first = false;  // phase 2: a region's pieces of B go up before its pieces of A
  int bm = Shape::bm, bn = Shape::bn;  // the kernel's block tile
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (k == "--help" || k == "-h") {
      std::printf("usage: egpu-streamed-probe [--n N] [--ks KS] [--slabs S1] [--ka KA] [--wb WB] [--r R] [--w W]"
                  " [--ka2 KA2] [--kb2 KB2 (0: all of the rest)] [--repeats REP] [--timeout-ms T] [--pack THREADS]"
                  " [--warp-polls] [--grouped] [--between P] [--float] [--split P2] [--b-first]\n");
      std::exit(0);
    }
    if (k == "--warp-polls" || k == "--grouped" || k == "--float" || k == "--b-first") {
      (k == "--warp-polls" ? o.warp_polls : k == "--grouped" ? o.grouped : k == "--float" ? o.single : o.b_first) = true;
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "egpu-streamed-probe: %s needs a value\n", k.c_str());
      std::exit(2);
    }
    const char* v = argv[++i];
    int* field = k == "--n" ? &o.n : k == "--ks" ? &o.ks : k == "--slabs" ? &o.slabs : k == "--ka" ? &o.ka
               : k == "--wb" ? &o.wb : k == "--r" ? &o.r : k == "--w" ? &o.w : k == "--ka2" ? &o.ka2
               : k == "--kb2" ? &o.kb2 : k == "--repeats" ? &o.repeats : k == "--split" ? &o.split : nullptr;
    if (k == "--timeout-ms") o.timeout_ms = std::atof(v);
    else if (k == "--pack") o.pack_threads = std::atoi(v);
    else if (k == "--between") o.between = std::atoi(v);
    else if (field != nullptr) *field = std::atoi(v);
    else {
      std::fprintf(stderr, "egpu-streamed-probe: unknown option %s\n", k.c_str());
      std::exit(2);
    }
  }
  if (o.single) {
    o.bm = SimtShape::bm;
    o.bn = SimtShape::bn;
  }
  const int k1 = o.slabs * o.ks;
  const bool ok = o.n >= 128 && o.n % 128 == 0 && o.n % o.bn == 0 && o.ks > 0 && o.slabs >= 0 &&
                  (k1 < o.n || o.between >= 0) && o.ka > 0 && o.ks % o.ka == 0 && o.split > 0 &&
                  (o.split == 1 || o.between < 0) && o.wb > 0 && o.wb % o.bn == 0 && o.r > 0 && o.r % o.bm == 0 && o.w > 0 &&
                  o.w % o.bn == 0 && o.ka2 > 0 && o.kb2 >= 0 && o.repeats > 0 && o.timeout_ms > 0;
  if (!ok) {
    std::fprintf(stderr, "egpu-streamed-probe: need N a multiple of 128 and of %d, S1 x KS < N, KA | KS, WB and W multiples "
                         "of %d, R of %d, positive sizes, --split only on the two-phase schedule\n", o.bn, o.bn, o.bm);
    std::exit(2);
  }
  if (o.kb2 == 0) o.kb2 = std::max(1, o.n - k1);
  return o;
}

// A sub-block of a column-major N x N matrix, copied with one 2D copy.
struct Piece {
  int r0, rows, c0, cols;
  int flag;
  bool a;  // A (else B)
};

// The growing squares over a grid of tm x tn regions: (0,0), then row s
// and column s in turn.
std::vector<std::pair<int, int>> square_order(int tm, int tn) {
  std::vector<std::pair<int, int>> order;
  for (int s = 0; s < std::max(tm, tn); ++s) {
    if (s < tm)
      for (int j = 0; j <= std::min(s, tn - 1); ++j) order.emplace_back(s, j);
    if (s < tn)
      for (int i = std::min(s, tm) - 1; i >= 0; --i) order.emplace_back(i, s);
  }
  return order;
}

// Two lists merged in proportion, so that both finish together.
std::vector<Piece> interleave(const std::vector<Piece>& x, const std::vector<Piece>& y) {
  std::vector<Piece> out;
  std::size_t i = 0, j = 0;
  while (i < x.size() || j < y.size()) {
    const bool take_x = j >= y.size() || (i < x.size() && (i + 1) * y.size() <= (j + 1) * x.size());
    out.push_back(take_x ? x[i++] : y[j++]);
  }
  return out;
}

struct Schedule {
  std::vector<Unit> units;
  std::vector<Piece> uploads;  // in issue order
  std::vector<std::pair<int, int>> regions;  // phase 2's order: (row band, column band)
  std::vector<int> tiles_in_region;
  int flag_count = 0, tile_count = 0;
  bool one_unit_per_tile = false;
};

int ceil_div(int a, int b) { return (a + b - 1) / b; }

Schedule build_schedule(const Options& o) {
  Schedule sc;
  const int n = o.n, k1 = o.slabs * o.ks, rest = n - k1;
  const int tm = ceil_div(n, o.bm), tn = ceil_div(n, o.bn);
  sc.tile_count = tm * tn;
  auto tile_of = [&](int m0, int n0) { return (m0 / o.bm) * tn + n0 / o.bn; };
  // Flags: A's phase-1 chunks, B's phase-1 pieces (slab-major within a
  // column piece), then A's and B's phase-2 chunks by band.
  const int a1_chunks = k1 / o.ka, b1_cols = ceil_div(n, o.wb);
  const int bands_m = ceil_div(n, o.r), bands_n = ceil_div(n, o.w);
  const int a2_chunks = ceil_div(rest, o.ka2), b2_chunks = ceil_div(rest, o.kb2);
  const int fa1 = 0, fb1 = fa1 + a1_chunks, fa2 = fb1 + b1_cols * o.slabs, fb2 = fa2 + bands_m * a2_chunks;
  sc.flag_count = fb2 + bands_n * b2_chunks;
  sc.one_unit_per_tile = o.slabs == 0 && o.split == 1;
  // Phase 2's parts: whole stages of 64 deep, none empty.
  const int part = ceil_div(ceil_div(rest, o.split), 64) * 64, parts = ceil_div(rest, part);

  // Phase 1.
  for (int s = 0; s < o.slabs; ++s) {
    std::vector<Piece> a_chunks, b_pieces;
    for (int j = 0; j < o.ks / o.ka; ++j) {
      const int c0 = s * o.ks + j * o.ka;
      a_chunks.push_back({0, n, c0, o.ka, fa1 + c0 / o.ka, true});
    }
    for (int c = 0; c < b1_cols; ++c) {
      b_pieces.push_back({s * o.ks, o.ks, c * o.wb, std::min(o.wb, n - c * o.wb), fb1 + c * o.slabs + s, false});
      for (int n0 = c * o.wb; n0 < std::min(n, (c + 1) * o.wb); n0 += o.bn)
        for (int m0 = 0; m0 < n; m0 += o.bm)
          sc.units.push_back({m0, n0, s * o.ks, (s + 1) * o.ks, fa1 + s * o.ks / o.ka, o.ka,
                              fb1 + c * o.slabs + s, o.ks, tile_of(m0, n0), s, -1, 0});
    }
    const auto merged = interleave(a_chunks, b_pieces);
    sc.uploads.insert(sc.uploads.end(), merged.begin(), merged.end());
  }

  // Phase 2.
  sc.regions = square_order(bands_m, bands_n);
  std::vector<bool> a_up(bands_m, false), b_up(bands_n, false);
  for (std::size_t ri = 0; ri < sc.regions.size(); ++ri) {
    const int I = sc.regions[ri].first, J = sc.regions[ri].second;
    std::vector<Piece> a_chunks, b_chunks;
    const int r0 = I * o.r, rows = std::min(o.r, n - r0), c0 = J * o.w, cols = std::min(o.w, n - c0);
    if (!a_up[I]) {
      a_up[I] = true;
      for (int j = 0; j < a2_chunks; ++j)
        a_chunks.push_back({r0, rows, k1 + j * o.ka2, std::min(o.ka2, n - k1 - j * o.ka2), fa2 + I * a2_chunks + j, true});
    }
    if (!b_up[J]) {
      b_up[J] = true;
      for (int j = 0; j < b2_chunks; ++j)
        b_chunks.push_back({k1 + j * o.kb2, std::min(o.kb2, n - k1 - j * o.kb2), c0, cols, fb2 + J * b2_chunks + j, false});
    }
    if (o.b_first) {
      sc.uploads.insert(sc.uploads.end(), b_chunks.begin(), b_chunks.end());
      sc.uploads.insert(sc.uploads.end(), a_chunks.begin(), a_chunks.end());
    } else {
      const auto merged = interleave(a_chunks, b_chunks);
      sc.uploads.insert(sc.uploads.end(), merged.begin(), merged.end());
    }
    // The rest of k in `parts` units a tile (--split), part by part.
    for (int p = 0; p < parts; ++p) {
      const int kp0 = k1 + p * part, kp1 = std::min(n, kp0 + part);
      const int ao = (kp0 - k1) % o.ka2, bo = (kp0 - k1) % o.kb2;
      for (int n0 = c0; n0 < c0 + cols; n0 += o.bn)
        for (int m0 = r0; m0 < r0 + rows; m0 += o.bm) {
          Unit u{m0, n0, kp0, kp1, fa2 + I * a2_chunks + (kp0 - k1) / o.ka2, o.ka2, fb2 + J * b2_chunks + (kp0 - k1) / o.kb2,
                 o.kb2, tile_of(m0, n0), o.slabs + p, int(ri), p == parts - 1 ? 1 : 0};
          u.a_off = ao;
          u.b_off = bo;
          sc.units.push_back(u);
        }
    }
    sc.tiles_in_region.push_back(ceil_div(rows, o.bm) * ceil_div(cols, o.bn));
  }
  if (o.grouped) {  // the plain kernel's order: groups of 8 row tiles, column by column in a group
    auto key = [&](const Unit& u) {
      const int gi = u.m0 / o.bm / 8;
      return std::make_tuple(u.seq, gi, u.n0, u.m0);
    };
    std::stable_sort(sc.units.begin(), sc.units.end(), [&](const Unit& x, const Unit& y) { return key(x) < key(y); });
  }
  return sc;
}

// --between P: the fluid schedule's shape (scripts/pipeline_bound.py) in
// pieces. k goes up in steps of KS over the rows of A and columns of B not
// yet complete (A(I, slab) and B(slab, J) for every incomplete row band I
// and column band J, R and W wide), and every tile of an incomplete region
// accumulates the step; after S1 such steps, row and column bands are
// completed in turn (A(I, k:) or B(k:, J) up in KS-deep chunks from the
// step reached), with P steps between two completions. A region whose row
// and column bands are complete finishes its tiles' rest of k in one unit
// each, and goes down; the regions still open when k runs out finish with
// the last step. Units wait on KS-deep chunks only, so the flags of a
// band's chunks are consecutive along k.
Schedule build_mixed_schedule(const Options& o) {
  Schedule sc;
  const int n = o.n, tm = ceil_div(n, o.bm), tn = ceil_div(n, o.bn);
  const int bands_m = ceil_div(n, o.r), bands_n = ceil_div(n, o.w), steps = ceil_div(n, o.ks);
  sc.tile_count = tm * tn;
  std::vector<std::vector<int>> a_flag(bands_m, std::vector<int>(steps, -1)), b_flag(bands_n, std::vector<int>(steps, -1));
  std::vector<bool> row_done(bands_m, false), col_done(bands_n, false);
  std::vector<std::vector<int>> region_id(bands_m, std::vector<int>(bands_n, -1));
  std::vector<int> seq(sc.tile_count, 0);
  auto depth = [&](int s) { return std::min(o.ks, n - s * o.ks); };
  auto rows_of = [&](int I) { return std::min(o.r, n - I * o.r); };
  auto cols_of = [&](int J) { return std::min(o.w, n - J * o.w); };
  auto add_units = [&](int I, int J, int s0, int s1, int region) {  // the region's tiles over steps [s0, s1)
    for (int n0 = J * o.w; n0 < J * o.w + cols_of(J); n0 += o.bn)
      for (int m0 = I * o.r; m0 < I * o.r + rows_of(I); m0 += o.bm) {
        const int tile = (m0 / o.bm) * tn + n0 / o.bn;
        sc.units.push_back({m0, n0, s0 * o.ks, std::min(n, s1 * o.ks), a_flag[I][s0], o.ks, b_flag[J][s0], o.ks, tile,
                            seq[tile]++, region, region >= 0 ? 1 : 0});
      }
  };
  auto complete_region = [&](int I, int J, int s) {
    region_id[I][J] = int(sc.regions.size());
    sc.regions.emplace_back(I, J);
    sc.tiles_in_region.push_back(ceil_div(rows_of(I), o.bm) * ceil_div(cols_of(J), o.bn));
    if (s < steps) add_units(I, J, s, steps, region_id[I][J]);
  };
  int s = 0;
  auto k_step = [&] {
    std::vector<Piece> a_pieces, b_pieces;
    for (int I = 0; I < bands_m; ++I)
      if (!row_done[I]) {
        a_flag[I][s] = sc.flag_count++;
        a_pieces.push_back({I * o.r, rows_of(I), s * o.ks, depth(s), a_flag[I][s], true});
      }
    for (int J = 0; J < bands_n; ++J)
      if (!col_done[J]) {
        b_flag[J][s] = sc.flag_count++;
        b_pieces.push_back({s * o.ks, depth(s), J * o.w, cols_of(J), b_flag[J][s], false});
      }
    const auto merged = interleave(a_pieces, b_pieces);
    sc.uploads.insert(sc.uploads.end(), merged.begin(), merged.end());
    for (int J = 0; J < bands_n; ++J)
      for (int I = 0; I < bands_m; ++I)
        if (region_id[I][J] < 0) add_units(I, J, s, s + 1, -1);
    ++s;
  };
  auto complete_band = [&](bool row, int X) {
    for (int t = s; t < steps; ++t) {
      int& f = row ? a_flag[X][t] : b_flag[X][t];
      f = sc.flag_count++;
      sc.uploads.push_back(row ? Piece{X * o.r, rows_of(X), t * o.ks, depth(t), f, true}
                               : Piece{t * o.ks, depth(t), X * o.w, cols_of(X), f, false});
    }
    (row ? row_done : col_done)[X] = true;
    for (int Y = 0; Y < (row ? bands_n : bands_m); ++Y) {
      const int I = row ? X : Y, J = row ? Y : X;
      if (row_done[I] && col_done[J] && region_id[I][J] < 0) complete_region(I, J, s);
    }
  };
  for (int i = 0; i < o.slabs && s < steps; ++i) k_step();
  // Completions alternate between rows and columns in proportion to their counts.
  int rows = 0, cols = 0;
  while (rows < bands_m || cols < bands_n) {
    const bool row = cols >= bands_n || (rows < bands_m && std::int64_t(rows) * bands_n <= std::int64_t(cols) * bands_m);
    complete_band(row, row ? rows++ : cols++);
    for (int i = 0; i < o.between && s < steps && (rows < bands_m || cols < bands_n); ++i) k_step();
  }
  // Every region is complete now; those completed at s == steps had their
  // last unit in the last step: mark it.
  std::vector<int> last_unit(sc.tile_count, -1);
  for (std::size_t u = 0; u < sc.units.size(); ++u) last_unit[sc.units[u].tile] = int(u);
  for (int t = 0; t < sc.tile_count; ++t) {
    Unit& u = sc.units[last_unit[t]];
    u.last = 1;
    u.region = region_id[u.m0 / o.r][u.n0 / o.w];
  }
  return sc;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Times work on stream after the device has been idle for a while: a long
// run of tensor-core kernels lowers the clocks of the ones after it.
template <class F>
double time_ms(cudaStream_t stream, F&& work) {
  check(cudaDeviceSynchronize(), "idle before timing");
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  cudaEvent_t e0, e1;
  check(cudaEventCreate(&e0), "cudaEventCreate");
  check(cudaEventCreate(&e1), "cudaEventCreate");
  check(cudaEventRecord(e0, stream), "cudaEventRecord");
  work();
  check(cudaEventRecord(e1, stream), "cudaEventRecord");
  check(cudaEventSynchronize(e1), "cudaEventSynchronize");
  float ms = 0;
  check(cudaEventElapsedTime(&ms, e0, e1), "cudaEventElapsedTime");
  check(cudaEventDestroy(e0), "cudaEventDestroy");
  check(cudaEventDestroy(e1), "cudaEventDestroy");
  return ms;
}

// --pack: host threads copy every strided piece (fewer rows than the
// matrix) into its own place in a page-locked staging buffer, in upload
// order, so that its DMA is one contiguous copy; the issuing thread issues
// a packed piece's copy once it is packed. Staging is sized for all the
// pieces at once (a probe; a library would cycle slots).
template <class T>
class Packer {
 public:
  Packer(const std::vector<Piece>& pieces, int n, int threads) : pieces_(pieces), n_(n), threads_(threads) {
    std::size_t at = 0;
    for (const Piece& p : pieces) {
      offset_.push_back(at);
      if (strided(p)) at += std::size_t(p.rows) * p.cols;
    }
    check(cudaMallocHost(&staging_, std::max<std::size_t>(at, 1) * sizeof(T)), "cudaMallocHost(staging)");
    done_ = std::vector<std::atomic<int>>(pieces.size());
  }
  ~Packer() {
    join();
    cudaFreeHost(staging_);
  }
  bool strided(const Piece& p) const { return p.rows < n_; }
  // Starts the threads on one call's pieces of ha and hb.
  void start(const T* ha, const T* hb) {
    for (auto& d : done_) d.store(0);
    next_.store(0);
    for (int t = 0; t < threads_; ++t)
      workers_.emplace_back([this, ha, hb] {
        for (std::size_t i; (i = next_.fetch_add(1)) < pieces_.size();) {
          const Piece& p = pieces_[i];
          if (strided(p)) {
            const T* src = (p.a ? ha : hb) + std::size_t(p.r0) + std::size_t(p.c0) * n_;
            T* dst = staging_ + offset_[i];
            for (int c = 0; c < p.cols; ++c)
              std::memcpy(dst + std::size_t(c) * p.rows, src + std::size_t(c) * n_, std::size_t(p.rows) * sizeof(T));
          }
          done_[i].store(1, std::memory_order_release);
        }
      });
  }
  // Piece i's source for its copy, once packed: its staging, or null (not strided).
  const T* packed(std::size_t i) {
    if (!strided(pieces_[i])) return nullptr;
    while (done_[i].load(std::memory_order_acquire) == 0) {
    }
    return staging_ + offset_[i];
  }
  void join() {
    for (auto& w : workers_) w.join();
    workers_.clear();
  }

 private:
  const std::vector<Piece>& pieces_;
  int n_, threads_;
  std::vector<std::size_t> offset_;
  T* staging_ = nullptr;
  std::vector<std::atomic<int>> done_;
  std::atomic<std::size_t> next_{0};
  std::vector<std::thread> workers_;
};

template <class T>
void copy_piece(const Piece& p, T* dev, const T* host, int n, cudaStream_t stream) {
  const std::size_t off = std::size_t(p.r0) + std::size_t(p.c0) * n;
  check(cudaMemcpy2DAsync(dev + off, std::size_t(n) * sizeof(T), host + off, std::size_t(n) * sizeof(T),
                          std::size_t(p.rows) * sizeof(T), p.cols, cudaMemcpyHostToDevice, stream),
        "upload of a piece");
}

template <class T>
int run_probe(const Options& o) {
  const auto write_value = probe::driver_entry<probe::StreamValue32>("cuStreamWriteValue32");
  const auto wait_value = probe::driver_entry<probe::StreamValue32>("cuStreamWaitValue32");
  const Schedule sc = o.between >= 0 ? build_mixed_schedule(o) : build_schedule(o);
  const int n = o.n;
  const std::size_t elems = std::size_t(n) * n, bytes = elems * sizeof(T);

  // Host operands, registered.
  std::vector<T> ha(elems), hb(elems), hc(elems);
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<T> dist(-1, 1);
  for (auto* v : {&ha, &hb}) for (auto& x : *v) x = dist(rng);
  for (auto* v : {&ha, &hb, &hc}) check(cudaHostRegister(v->data(), bytes, cudaHostRegisterDefault), "cudaHostRegister");

  T *da, *db, *dc, *dref;
  check(cudaMalloc(&da, bytes), "cudaMalloc");
  check(cudaMalloc(&db, bytes), "cudaMalloc");
  check(cudaMalloc(&dc, bytes), "cudaMalloc");
  check(cudaMalloc(&dref, bytes), "cudaMalloc");
  Unit* dunits;
  check(cudaMalloc(&dunits, sc.units.size() * sizeof(Unit)), "cudaMalloc");
  check(cudaMemcpy(dunits, sc.units.data(), sc.units.size() * sizeof(Unit), cudaMemcpyHostToDevice), "units");
  // Counters: dispenser, gate, failed, then flags, tile and region counts.
  const std::size_t counters = 3 + sc.flag_count + sc.tile_count + sc.regions.size();
  unsigned int* dcount;
  check(cudaMalloc(&dcount, counters * sizeof(unsigned int)), "cudaMalloc");
  check(cudaMemset(dcount, 0, counters * sizeof(unsigned int)), "cudaMemset");
  unsigned int *next = dcount, *gate = dcount + 1, *failed = dcount + 2, *flags = dcount + 3;
  unsigned int *tile_done = flags + sc.flag_count, *region_done = tile_done + sc.tile_count;

  cudaStream_t up, run, down, aux;
  for (auto* st : {&up, &run, &down, &aux}) check(cudaStreamCreateWithFlags(st, cudaStreamNonBlocking), "stream");
  using K = Kernels<T>;
  K::setup();
  for (int v = 0; v < 5; ++v)
    check(cudaFuncSetAttribute(K::streamed(v), cudaFuncAttributeMaxDynamicSharedMemorySize, K::smem), "cudaFuncSetAttribute");
  int per_sm = 0, sms = 0, dev = 0;
  check(cudaGetDevice(&dev), "cudaGetDevice");
  check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev), "attribute");
  check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, K::streamed(0), K::threads, K::smem), "occupancy");
  const int grid = per_sm * sms;

  std::unique_ptr<Packer<T>> packer;
  if (o.pack_threads > 0) packer = std::make_unique<Packer<T>>(sc.uploads, n, o.pack_threads);
  StreamArgs<T> args{da, db, dc, n, dunits, int(sc.units.size()), next, flags, tile_done,
                  region_done, failed, 0, static_cast<unsigned long long>(o.timeout_ms * 1e6), o.warp_polls};
  // variant: 0 the streamed kernel, 1 without the waits, 2 also without
  // the dispenser, 3 without the signals, 4 without either.
  auto launch = [&](unsigned int epoch, int variant = 0) {
    args.epoch = epoch;
    check(cudaMemsetAsync(next, 0, sizeof(unsigned int), run), "reset of the dispenser");
    check(cudaMemsetAsync(tile_done, 0, sc.tile_count * sizeof(unsigned int), run), "reset of the tile counts");
    K::streamed(variant)<<<grid, K::threads, K::smem, run>>>(args);
    check(cudaGetLastError(), "launch of streamed_product");
  };
  auto failed_now = [&] {
    unsigned int f = 0;
    check(cudaMemcpy(&f, failed, sizeof f, cudaMemcpyDeviceToHost), "read of the failure flag");
    return f != 0;
  };

  // Rates of this run: the bytes alone, and the own and cuBLAS GEMMs on
  // resident data.
  std::vector<double> t_up, t_down, t_both, t_own, t_cublas, t_kernel_resident, t_kernel_nowait, t_plain, t_plain_looping, t_call;
  std::vector<double> t_variant[3], t_up_end, t_run_end;
  cublasHandle_t handle;
  check(cublasCreate(&handle), "cublasCreate");
  check(cublasSetStream(handle, run), "cublasSetStream");
  unsigned int epoch = 0;
  for (int rep = 0; rep < o.repeats + 1; ++rep) {
    t_up.push_back(time_ms(up, [&] {
      check(cudaMemcpyAsync(da, ha.data(), bytes, cudaMemcpyHostToDevice, up), "upload of A");
      check(cudaMemcpyAsync(db, hb.data(), bytes, cudaMemcpyHostToDevice, up), "upload of B");
    }));
    t_down.push_back(time_ms(down, [&] { check(cudaMemcpyAsync(hc.data(), dc, bytes, cudaMemcpyDeviceToHost, down), "download"); }));
    t_both.push_back(time_ms(up, [&] {
      cudaEvent_t fork;
      check(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming), "event");
      check(cudaEventRecord(fork, up), "event");
      check(cudaStreamWaitEvent(down, fork, 0), "wait");
      check(cudaMemcpyAsync(hc.data(), dc, bytes, cudaMemcpyDeviceToHost, down), "download");
      check(cudaMemcpyAsync(da, ha.data(), bytes, cudaMemcpyHostToDevice, up), "upload of A");
      check(cudaMemcpyAsync(db, hb.data(), bytes, cudaMemcpyHostToDevice, up), "upload of B");
      check(cudaEventRecord(fork, down), "event");
      check(cudaStreamWaitEvent(up, fork, 0), "join");
      check(cudaEventDestroy(fork), "event");
    }));
    kk::GemmArgs<T> g;
    g.m = g.n = g.k = n;
    g.a = da; g.lda = n; g.b = db; g.ldb = n; g.c = dref; g.ldc = n;
    g.alpha = 1; g.beta = 0;
    t_own.push_back(time_ms(run, [&] { kk::gemm_tiled<T>(g, run); }));
    t_cublas.push_back(time_ms(run, [&] {
      check(K::gemm(handle, n, da, db, dref), "cuBLAS GEMM");
    }));
    // The streamed kernel on resident operands: every flag already set.
    ++epoch;
    check(cudaMemsetAsync(flags, 0xff, sc.flag_count * sizeof(unsigned int), run), "flags set");
    t_kernel_resident.push_back(time_ms(run, [&] { launch(epoch); }));
    ++epoch;
    t_kernel_nowait.push_back(time_ms(run, [&] { launch(epoch, 1); }));
    if (sc.one_unit_per_tile) {  // one unit per tile: the signals are not needed on resident data
      for (int v = 2; v <= 4; ++v) {
        ++epoch;
        t_variant[v - 2].push_back(time_ms(run, [&] { launch(epoch, v); }));
      }
      check(cudaMemset(region_done, 0, sc.regions.size() * sizeof(unsigned int)), "reset of the region counts");
      check(cudaMemset(gate, 0, sizeof(unsigned int)), "reset of the gate");
      epoch = 0;  // the counts start again (the flags are set before each run)
    }
    // The plain kernel of the same tile, one block per tile and with the
    // resident blocks looping over the tiles.
    for (int persistent = 0; persistent < 2; ++persistent)
      (persistent ? t_plain_looping : t_plain).push_back(time_ms(run, [&] {
        K::plain(da, db, dc, n, persistent ? unsigned(grid) : 0u, run);  // C is poisoned again before the streamed call
      }));
    check(cudaStreamSynchronize(run), "resident run");
    if (failed_now()) {
      std::fprintf(stderr, "egpu-streamed-probe: a wait timed out on resident data\n");
      return 1;
    }
    // The streamed call.
    ++epoch;
    check(cudaMemsetAsync(flags, 0, sc.flag_count * sizeof(unsigned int), run), "flags cleared");
    check(cudaMemsetAsync(dc, 0xff, bytes, run), "poison of C");  // NaN: unwritten elements show
    check(cudaDeviceSynchronize(), "setup");
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // as time_ms does
    std::fill(hc.begin(), hc.end(), std::nan(""));
    check(wait_value(reinterpret_cast<CUstream>(up), reinterpret_cast<CUdeviceptr>(gate), epoch, CU_STREAM_WAIT_VALUE_GEQ),
          "gate of the uploads");
    cudaEvent_t start, end, up_end, run_end;
    for (auto* e : {&start, &end, &up_end, &run_end}) check(cudaEventCreate(e), "event");
    check(cudaEventRecord(start, up), "event");
    launch(epoch);
    check(cudaEventRecord(run_end, run), "event");
    for (std::size_t ri = 0; ri < sc.regions.size(); ++ri) {
      const int I = sc.regions[ri].first, J = sc.regions[ri].second;
      const int r0 = I * o.r, rows = std::min(o.r, n - r0), c0 = J * o.w, cols = std::min(o.w, n - c0);
      check(wait_value(reinterpret_cast<CUstream>(down), reinterpret_cast<CUdeviceptr>(region_done + ri),
                       epoch * sc.tiles_in_region[ri], CU_STREAM_WAIT_VALUE_GEQ),
            "wait for a region");
      const std::size_t off = std::size_t(r0) + std::size_t(c0) * n;
      check(cudaMemcpy2DAsync(hc.data() + off, std::size_t(n) * sizeof(T), dc + off, std::size_t(n) * sizeof(T),
                              std::size_t(rows) * sizeof(T), cols, cudaMemcpyDeviceToHost, down),
            "download of a region");
    }
    check(cudaEventRecord(end, down), "event");
    // Packed: the call starts with the packing, the copies issued as their
    // pieces are packed; else every copy is issued before the gate opens.
    auto open_gate = [&] {
      check(write_value(reinterpret_cast<CUstream>(aux), reinterpret_cast<CUdeviceptr>(gate), epoch, 0), "gate open");
    };
    if (packer) {
      packer->start(ha.data(), hb.data());
      open_gate();
    }
    for (std::size_t i = 0; i < sc.uploads.size(); ++i) {
      const Piece& p = sc.uploads[i];
      T* const dst = p.a ? da : db;
      if (const T* src = packer ? packer->packed(i) : nullptr) {
        const std::size_t off = std::size_t(p.r0) + std::size_t(p.c0) * n;
        check(cudaMemcpy2DAsync(dst + off, std::size_t(n) * sizeof(T), src, std::size_t(p.rows) * sizeof(T),
                                std::size_t(p.rows) * sizeof(T), p.cols, cudaMemcpyHostToDevice, up),
              "upload of a packed piece");
      } else {
        copy_piece(p, dst, p.a ? ha.data() : hb.data(), n, up);
      }
      check(write_value(reinterpret_cast<CUstream>(up), reinterpret_cast<CUdeviceptr>(flags + p.flag), epoch, 0),
            "flag of a piece");
    }
    check(cudaEventRecord(up_end, up), "event");
    if (packer) packer->join();
    else open_gate();
    check(cudaStreamSynchronize(run), "streamed kernel");
    if (failed_now()) {
      // Release the downloads so that nothing hangs, then fail.
      std::vector<unsigned int> release(sc.regions.size(), ~0u);
      check(cudaMemcpy(region_done, release.data(), release.size() * sizeof(unsigned int), cudaMemcpyHostToDevice),
            "release");
      check(cudaDeviceSynchronize(), "drain");
      std::fprintf(stderr, "egpu-streamed-probe: a wait timed out in the streamed call\n");
      return 1;
    }
    check(cudaEventSynchronize(end), "streamed call");
    check(cudaStreamSynchronize(up), "uploads");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start, end), "elapsed");
    t_call.push_back(ms);
    check(cudaEventElapsedTime(&ms, start, up_end), "elapsed");
    t_up_end.push_back(ms);
    check(cudaEventElapsedTime(&ms, start, run_end), "elapsed");
    t_run_end.push_back(ms);
    for (auto e : {start, end, up_end, run_end}) check(cudaEventDestroy(e), "event");
  }

  // Check: the downloaded C against cuBLAS's product of the same operands.
  std::vector<T> ref(elems);
  check(cudaMemcpy(ref.data(), dref, bytes, cudaMemcpyDeviceToHost), "reference");
  double worst = 0, scale = 0;
  std::size_t bad = 0;
  for (std::size_t i = 0; i < elems; ++i) {
    scale = std::max(scale, double(std::abs(ref[i])));
    const double d = std::abs(double(hc[i]) - double(ref[i]));
    if (!(d <= 1e300)) ++bad;  // NaN: not written
    else worst = std::max(worst, d);
  }
  const double rel = worst / scale;
  // Drop the warm-up.
  for (auto* v : {&t_up, &t_down, &t_both, &t_own, &t_cublas, &t_kernel_resident, &t_kernel_nowait, &t_plain, &t_plain_looping, &t_call, &t_variant[0], &t_variant[1], &t_variant[2], &t_up_end, &t_run_end})
    if (!v->empty()) v->erase(v->begin());
  const double up_ms = median(t_up), down_ms = median(t_down), both_ms = median(t_both);
  const double own_ms = median(t_own), cublas_ms = median(t_cublas), call_ms = median(t_call);
  const double floor_own = std::max({own_ms, up_ms, down_ms, both_ms});
  const double floor_cublas = std::max({cublas_ms, up_ms, down_ms, both_ms});
  std::printf("N %d %s, %zu units, %zu uploads, %zu regions, grid %d (%d per SM)\n", n,
              sizeof(T) == 4 ? "float" : "double", sc.units.size(),
              sc.uploads.size(), sc.regions.size(), grid, per_sm);
  std::printf("options: ks %d slabs %d ka %d wb %d r %d w %d ka2 %d kb2 %d%s%s pack %d between %d split %d%s\n", o.ks,
              o.slabs, o.ka, o.wb, o.r, o.w, o.ka2, o.kb2, o.warp_polls ? " warp-polls" : "", o.grouped ? " grouped" : "",
              o.pack_threads, o.between, o.split, o.b_first ? " b-first" : "");
  std::printf("A+B up %.3f ms (%.1f GB/s), C down %.3f ms (%.1f GB/s), all three both ways %.3f ms\n", up_ms,
              2 * bytes / up_ms / 1e6, down_ms, bytes / down_ms / 1e6, both_ms);
  std::printf("device GEMM: own %.3f ms (%.1f Tflop/s), cuBLAS %.3f ms; streamed kernel on resident data %.3f ms "
              "(%.2f x own), compiled without the waits %.3f ms (%.2f x own)\n", own_ms,
              2.0 * n * n * double(n) / own_ms / 1e9, cublas_ms, median(t_kernel_resident),
              median(t_kernel_resident) / own_ms, median(t_kernel_nowait), median(t_kernel_nowait) / own_ms);
  if (sc.one_unit_per_tile)
    std::printf("without the waits, also: without the dispenser %.3f ms, without the signals %.3f ms, without either %.3f ms\n",
                median(t_variant[0]), median(t_variant[1]), median(t_variant[2]));
  std::printf("plain kernel of the same tile: a block per tile %.3f ms, the resident blocks looping %.3f ms\n",
              median(t_plain), median(t_plain_looping));
  std::printf("streamed call: median %.3f ms (min %.3f, max %.3f) = %.3f x the own floor %.3f ms, %.3f x cuBLAS's %.3f ms\n",
              call_ms, *std::min_element(t_call.begin(), t_call.end()), *std::max_element(t_call.begin(), t_call.end()),
              call_ms / floor_own, floor_own, call_ms / floor_cublas, floor_cublas);
  std::printf("in the streamed call, from its first upload: uploads end at %.3f ms (%.1f GB/s), the kernel at %.3f ms, "
              "the downloads at %.3f ms\n", median(t_up_end), 2 * bytes / median(t_up_end) / 1e6, median(t_run_end), call_ms);
  std::printf("check against cuBLAS: max |diff| / max |C| = %.2e, %zu elements not written\n", rel, bad);
  for (auto* v : {&ha, &hb, &hc}) check(cudaHostUnregister(v->data()), "cudaHostUnregister");
  // Both sum k products in their own order: float's rounding grows with k.
  return (bad == 0 && rel < (sizeof(T) == 4 ? 1e-4 : 1e-12)) ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  probe::name = "egpu-streamed-probe";
  const Options o = parse(argc, argv);
  return o.single ? run_probe<float>(o) : run_probe<double>(o);
}

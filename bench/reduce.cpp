// egpu-bench reduce: reductions on the GPU.
//
// Device-resident part. Per scalar (f32, f64), size 2^L and operation:
//   sum          a.sum()
//   squaredNorm  a.matrix().squaredNorm(): the sum of a program ending in abs2
//   maxCoeff     a.maxCoeff()
//   (a*b).sum    (a * b).sum(), the product fused into the reduction
//   colwise.sum  A.colwise().sum()   of a rows x cols matrix
//   rowwise.sum  A.rowwise().sum()
// The full reductions read a vector of n = 2^L values (an n x 1 Map); the
// partial ones a matrix of 2^ceil(L/2) rows and 2^floor(L/2) columns
// (16384 x 16384 for L = 28), its data column-major ("col") or row-major
// ("row"): the same device buffer either way. Data: uniform in [-1, 1)
// (gpu::fill_uniform, seeds 1 and 2 for a and b). Systems, called in turn:
//   copy    cudaMemcpyAsync device to device of n values (the rate to reach)
//   egpu    egpu::backend::device_reduce on the program that
//           egpu::detail::describe_elementwise makes of Eigen Maps of the
//           device pointers, results into device memory
//   CUB     cub::DeviceReduce::Sum / Max, TransformReduce (squares; a[i]*b[i]
//           through a counting iterator), DeviceSegmentedReduce::Sum where
//           the reduced values are contiguous (column sums of column-major
//           data, row sums of row-major data); where they are strided (column
//           sums of row-major data, row sums of column-major data) a
//           hand-written two-pass kernel instead (CUB has no single call
//           for it): coalesced partial sums over slices of the reduced
//           direction, then the slices added in order. The "baseline"
//           column names which one ran.
//   Tensor  Eigen's Tensor module on Eigen::GpuDevice (same stream):
//           TensorMaps of the device pointers, out.device(gpu) = A.sum(),
//           A.square().sum(), A.maximum(), (A * B).sum(), A.sum(dims{0})
//           or A.sum(dims{1}), in the data's layout.
// Timing: device events around each call on one stream, the systems in
// turn call by call, each timed call queued behind a StreamHold (so the
// events time the device's work, not the host's launches); `--warmups`
// untimed calls of each first, median of `--repeats`. A call that waits for
// its own stream (the hold then expires after a second) is timed again
// without the hold, and so are its later calls ("waits for its stream" in
// the note). egpu's first call is timed apart, by wall clock ("first call":
// it may compile the kernels with NVRTC; "(compiled)" when it did).
// Columns:
//   copy GB/s    2 n sizeof(T) / copy time (bytes read + written)
//   X ms         median time of system X
//   X/copy       effective bandwidth of X over the copy rate, where the
//                effective bandwidth is the bytes the reduction must read
//                once (n sizeof(T); twice that for (a*b).sum) over X's
//                time; 1.0 reads as fast as the copy moves bytes
//   same bits    per system (egpu/baseline/Tensor): "yes" when the result
//                of every call (first call, warm-ups and timed repeats,
//                each written to its own place) equals the first call's
//                bit for bit; the CSV gives the count of equal calls
//   err          per system, the worst over its calls of
//                |result - exact| / scale per reduced value, where exact is
//                the sum of the terms (a, T(a*a) or T(a*b), each rounded to
//                T as every system computes them) in long double with
//                compensation, and scale the sum of the terms' magnitudes;
//                for maxCoeff, |result - max| / |max| (0: exact)
// egpu's row is marked WRONG when its err exceeds 8 epsilon(T) (its sums
// are compensated: about 2 u) or its maxCoeff is not exact, NOT IDENTICAL
// when any call's bits differ; then the exit status is 1.
//
// Host-resident part (skipped with --skip-host). a, b are
// Eigen::Array<T, Dynamic, 1> of 2^L values (default L = 27, f64), random
// in [-1, 1); per operation (default sum and (a*b).sum) and memory mode
// (pageable; pinned: a and b page-locked with egpu::pin):
//   egpu         egpu::gpu(a).sum(), egpu::gpu(a * b).sum(),
//                egpu::gpu(a).squaredNorm(), egpu::gpu(a).maxCoeff()
//   CPU 1 core   a.sum(), (a * b).sum(), ... as Eigen runs them
//   CPU OpenMP   the same over --threads contiguous blocks (one per thread,
//                `#pragma omp parallel for`), the partial results combined
//                in block order
// Timing: wall clock around each whole call, --warmups untimed calls first,
// median of --repeats. Floors from rates measured at the start of the run
// (gpu::measure_bandwidth, gpu::measure_host_copy) with up = the bytes of
// the operands read: PCIe floor = up / H2D; pageable memory also passes
// through the staging threads, floor = max(up / H2D, up / pack). "of PCIe"
// and "of floor" = that floor / egpu seconds (1.0: at the floor).
// "diff vs CPU" = |egpu - CPU 1 core| / scale (as err above); "bound" =
// CPU 1 core's own error against the exact value plus 8 epsilon(T)
// (maxCoeff: 0, they must be equal); a diff above the bound marks the row
// WRONG (exit status 1). "same bits" as above, over egpu's calls.
#include <egpu/egpu.hpp>

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "backend/device_reduce.hpp"
#include "bench_common.hpp"
#include "egpu/adapter/elementwise_parts.hpp"
#include "egpu/detail/reduction.hpp"
#include "elementwise_baselines.hpp"
#include "gpu_baselines.hpp"
#include "gpu_util.hpp"
#include "host_data.hpp"
#include "reduce_baselines.hpp"
#include "tensor_baseline.hpp"
#include "runtime/context.hpp"
#include "runtime/runtime_kernels.hpp"
#include "subcommands.hpp"

namespace egpu_bench {
namespace {

namespace ed = egpu::detail;

const char* const kUsage =
    "usage: egpu-bench reduce [options]\n"
    "device-resident (egpu, CUB or a hand-written kernel, Eigen Tensor on GpuDevice, copy rate):\n"
    "  --log2-sizes L,L,...  elements as powers of two (default 24,28; partial reductions\n"
    "                        use 2^ceil(L/2) x 2^floor(L/2): 16384 x 16384 for 28)\n"
    "  --scalars S,S,...     f32, f64 (default both)\n"
    "  --ops O,O,...         sum, squaredNorm, maxCoeff, (a*b).sum, colwise.sum, rowwise.sum\n"
    "                        (default all; quote (a*b).sum in the shell)\n"
    "  --layouts L,L,...     col, row: the data's layout for colwise.sum and rowwise.sum\n"
    "                        (default both)\n"
    "  --systems S,S,...     egpu, cub, tensor (default all; the copy always runs)\n"
    "  --repeats R           timed runs per system, median reported (default 7)\n"
    "  --warmups W           untimed runs first (default 2)\n"
    "  --skip-device         no device-resident rows\n"
    "host-resident (egpu::gpu(a).sum() and the like against PCIe floors and CPU Eigen):\n"
    "  --skip-host           no host-resident rows\n"
    "  --host-log2-sizes L   (default 27: 1 GiB per f64 vector)\n"
    "  --host-scalars S,...  f64, f32 (default f64)\n"
    "  --host-ops O,O,...    sum, squaredNorm, maxCoeff, (a*b).sum (default sum,(a*b).sum)\n"
    "  --memory M,M,...      pageable, pinned (default both)\n"
    "  --threads T           CPU OpenMP threads (default: all cores)\n"
    "  --bw-mib M            size of the copy-rate measurements (default 1024)\n"
    "  --streams S           egpu::Options::streams (0: egpu chooses)\n"
    "  --staging-threads T   egpu::Options::staging_threads, also the host copy-rate threads\n"
    "  --chunk-kib K         egpu::Options::chunk_bytes in KiB (0: egpu chooses)\n"
    "output:\n"
    "  --csv FILE | --csv-dir DIR | --no-csv\n"
    "                        device rows go to reduce-<date>-<device>.csv, host rows to\n"
    "                        reduce-host-<date>-<device>.csv (with --csv FILE: FILE and\n"
    "                        FILE's name with -host before .csv)\n";

const std::vector<std::string> kOps = {"sum", "squaredNorm", "maxCoeff", "(a*b).sum", "colwise.sum", "rowwise.sum"};
const std::vector<std::string> kFullOps = {"sum", "squaredNorm", "maxCoeff", "(a*b).sum"};
const std::vector<std::string> kSystems = {"egpu", "cub", "tensor"};

enum class Op { sum, squared_norm, max, dot, colwise, rowwise };

Op op_of(const std::string& name) {
  if (name == "sum") return Op::sum;
  if (name == "squaredNorm") return Op::squared_norm;
  if (name == "maxCoeff") return Op::max;
  if (name == "(a*b).sum") return Op::dot;
  if (name == "colwise.sum") return Op::colwise;
  if (name == "rowwise.sum") return Op::rowwise;
  throw std::invalid_argument("unknown operation " + name);
}

bool is_partial(Op op) { return op == Op::colwise || op == Op::rowwise; }

gpu::FullOp full_op(Op op) {
  switch (op) {
    case Op::squared_norm: return gpu::FullOp::squared_norm;
    case Op::max: return gpu::FullOp::max;
    case Op::dot: return gpu::FullOp::dot;
    default: return gpu::FullOp::sum;
  }
}

struct Settings {
  std::vector<long> log2_sizes, host_log2_sizes;
  std::vector<std::string> scalars, ops, layouts, systems, host_scalars, host_ops, memories;
  int repeats = 7, warmups = 2, threads = 1;
  long bw_mib = 1024;
  bool skip_host = false, skip_device = false;
  egpu::Options options;
  bool runs(const std::string& system) const {
    return std::find(systems.begin(), systems.end(), system) != systems.end();
  }
};

// ---- exact values -------------------------------------------------------------------

// A long double sum that carries its rounding error (Neumaier).
struct Accurate {
  long double s = 0, c = 0;
  void add(long double x) {
    const long double t = s + x;
    c += std::fabs(s) >= std::fabs(x) ? (s - t) + x : (x - t) + s;
    s = t;
  }
  long double value() const { return s + c; }
};

// What a reduced value should be, and the scale its error is measured in.
struct Exact {
  long double value = 0, scale = 0;
};

// The i-th term of a full reduction, rounded to T as the systems compute it.
template <class T>
T term(Op op, const T* a, const T* b, std::size_t i) {
  if (op == Op::squared_norm) return a[i] * a[i];
  if (op == Op::dot) return a[i] * b[i];
  return a[i];
}

template <class T>
Exact exact_full(Op op, const T* a, const T* b, std::size_t n) {
  std::mutex lock;
  if (op == Op::max) {
    T best = -std::numeric_limits<T>::infinity();
    parallel_for(n, [&](std::size_t begin, std::size_t end) {
      T m = -std::numeric_limits<T>::infinity();
      for (std::size_t i = begin; i < end; ++i) m = std::max(m, a[i]);
      std::lock_guard<std::mutex> guard(lock);
      best = std::max(best, m);
    });
    return {best, std::fabs(static_cast<long double>(best))};
  }
  std::vector<std::pair<std::size_t, Exact>> pieces;
  parallel_for(n, [&](std::size_t begin, std::size_t end) {
    Accurate sum;
    long double scale = 0;
    for (std::size_t i = begin; i < end; ++i) {
      const long double x = term(op, a, b, i);
      sum.add(x);
      scale += std::fabs(x);
    }
    std::lock_guard<std::mutex> guard(lock);
    pieces.push_back({begin, {sum.value(), scale}});
  });
  std::sort(pieces.begin(), pieces.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  Accurate total;
  long double scale = 0;
  for (const auto& piece : pieces) {
    total.add(piece.second.value);
    scale += piece.second.scale;
  }
  return {total.value(), scale};
}

// Sums of `segments` contiguous runs of `length` values.
template <class T>
std::vector<Exact> exact_segments(const T* p, std::int64_t segments, std::int64_t length) {
  std::vector<Exact> out(static_cast<std::size_t>(segments));
  parallel_for(out.size(), [&](std::size_t begin, std::size_t end) {
    for (std::size_t s = begin; s < end; ++s) {
      Accurate sum;
      long double scale = 0;
      const T* q = p + static_cast<std::int64_t>(s) * length;
      for (std::int64_t k = 0; k < length; ++k) {
        sum.add(q[k]);
        scale += std::fabs(static_cast<long double>(q[k]));
      }
      out[s] = {sum.value(), scale};
    }
  });
  return out;
}

// out[j] = sum over k < length of p[k * width + j].
template <class T>
std::vector<Exact> exact_strided(const T* p, std::int64_t width, std::int64_t length) {
  std::vector<Exact> out(static_cast<std::size_t>(width));
  parallel_for(out.size(), [&](std::size_t begin, std::size_t end) {
    std::vector<Accurate> sums(end - begin);
    std::vector<long double> scales(end - begin, 0.0L);
    for (std::int64_t k = 0; k < length; ++k) {
      const T* row = p + k * width;
      for (std::size_t j = begin; j < end; ++j) {
        sums[j - begin].add(row[j]);
        scales[j - begin] += std::fabs(static_cast<long double>(row[j]));
      }
    }
    for (std::size_t j = begin; j < end; ++j) out[j] = {sums[j - begin].value(), scales[j - begin]};
  });
  return out;
}

// The worst |x - exact| / scale over the values (NaN when any x is NaN).
template <class T>
double worst_error(const T* x, const std::vector<Exact>& exact) {
  double worst = 0;
  for (std::size_t k = 0; k < exact.size(); ++k) {
    if (std::isnan(x[k])) return std::numeric_limits<double>::quiet_NaN();
    const long double d = std::fabs(static_cast<long double>(x[k]) - exact[k].value);
    worst = std::max(worst, static_cast<double>(exact[k].scale > 0 ? d / exact[k].scale : d));
  }
  return worst;
}

// ---- device-resident ----------------------------------------------------------------

// Each call of a system writes its results to a place of its own, so that
// every call can be compared with the first afterwards.
template <class T>
class Slots {
 public:
  Slots(std::int64_t count, int capacity, cudaStream_t stream)
      : m_count(count), m_capacity(capacity), m_mem(static_cast<std::size_t>(count) * capacity * sizeof(T), stream) {}
  T* next() { return static_cast<T*>(m_mem.p) + std::int64_t(std::min(m_calls++, m_capacity - 1)) * m_count; }
  int calls() const { return std::min(m_calls, m_capacity); }
  std::int64_t count() const { return m_count; }
  // The results of the calls made, one after the other.
  std::vector<T> download() const {
    std::vector<T> host(static_cast<std::size_t>(m_count) * calls());
    gpu::check(cudaMemcpy(host.data(), m_mem.p, host.size() * sizeof(T), cudaMemcpyDeviceToHost), "download results");
    return host;
  }

 private:
  std::int64_t m_count;
  int m_capacity, m_calls = 0;
  gpu::DeviceMemory m_mem;
};

struct SystemResult {
  bool ran = false, waited = false;
  std::string error;  // non-empty: the system threw
  double seconds = 0, err = -1;
  int same = 0, calls = 0;
  bool identical() const { return calls > 0 && same == calls; }
};

struct DeviceRow {
  std::string scalar, op, layout, baseline;
  long log2_n = 0;
  std::int64_t rows = 0, cols = 0;
  double bytes = 0, copy_s = 0, first_call_s = 0;
  bool compiled = false, failed = false;
  SystemResult egpu, base, tensor;
  std::string note;
};

// A system of the turn: its call, its result, and where its calls write.
struct TimedSystem {
  std::function<void()> run;
  SystemResult* result;
};

// Times the systems in turn (see the header comment): each system's median
// lands in its result.
void time_systems(cudaStream_t stream, int warmups, int repeats, std::vector<TimedSystem>& systems) {
  gpu::Event start, stop;
  for (TimedSystem& s : systems)
    for (int i = 0; i < warmups; ++i) s.run();
  gpu::check(cudaStreamSynchronize(stream), "warm-up");
  std::vector<std::vector<double>> seconds(systems.size());
  for (int i = 0; i < repeats; ++i)
    for (std::size_t k = 0; k < systems.size(); ++k) {
      SystemResult& r = *systems[k].result;
      for (;;) {
        std::unique_ptr<gpu::StreamHold> hold;
        if (!r.waited) hold = std::make_unique<gpu::StreamHold>(stream);
        gpu::check(cudaEventRecord(start.e, stream), "cudaEventRecord");
        systems[k].run();
        gpu::check(cudaEventRecord(stop.e, stream), "cudaEventRecord");
        if (hold) hold->release();
        gpu::check(cudaEventSynchronize(stop.e), "cudaEventSynchronize");
        if (hold && hold->expired()) {
          r.waited = true;  // the call synchronized its own stream: again, without the hold
          continue;
        }
        float ms = 0;
        gpu::check(cudaEventElapsedTime(&ms, start.e, stop.e), "cudaEventElapsedTime");
        seconds[k].push_back(1e-3 * static_cast<double>(ms));
        break;
      }
    }
  for (std::size_t k = 0; k < systems.size(); ++k) systems[k].result->seconds = median(seconds[k]);
}

// Compares every call's results with the first's and measures their error.
template <class T>
void check_results(const Slots<T>& slots, const std::vector<Exact>& exact, SystemResult& r) {
  if (!r.ran) return;
  const std::vector<T> all = slots.download();
  const std::size_t count = static_cast<std::size_t>(slots.count());
  r.calls = slots.calls();
  r.same = 0;
  r.err = 0;
  for (int c = 0; c < r.calls; ++c) {
    const T* x = all.data() + count * c;
    if (std::memcmp(x, all.data(), count * sizeof(T)) == 0) ++r.same;
    const double e = worst_error(x, exact);
    if (std::isnan(e) || !(e <= r.err)) r.err = e;
    if (std::isnan(r.err)) break;
  }
}

// The device data of one scalar and size, and its host copy for the exact
// values (downloaded when first needed).
template <class T>
struct DeviceData {
  std::size_t n;
  cudaStream_t stream;
  gpu::DeviceMemory a, b, copy;
  std::unique_ptr<T[]> host_a, host_b;
  DeviceData(std::size_t count, cudaStream_t s)
      : n(count), stream(s), a(n * sizeof(T), s), b(n * sizeof(T), s), copy(n * sizeof(T), s) {
    gpu::fill_uniform(static_cast<T*>(a.p), n, 1, stream);
    gpu::fill_uniform(static_cast<T*>(b.p), n, 2, stream);
    gpu::check(cudaStreamSynchronize(stream), "fill");
  }
  const T* host(bool second) {
    std::unique_ptr<T[]>& h = second ? host_b : host_a;
    if (!h) {
      h.reset(new T[n]);
      gpu::check(cudaMemcpy(h.get(), second ? b.p : a.p, n * sizeof(T), cudaMemcpyDeviceToHost), "download data");
    }
    return h.get();
  }
};

template <class T>
using ColMap = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor>>;
template <class T>
using RowMap = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>;
template <class T>
using VecMap = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;

template <class T>
DeviceRow run_device_case(const std::string& scalar, const std::string& op_name, const std::string& layout,
                          long log2_n, const Settings& s, DeviceData<T>& d) {
  const Op op = op_of(op_name);
  const bool partial = is_partial(op), row_major = layout == "row";
  const std::size_t n = d.n;
  egpu::runtime::Context& ctx = egpu::runtime::thread_context();
  const cudaStream_t stream = d.stream;
  const T* pa = static_cast<const T*>(d.a.p);
  const T* pb = static_cast<const T*>(d.b.p);

  DeviceRow row;
  row.scalar = scalar;
  row.op = op_name;
  row.layout = partial ? layout : "-";
  row.log2_n = log2_n;
  row.rows = partial ? std::int64_t(1) << ((log2_n + 1) / 2) : std::int64_t(n);
  row.cols = partial ? std::int64_t(1) << (log2_n / 2) : 1;
  row.bytes = double(n) * sizeof(T) * (op == Op::dot ? 2 : 1);

  // egpu's program and reduction.
  std::vector<std::shared_ptr<void>> keep;
  ed::ElementwiseProgram program;
  ed::Reduction reduction;
  if (partial) {
    program = row_major ? ed::describe_elementwise(RowMap<T>(pa, row.rows, row.cols), keep)
                        : ed::describe_elementwise(ColMap<T>(pa, row.rows, row.cols), keep);
    reduction.axis = op == Op::colwise ? ed::ReduceAxis::each_column : ed::ReduceAxis::each_row;
  } else {
    const VecMap<T> A(pa, Eigen::Index(n)), B(pb, Eigen::Index(n));
    program = op == Op::dot ? ed::describe_elementwise(A * B, keep) : ed::describe_elementwise(A, keep);
    if (op == Op::squared_norm) ed::append_abs2(program);
    if (op == Op::max) reduction.op = ed::ReduceOp::max;
  }
  const std::int64_t count = partial ? (op == Op::colwise ? row.cols : row.rows) : 1;

  // The baseline: which CUB call (or the hand-written kernel), its scratch.
  // Contiguous: the reduced values of one result are next to each other.
  const bool contiguous = (op == Op::colwise) != row_major;
  std::size_t temp_bytes = 0;
  if (s.runs("cub")) {
    if (!partial) {
      row.baseline = op == Op::sum ? "CUB Sum" : op == Op::max ? "CUB Max" : "CUB TransformReduce";
      temp_bytes = gpu::cub_full_temp_bytes<T>(full_op(op), n);
    } else if (contiguous) {
      row.baseline = "CUB SegmentedReduce";
      temp_bytes = gpu::cub_segmented_sum_temp_bytes<T>(count, std::int64_t(n) / count);
    } else {
      row.baseline = "hand 2-pass";
      temp_bytes = gpu::hand_strided_sum_temp_bytes<T>(count, std::int64_t(n) / count);
    }
  }
  gpu::DeviceMemory temp(std::max<std::size_t>(temp_bytes, 256), stream);
  std::unique_ptr<gpu::EigenTensor> tensor;
  if (s.runs("tensor")) tensor = std::make_unique<gpu::EigenTensor>(stream);

  const int capacity = s.warmups + s.repeats + 3;
  Slots<T> egpu_out(count, capacity, stream), base_out(count, capacity, stream), tensor_out(count, capacity, stream);
  SystemResult copy_result;
  copy_result.ran = true;
  auto run_copy = [&] {
    gpu::check(cudaMemcpyAsync(d.copy.p, d.a.p, n * sizeof(T), cudaMemcpyDeviceToDevice, stream), "copy");
  };
  auto run_egpu = [&] { egpu::backend::device_reduce(program, reduction, egpu_out.next(), ctx, stream); };
  auto run_base = [&] {
    T* out = base_out.next();
    if (!partial)
      gpu::cub_full<T>(full_op(op), pa, pb, n, out, temp.p, temp_bytes, stream);
    else if (contiguous)
      gpu::cub_segmented_sum<T>(pa, count, std::int64_t(n) / count, out, temp.p, temp_bytes, stream);
    else
      gpu::hand_strided_sum<T>(pa, count, std::int64_t(n) / count, out, temp.p, temp_bytes, stream);
  };
  auto run_tensor = [&] {
    T* out = tensor_out.next();
    if (partial)
      tensor->partial_sum<T>(pa, row.rows, row.cols, row_major, op == Op::colwise, out);
    else
      tensor->full<T>(full_op(op), pa, pb, n, out);
  };

  // A first call of each system, apart: egpu's may compile its kernels, and
  // a system that throws is left out of the timing.
  std::vector<TimedSystem> systems = {{run_copy, &copy_result}};
  auto first_call = [&](const char* name, const std::function<void()>& run, SystemResult& r) {
    try {
      gpu::check(cudaStreamSynchronize(stream), "before the first call");
      const double t0 = now_seconds();
      run();
      gpu::check(cudaStreamSynchronize(stream), "first call");
      if (&r == &row.egpu) row.first_call_s = now_seconds() - t0;
      r.ran = true;
      systems.push_back({run, &r});
    } catch (const std::exception& e) {
      r.error = e.what();
      std::fprintf(stderr, "egpu-bench reduce: 2^%ld %s %s %s: %s failed: %s\n", log2_n, scalar.c_str(),
                   op_name.c_str(), row.layout.c_str(), name, e.what());
    }
  };
  if (s.runs("egpu")) {
    const long compiled_before = egpu::runtime::runtime_kernel_stats().compiled;
    first_call("egpu", run_egpu, row.egpu);
    row.compiled = egpu::runtime::runtime_kernel_stats().compiled > compiled_before;
  }
  if (s.runs("cub")) first_call(row.baseline.c_str(), run_base, row.base);
  if (s.runs("tensor")) first_call("Eigen Tensor", run_tensor, row.tensor);

  time_systems(stream, s.warmups, s.repeats, systems);
  row.copy_s = copy_result.seconds;

  // The exact values, then every call's results against them.
  std::vector<Exact> exact;
  if (!partial)
    exact = {exact_full(op, d.host(false), op == Op::dot ? d.host(true) : nullptr, n)};
  else if (contiguous)
    exact = exact_segments(d.host(false), count, std::int64_t(n) / count);
  else
    exact = exact_strided(d.host(false), count, std::int64_t(n) / count);
  check_results(egpu_out, exact, row.egpu);
  check_results(base_out, exact, row.base);
  check_results(tensor_out, exact, row.tensor);

  auto add_note = [&](const std::string& text) { row.note += (row.note.empty() ? "" : "; ") + text; };
  if (!row.egpu.error.empty()) {
    row.failed = true;
    add_note("egpu FAILED: " + row.egpu.error);
  } else if (row.egpu.ran) {
    const double bound = op == Op::max ? 0.0 : 8.0 * double(std::numeric_limits<T>::epsilon());
    if (!(row.egpu.err <= bound)) {
      row.failed = true;
      add_note(format("egpu WRONG (err %.1e > %.1e)", row.egpu.err, bound));
    }
    if (!row.egpu.identical()) {
      row.failed = true;
      add_note(format("egpu NOT IDENTICAL (%d of %d calls equal the first)", row.egpu.same, row.egpu.calls));
    }
  }
  if (!row.base.error.empty()) add_note(row.baseline + " failed: " + row.base.error);
  if (!row.tensor.error.empty()) add_note("Eigen Tensor failed: " + row.tensor.error);
  if (row.egpu.waited) add_note("egpu waits for its stream");
  if (row.base.waited) add_note(row.baseline + " waits for its stream");
  if (row.tensor.waited) add_note("Eigen Tensor waits for its stream");
  return row;
}

std::vector<std::string> device_csv_headers() {
  return {"date", "device", "commit", "scalar", "op", "layout", "rows", "cols", "elements", "bytes_read",
          "copy_seconds", "copy_gbps", "egpu_seconds", "egpu_gbps", "egpu_of_copy", "baseline", "baseline_seconds",
          "baseline_gbps", "baseline_of_copy", "tensor_seconds", "tensor_gbps", "tensor_of_copy", "egpu_same_calls",
          "baseline_same_calls", "tensor_same_calls", "egpu_err", "baseline_err", "tensor_err",
          "egpu_first_call_seconds", "compiled", "status", "repeats", "warmups", "note"};
}

// Runs every device-resident case; false when an egpu row failed.
bool run_device_part(const Settings& s, const RunInfo& info, const CsvChoice& csv_choice) {
  std::printf("\ndevice-resident; events per call, copy / egpu / baseline / Eigen Tensor in turn, median of %d "
              "after %d warm-up(s)\n",
              s.repeats, s.warmups);
  std::fflush(stdout);
  const std::unique_ptr<Csv> csv = open_csv(csv_choice, "reduce", info, device_csv_headers());
  Table table({"scalar", "op", "layout", "shape", "copy GB/s", "egpu ms", "egpu/copy", "baseline", "base ms",
               "base/copy", "Tensor ms", "Tensor/copy", "same bits e/b/T", "err egpu", "err base", "err Tensor",
               "first call ms", "note"});
  egpu::runtime::Context& ctx = egpu::runtime::thread_context();
  const cudaStream_t stream = ctx.stream(0);
  bool all_ok = true;
  for (const std::string& scalar : s.scalars)
    for (long log2_n : s.log2_sizes) {
      auto run_size = [&](auto* zero) {
        using T = std::remove_pointer_t<decltype(zero)>;
        DeviceData<T> data(std::size_t(1) << log2_n, stream);
        for (const std::string& op : s.ops) {
          const std::vector<std::string> layouts = is_partial(op_of(op)) ? s.layouts : std::vector<std::string>{"-"};
          for (const std::string& layout : layouts) {
            DeviceRow r;
            try {
              r = run_device_case<T>(scalar, op, layout, log2_n, s, data);
            } catch (const std::exception& e) {
              r.scalar = scalar;
              r.op = op;
              r.layout = layout;
              r.log2_n = log2_n;
              r.failed = true;
              r.note = std::string("FAILED: ") + e.what();
              std::fprintf(stderr, "egpu-bench reduce: 2^%ld %s %s %s: %s\n", log2_n, scalar.c_str(), op.c_str(),
                           layout.c_str(), e.what());
            }
            const double elem = sizeof(T);
            const double copy_rate = r.copy_s > 0 ? 2.0 * double(data.n) * elem / r.copy_s : 0.0;
            auto of_copy = [&](const SystemResult& x) { return r.bytes / x.seconds / copy_rate; };
            auto ms = [](const SystemResult& x) { return x.ran ? format("%.3f", 1e3 * x.seconds) : std::string("-"); };
            auto ratio = [&](const SystemResult& x) { return x.ran ? format("%.3f", of_copy(x)) : std::string("-"); };
            auto same = [](const SystemResult& x) { return x.ran ? (x.identical() ? "yes" : "no") : "-"; };
            auto err = [](const SystemResult& x) { return x.ran ? format("%.1e", x.err) : std::string("-"); };
            const std::string shape =
                is_partial(op_of(op)) ? format("%ldx%ld", long(r.rows), long(r.cols)) : format("2^%ld", r.log2_n);
            table.add({r.scalar, r.op, r.layout, shape, r.copy_s > 0 ? format("%.0f", copy_rate / 1e9) : "-", ms(r.egpu), ratio(r.egpu),
                       r.baseline.empty() ? "-" : r.baseline, ms(r.base), ratio(r.base), ms(r.tensor), ratio(r.tensor),
                       std::string(same(r.egpu)) + "/" + same(r.base) + "/" + same(r.tensor), err(r.egpu), err(r.base),
                       err(r.tensor),
                       r.egpu.ran ? format("%.1f%s", 1e3 * r.first_call_s, r.compiled ? " (compiled)" : "")
                                  : std::string("-"),
                       r.note});
            if (csv) {
              auto c_s = [](const SystemResult& x) { return x.ran ? format("%.6g", x.seconds) : std::string(); };
              auto c_gbps = [&](const SystemResult& x) {
                return x.ran ? format("%.1f", r.bytes / x.seconds / 1e9) : std::string();
              };
              auto c_ratio = [&](const SystemResult& x) { return x.ran ? format("%.4f", of_copy(x)) : std::string(); };
              auto c_same = [](const SystemResult& x) { return x.ran ? format("%d/%d", x.same, x.calls) : std::string(); };
              auto c_err = [](const SystemResult& x) { return x.ran ? format("%.3g", x.err) : std::string(); };
              std::string note = r.note;
              for (char& ch : note)
                if (ch == ',' || ch == '\n') ch = ';';
              csv->add({info.date, info.device, info.commit, r.scalar, r.op, r.layout, format("%ld", long(r.rows)),
                        format("%ld", long(r.cols)), format("%zu", data.n), format("%.0f", r.bytes),
                        format("%.6g", r.copy_s), format("%.1f", copy_rate / 1e9), c_s(r.egpu), c_gbps(r.egpu),
                        c_ratio(r.egpu), r.baseline, c_s(r.base), c_gbps(r.base), c_ratio(r.base), c_s(r.tensor),
                        c_gbps(r.tensor), c_ratio(r.tensor), c_same(r.egpu), c_same(r.base), c_same(r.tensor),
                        c_err(r.egpu), c_err(r.base), c_err(r.tensor),
                        r.egpu.ran ? format("%.4f", r.first_call_s) : std::string(), r.compiled ? "1" : "0",
                        r.failed ? "failed" : "ok", std::to_string(s.repeats), std::to_string(s.warmups), note});
            }
            std::fprintf(stderr, "  2^%ld %s %s %s: egpu %.3f ms, copy %.3f ms%s%s\n", log2_n, scalar.c_str(),
                         op.c_str(), r.layout.c_str(), 1e3 * r.egpu.seconds, 1e3 * r.copy_s,
                         r.note.empty() ? "" : ": ", r.note.c_str());
            all_ok = all_ok && !r.failed;
          }
        }
      };
      if (scalar == "f32")
        run_size(static_cast<float*>(nullptr));
      else
        run_size(static_cast<double*>(nullptr));
    }
  std::printf("\n");
  table.print(stdout, Table::Style::markdown);
  std::printf("\nX/copy = (bytes read once / X's time) / (2 n sizeof(T) / copy time); same bits: every call equal to "
              "the first\n(egpu/baseline/Tensor); err = |result - exact| / sum |terms| (maxCoeff: relative)\n");
  if (csv) std::printf("CSV: %s\n", csv->path().c_str());
  return all_ok;
}

// ---- host-resident ------------------------------------------------------------------

// Rates of the floors (bytes per second); 0 where the measurement failed.
struct Rates {
  double h2d = 0, pack = 0;
  int staging_threads = 0;
};

struct HostRow {
  std::string scalar, op, memory;
  long log2_n = 0;
  double up_bytes = 0, egpu_s = 0, cpu1_s = 0, omp_s = 0;
  double floor_h2d = 0, floor_pack = 0;  // seconds; 0: unknown (pack: pinned)
  double diff = -1, bound = 0, egpu_err = -1, cpu1_err = -1, omp_err = -1;
  int same = 0, calls = 0;
  bool failed = false;
  std::string note;
  double floor() const { return std::max(floor_h2d, floor_pack); }
};

// The CPU's reduction of a (and b) as Eigen runs it.
template <class A, class B>
typename A::Scalar cpu_reduce(Op op, const A& a, const B& b) {
  switch (op) {
    case Op::squared_norm: return a.matrix().squaredNorm();
    case Op::max: return a.maxCoeff();
    case Op::dot: return (a * b).sum();
    default: return a.sum();
  }
}

// The same over `threads` contiguous blocks, combined in block order.
template <class Vec>
typename Vec::Scalar cpu_openmp(Op op, const Vec& a, const Vec& b, int threads) {
  using T = typename Vec::Scalar;
  const Eigen::Index n = a.size();
  const int blocks = static_cast<int>(std::max<Eigen::Index>(1, std::min<Eigen::Index>(threads, n)));
  std::vector<T> partial(static_cast<std::size_t>(blocks));
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads) schedule(static)
#endif
  for (int t = 0; t < blocks; ++t) {
    const Eigen::Index i0 = n * t / blocks, w = n * (t + 1) / blocks - i0;
    partial[static_cast<std::size_t>(t)] =
        op == Op::dot ? cpu_reduce(op, a.segment(i0, w), b.segment(i0, w)) : cpu_reduce(op, a.segment(i0, w), a);
  }
  T result = partial[0];
  for (int t = 1; t < blocks; ++t) result = op == Op::max ? std::max(result, partial[t]) : result + partial[t];
  return result;
}

template <class Vec>
typename Vec::Scalar egpu_reduce(Op op, const Vec& a, const Vec& b, const egpu::Options& options) {
  switch (op) {
    case Op::squared_norm: return egpu::gpu(a, options).squaredNorm();
    case Op::max: return egpu::gpu(a, options).maxCoeff();
    case Op::dot: return egpu::gpu(a * b, options).sum();
    default: return egpu::gpu(a, options).sum();
  }
}

void progress(const HostRow& r, const std::string& what, double seconds) {
  std::fprintf(stderr, "  host 2^%ld %s %s %s: %.4f s\n", r.log2_n, r.scalar.c_str(), r.op.c_str(), what.c_str(),
               seconds);
}

template <class T>
std::vector<HostRow> run_host_size(const std::string& scalar, long log2_n, const Settings& s, const Rates& rates) {
  using Vec = Eigen::Array<T, Eigen::Dynamic, 1>;
  const Eigen::Index n = Eigen::Index(1) << log2_n;
  const bool needs_b = std::find(s.host_ops.begin(), s.host_ops.end(), "(a*b).sum") != s.host_ops.end();
  Vec a(n), b(needs_b ? n : 0);
  fill_random(a, 1);
  if (needs_b) fill_random(b, 2);
  const double eps = double(std::numeric_limits<T>::epsilon());

  std::vector<HostRow> result;
  for (const std::string& op_name : s.host_ops) {
    const Op op = op_of(op_name);
    const Exact exact = exact_full(op, a.data(), needs_b ? b.data() : nullptr, std::size_t(n));
    auto err_of = [&](T x) {
      if (std::isnan(x)) return std::numeric_limits<double>::quiet_NaN();
      const long double d = std::fabs(static_cast<long double>(x) - exact.value);
      return static_cast<double>(exact.scale > 0 ? d / exact.scale : d);
    };
    HostRow base;
    base.scalar = scalar;
    base.op = op_name;
    base.log2_n = log2_n;
    base.up_bytes = double(n) * sizeof(T) * (op == Op::dot ? 2 : 1);
    T cpu1 = 0, omp = 0;
    base.cpu1_s = median(time_calls([&] { cpu1 = cpu_reduce(op, a, b); }, s.warmups, s.repeats));
    progress(base, "CPU 1 core", base.cpu1_s);
    base.omp_s = median(time_calls([&] { omp = cpu_openmp(op, a, b, s.threads); }, s.warmups, s.repeats));
    progress(base, "CPU OpenMP", base.omp_s);
    base.cpu1_err = err_of(cpu1);
    base.omp_err = err_of(omp);
    base.bound = op == Op::max ? 0.0 : base.cpu1_err + 8.0 * eps;

    for (const std::string& memory : s.memories) {
      HostRow r = base;
      r.memory = memory;
      const bool pinned = memory == "pinned";
      if (rates.h2d > 0) r.floor_h2d = r.up_bytes / rates.h2d;
      if (!pinned && rates.pack > 0) r.floor_pack = r.up_bytes / rates.pack;
      std::string pin_error;
      std::vector<egpu::PinGuard> guards;
      if (pinned) {
        guards = needs_b ? pin_all(pin_error, a, b) : pin_all(pin_error, a);
        if (!pin_error.empty()) {
          r.failed = true;
          r.note = pin_error;
          result.push_back(r);
          continue;
        }
      }
      try {
        std::vector<T> values;
        values.reserve(static_cast<std::size_t>(s.warmups + s.repeats));
        r.egpu_s = median(time_calls([&] { values.push_back(egpu_reduce(op, a, b, s.options)); }, s.warmups,
                                     s.repeats));
        progress(r, memory + " egpu", r.egpu_s);
        r.calls = static_cast<int>(values.size());
        for (const T& v : values) r.same += std::memcmp(&v, &values[0], sizeof(T)) == 0;
        r.egpu_err = err_of(values[0]);
        const double d = std::fabs(static_cast<double>(values[0]) - static_cast<double>(cpu1));
        r.diff = exact.scale > 0 ? d / static_cast<double>(exact.scale) : d;
        if (std::isnan(values[0])) r.diff = std::numeric_limits<double>::quiet_NaN();
        if (!(r.diff <= r.bound)) {
          r.failed = true;
          r.note = "WRONG";
        }
        if (r.same != r.calls) {
          r.failed = true;
          r.note += std::string(r.note.empty() ? "" : "; ") + "NOT IDENTICAL";
        }
      } catch (const std::exception& e) {
        r.failed = true;
        r.egpu_s = 0;
        r.note = std::string("FAILED: ") + e.what();
        std::fprintf(stderr, "egpu-bench reduce: host 2^%ld %s %s %s: %s\n", log2_n, scalar.c_str(), op_name.c_str(),
                     memory.c_str(), e.what());
      }
      if (!(r.omp_err <= r.cpu1_err + 8.0 * eps) && op != Op::max)
        r.note += std::string(r.note.empty() ? "" : "; ") + format("CPU OpenMP err %.1e", r.omp_err);
      result.push_back(r);
    }  // the guards unpin here
  }
  return result;
}

// The host rows' CSV: --csv FILE gives FILE's name with "-host" before
// ".csv"; otherwise reduce-host-<date>-<device>.csv where the device rows go.
CsvChoice host_csv_choice(CsvChoice choice) {
  if (!choice.file.empty()) {
    const std::string& f = choice.file;
    const bool csv_ext = f.size() > 4 && f.compare(f.size() - 4, 4, ".csv") == 0;
    choice.file = csv_ext ? f.substr(0, f.size() - 4) + "-host.csv" : f + "-host";
  }
  return choice;
}

bool run_host_part(const Settings& s, const RunInfo& info, const CsvChoice& csv_choice) {
  std::printf("\nhost-resident; wall clock per call, median of %d after %d warm-up(s); CPU OpenMP on %d threads\n",
              s.repeats, s.warmups, s.threads);
  Rates rates;
  const std::size_t bw_bytes = static_cast<std::size_t>(s.bw_mib) << 20;
  try {
    rates.h2d = gpu::measure_bandwidth(bw_bytes, 5).h2d;
    std::printf("pinned copy (%ld MiB, median of 5): H2D %.1f GB/s\n", s.bw_mib, rates.h2d / 1e9);
  } catch (const std::exception& e) {
    std::printf("pinned copy bandwidth: FAILED (%s); no floors\n", e.what());
  }
  try {
    const int staging = s.options.staging_threads > 0
                            ? s.options.staging_threads
                            : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    const gpu::HostCopyRate host = gpu::measure_host_copy(bw_bytes, staging, 5);
    rates.pack = host.pack;
    rates.staging_threads = host.threads;
    std::printf("host copy (%ld MiB, %d threads, fastest of 5): pageable->pinned %.1f GB/s\n", s.bw_mib, host.threads,
                rates.pack / 1e9);
  } catch (const std::exception& e) {
    std::printf("host copy rate: FAILED (%s); no pageable floors\n", e.what());
  }
  std::fflush(stdout);

  const std::unique_ptr<Csv> csv = open_csv(
      host_csv_choice(csv_choice), "reduce-host", info,
      {"date", "device", "commit", "scalar", "op", "elements", "memory", "up_bytes", "egpu_seconds", "egpu_gbps",
       "floor_seconds", "floor_bound", "of_floor", "floor_h2d_seconds", "of_pcie", "floor_pack_seconds",
       "cpu1_seconds", "cpu_omp_seconds", "cpu_omp_threads", "vs_cpu1", "vs_cpu_omp", "diff_vs_cpu1", "bound",
       "egpu_err", "cpu1_err", "cpu_omp_err", "same_calls", "status", "h2d_gbps", "pack_gbps", "staging_threads",
       "repeats", "note"});
  Table table({"scalar", "op", "n", "memory", "egpu s", "GB/s", "floor s", "floor by", "of PCIe", "of floor",
               "CPU 1-core s", "CPU OpenMP s", "vs 1 core", "vs OpenMP", "diff vs CPU", "diff bound", "same bits",
               "note"});
  bool all_ok = true;
  for (const std::string& scalar : s.host_scalars)
    for (long log2_n : s.host_log2_sizes) {
      const std::vector<HostRow> rows = scalar == "f32" ? run_host_size<float>(scalar, log2_n, s, rates)
                                                        : run_host_size<double>(scalar, log2_n, s, rates);
      for (const HostRow& r : rows) {
        const bool timed = r.egpu_s > 0, floored = r.floor_h2d > 0;
        const std::string bound_name = r.floor_pack > r.floor_h2d ? "host copy" : "H2D";
        auto cell = [](bool ok, const char* fmt, double v) { return ok ? format(fmt, v) : std::string("-"); };
        auto csv_cell = [](bool ok, const char* fmt, double v) { return ok ? format(fmt, v) : std::string(); };
        table.add({r.scalar, r.op, format("2^%ld", r.log2_n), r.memory, cell(timed, "%.4g", r.egpu_s),
                   cell(timed, "%.1f", r.up_bytes / r.egpu_s / 1e9), cell(floored, "%.4g", r.floor()),
                   floored ? bound_name : "-", cell(timed && floored, "%.2f", r.floor_h2d / r.egpu_s),
                   cell(timed && floored, "%.2f", r.floor() / r.egpu_s), format("%.4g", r.cpu1_s),
                   format("%.4g", r.omp_s), cell(timed, "%.1fx", r.cpu1_s / r.egpu_s),
                   cell(timed, "%.1fx", r.omp_s / r.egpu_s), cell(timed, "%.1e", r.diff), format("%.1e", r.bound),
                   timed ? (r.same == r.calls ? "yes" : format("%d/%d", r.same, r.calls)) : "-", r.note});
        if (csv) {
          std::string note = r.note;
          for (char& ch : note)
            if (ch == ',' || ch == '\n') ch = ';';
          csv->add({info.date, info.device, info.commit, r.scalar, r.op, format("%ld", 1L << r.log2_n), r.memory,
                    format("%.0f", r.up_bytes), csv_cell(timed, "%.6g", r.egpu_s),
                    csv_cell(timed, "%.2f", r.up_bytes / r.egpu_s / 1e9), csv_cell(floored, "%.6g", r.floor()),
                    floored ? bound_name : "", csv_cell(timed && floored, "%.4f", r.floor() / r.egpu_s),
                    csv_cell(floored, "%.6g", r.floor_h2d), csv_cell(timed && floored, "%.4f", r.floor_h2d / r.egpu_s),
                    csv_cell(r.floor_pack > 0, "%.6g", r.floor_pack), format("%.6g", r.cpu1_s),
                    format("%.6g", r.omp_s), std::to_string(s.threads), csv_cell(timed, "%.4g", r.cpu1_s / r.egpu_s),
                    csv_cell(timed, "%.4g", r.omp_s / r.egpu_s), csv_cell(timed, "%.3g", r.diff),
                    format("%.3g", r.bound), csv_cell(timed, "%.3g", r.egpu_err), format("%.3g", r.cpu1_err),
                    format("%.3g", r.omp_err), timed ? format("%d/%d", r.same, r.calls) : std::string(),
                    !r.failed ? "ok" : timed ? "wrong" : "failed", format("%.2f", rates.h2d / 1e9),
                    format("%.2f", rates.pack / 1e9), std::to_string(rates.staging_threads),
                    std::to_string(s.repeats), note});
        }
        all_ok = all_ok && !r.failed;
      }
    }
  std::printf("\n");
  table.print(stdout, Table::Style::markdown);
  std::printf("\nfloor: pinned up / H2D; pageable max(up / H2D, up / pack); of = floor / egpu; vs = CPU s / egpu s;\n"
              "diff vs CPU = |egpu - CPU 1 core| / sum |terms|, bound = CPU 1 core's own error + 8 eps\n");
  if (csv) std::printf("CSV: %s\n", csv->path().c_str());
  return all_ok;
}

Settings parse(Args& args) {
  Settings s;
  s.log2_sizes = args.integers("log2-sizes", {24, 28});
  s.scalars = args.words("scalars", {"f32", "f64"});
  s.ops = args.words("ops", kOps);
  s.layouts = args.words("layouts", {"col", "row"});
  s.systems = args.words("systems", kSystems);
  s.repeats = static_cast<int>(args.integer("repeats", 7));
  s.warmups = static_cast<int>(args.integer("warmups", 2));
  s.skip_device = args.flag("skip-device");
  s.skip_host = args.flag("skip-host");
  s.host_log2_sizes = args.integers("host-log2-sizes", {27});
  s.host_scalars = args.words("host-scalars", {"f64"});
  s.host_ops = args.words("host-ops", {"sum", "(a*b).sum"});
  s.memories = args.words("memory", {"pageable", "pinned"});
  const long threads = args.integer("threads", 0);
  s.bw_mib = args.integer("bw-mib", 1024);
  const long streams = args.integer("streams", 0);
  const long staging = args.integer("staging-threads", 0);
  const long chunk_kib = args.integer("chunk-kib", 0);
  check_choices(s.scalars, {"f32", "f64"}, "--scalars");
  check_choices(s.ops, kOps, "--ops");
  check_choices(s.layouts, {"col", "row"}, "--layouts");
  check_choices(s.systems, kSystems, "--systems");
  check_choices(s.host_scalars, {"f64", "f32"}, "--host-scalars");
  check_choices(s.host_ops, kFullOps, "--host-ops");
  check_choices(s.memories, {"pageable", "pinned"}, "--memory");
  for (long l : s.log2_sizes)
    if (l < 12 || l > 30) throw std::invalid_argument("--log2-sizes: 12 to 30");
  for (long l : s.host_log2_sizes)
    if (l < 12 || l > 30) throw std::invalid_argument("--host-log2-sizes: 12 to 30");
  if (s.repeats < 1) throw std::invalid_argument("--repeats must be at least 1");
  if (s.warmups < 0) throw std::invalid_argument("--warmups must not be negative");
  if (threads < 0 || threads > 1024) throw std::invalid_argument("--threads must be 0..1024");
  if (s.bw_mib < 1 || s.bw_mib > 16384) throw std::invalid_argument("--bw-mib must be 1..16384");
  if (streams < 0 || streams > 64) throw std::invalid_argument("--streams must be 0..64");
  if (staging < 0 || staging > 1024) throw std::invalid_argument("--staging-threads must be 0..1024");
  if (chunk_kib < 0 || chunk_kib > (1L << 22)) throw std::invalid_argument("--chunk-kib must be 0..4194304");
  s.threads = openmp_threads(threads);
  s.options.streams = static_cast<int>(streams);
  s.options.staging_threads = static_cast<int>(staging);
  s.options.chunk_bytes = chunk_kib << 10;
  return s;
}

}  // namespace

int run_reduce(int argc, char** argv) {
  Args args(argc, argv);
  if (print_help(args, kUsage, false)) return 0;
  Settings s = parse(args);
  const CsvChoice csv_choice = parse_csv_options(args);
  args.finish();

  const RunInfo info = gather_run_info(s.threads);
  std::printf("egpu-bench reduce: device %s, commit %s, %s, CPU Eigen %d.%d.%d\n", info.device.c_str(),
              info.commit.c_str(), info.date.c_str(), EIGEN_WORLD_VERSION, EIGEN_MAJOR_VERSION, EIGEN_MINOR_VERSION);
  if (!egpu::has_device()) {
    std::printf("NO USABLE GPU: egpu-bench reduce measures reductions on the GPU; SKIPPED\n");
    return 0;
  }
  std::fflush(stdout);
  bool ok = true;
  if (!s.skip_device) ok = run_device_part(s, info, csv_choice) && ok;
  if (!s.skip_host) ok = run_host_part(s, info, csv_choice) && ok;
  if (!ok) std::printf("\nSOME egpu RESULTS ARE WRONG, NOT IDENTICAL OR FAILED (see the note column)\n");
  return ok ? 0 : 1;
}

}  // namespace egpu_bench

// egpu-bench product: square products C = A * B on host-resident Eigen
// matrices, timed wall-clock over the whole call (what a user sees):
//   cpu-eigen    C.noalias() = A * B               (Eigen, all cores via OpenMP)
//   cublasxt     cublasXt<t>gemm on the same host matrices, one device, its
//                pinning mode on, the best block size of a sweep in this run
//   egpu-own     C.noalias() = egpu::gpu(A * B)    (the library's own kernel)
//   egpu-cublas  C.noalias() = egpu::gpu(A * B, opt) with Backend::cublas
//   movement     no product: the bytes a call moves, alone (A and B up, C
//                down, all at once from the start, each in one copy; from
//                pageable memory also packed into and unpacked from pinned
//                buffers by the staging threads at the same time;
//                gpu::movement_seconds), timed against the same floor: how
//                near it the transfers come with nothing else to wait for
// in two memory modes: pageable (plain Eigen::Matrix) and pinned (A, B and C
// page-locked with egpu::pin for every system, cuBLASXt included).
//
// The floor of a backend at a size, measured in the same run: pinned copy
// bandwidth each way (once per run) and that backend's device-resident GEMM
// time (own: egpu::kernels::gemm_tiled; cuBLAS: cublas<t>gemm, default
// math); floor = max(GEMM time, (A + B) / H2D, C / D2H, (A + B + C) /
// both), where both is the rate of the two directions at once (measured
// too: where it falls short of H2D + D2H, uploads and downloads share a
// capacity and every byte counts against it). For pageable operands the
// floor also counts the host's parallel copy rate between pageable and
// pinned memory (gpu::measure_host_copy, all cores, once per run): (A + B)
// / pack rate, C / unpack rate and (A + B + C) / the rate of packing and
// unpacking at once, which overlap the DMA in a pipeline, so floor =
// max(GEMM, (A + B) / min(H2D, pack), C / min(D2H, unpack), (A + B + C) /
// min(both, host both)). "x floor" is a system's time over its backend's
// floor (cuBLASXt against cuBLAS's).
// The host copies more slowly while the DMA runs (gpu::measure_copy_under_dma,
// measured once per run at a quarter, half and all of the staging threads,
// printed), and a pageable call copies while its DMA runs for most of its
// time: "host GB/s" is the bytes a pageable egpu row copied on the host
// (A + B + C, and C or D once more where the form reads one) over its
// time, to set beside the host's rate under DMA.
//
// Each result is checked against CPU Eigen's (relative Frobenius error), or
// against egpu-cublas's where CPU Eigen is skipped (--cpu-max).
//
// --forms times other forms of the product next to the plain one, for each
// egpu system, on the same A, B and C, in the same memory mode, with the
// same warm-ups and repeats (median wall time of the whole call):
//   plain   C.noalias() = egpu::gpu(A * B)
//   update  C = egpu::gpu(0.5 * A * B + 2.0 * C)   (one GEMM, alpha and beta
//           in the library); C is refilled with the same values before each
//           call, outside the timed region, so every call computes the same
//   tanh    C = egpu::gpu((A * B).array().tanh().matrix())   (one GEMM whose
//           tiles go through tanh on the device before they come down)
//   bias    C = egpu::gpu((A * B + D).array().tanh().matrix())   (the same,
//           D's piece of each tile going up beside it)
//   bias-2pass  T = egpu::gpu(A * B); C = egpu::gpu((T + D).array().tanh()...)
//           (what bias costs unfused: the product comes down, goes up again)
//   move    C = egpu::gpu((A.array() * B.array()).matrix()), forced onto the
//           GPU: no product, only the bytes the product moves (A and B up, C
//           down, through the same staging), against the product's floor:
//           how near that floor the transfers alone come in the same run
// "update/plain" and "tanh/plain" are a form's median over plain's median
// (same system, memory mode and data): the cost of the fused beta read and of
// the epilogue over the bare product; the library aims at update/plain <=
// 1.03 and tanh/plain <= 1.05 at N = 8192 f64 on host-resident matrices.
// Each form's result (plain's too) is checked on a sample of entries against
// the same formula on the CPU, its dot products in long double (relative
// Frobenius error over the sample, the bound of the product checks; for tanh
// relative to the product's entries, since |tanh'| <= 1; for bias to
// A * B + D's); move's whole result against A.cwiseProduct(B) on the CPU
// (to a few units of rounding). Rows of the forms
// go into the main table and the CSV as system "<system>:<form>" (floor:
// update also uploads C), and into a table of their own with the ratios.
#include <egpu/egpu.hpp>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstddef>
#include <cstdio>
#include <exception>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "bench_common.hpp"
#include "gpu_baselines.hpp"
#include "host_data.hpp"
#include "subcommands.hpp"

namespace egpu_bench {
namespace {

const char* const kUsage =
    "usage: egpu-bench product [options]\n"
    "  --sizes N,N,...       square sizes (default 1024,2048,4096,8192,16384)\n"
    "  --scalars S,S,...     f32, f64, c32, c64 (default f32,f64)\n"
    "  --memory M,M,...      pageable, pinned (default both): pinned page-locks A, B and C\n"
    "                        with egpu::pin for every system\n"
    "  --systems S,S,...     cpu-eigen, cublasxt, egpu-own, egpu-cublas, movement (default all;\n"
    "                        movement: the call's bytes moved alone, no product)\n"
    "  --forms F,F,...       plain, update, tanh, bias, bias-2pass, move (default plain): the forms each\n"
    "                        egpu system times,\n"
    "                        on the same A, B and C: plain C.noalias() = gpu(A * B); update\n"
    "                        C = gpu(0.5 * A * B + 2.0 * C) (C refilled before each call, untimed);\n"
    "                        tanh C = gpu((A * B).array().tanh().matrix()); bias\n"
    "                        C = gpu((A * B + D).array().tanh().matrix()); bias-2pass the same as\n"
    "                        T = gpu(A * B) then C = gpu((T + D).array().tanh().matrix()); move\n"
    "                        C = gpu((A.array() * B.array()).matrix()) on the GPU (the transfers\n"
    "                        alone, against the product's floor). Plain is always timed:\n"
    "                        a table of each form's time over plain's (update/plain, tanh/plain)\n"
    "                        follows; every form is checked on a sample of entries against the\n"
    "                        same formula on the CPU. Rows: system \"<system>:<form>\"\n"
    "  --repeats R           timed runs per case, median reported (default 3)\n"
    "  --warmups W           untimed runs first (default 1)\n"
    "  --cpu-full-max N      above this size CPU Eigen runs once, without warm-up (default 4096)\n"
    "  --cpu-max N           above this size CPU Eigen is skipped; errors are then measured\n"
    "                        against egpu-cublas (default 0: never skipped)\n"
    "  --xt-blocks B,B,...   cuBLASXt block sizes swept, the best reported (default\n"
    "                        1024,2048,4096,8192; sizes above N are left out)\n"
    "  --bw-mib M            pinned copy size of the bandwidth measurement (default 1024)\n"
    "  --threads T           CPU Eigen threads (default: all cores)\n"
    "  --csv FILE            CSV output (default bench/results/product-<date>-<device>.csv in the\n"
    "                        source tree, else ./; rows are appended)\n"
    "  --csv-dir DIR         default CSV name, in DIR\n"
    "  --no-csv              table only\n"
    "egpu pipeline options (passed to egpu::Options of the egpu systems):\n";

const std::vector<std::string> kAllSystems = {"cpu-eigen", "cublasxt", "egpu-own", "egpu-cublas", "movement"};
const std::vector<std::string> kAllForms = {"plain", "update", "tanh", "bias", "bias-2pass", "move"};
bool reads_d(const std::string& form) { return form == "bias" || form == "bias-2pass"; }

struct Settings {
  std::vector<long> sizes, xt_blocks;
  std::vector<std::string> scalars, memories, systems;
  std::vector<std::string> forms;  // "plain" first
  int repeats = 3, warmups = 1;
  long cpu_full_max = 4096, cpu_max = 0;
  long bw_mib = 1024;
  egpu::Options pipeline;
  bool gpu = false;
  gpu::Bandwidth bandwidth;  // bytes/s; 0 where not measured
  gpu::HostCopyRate host_copy;  // pageable <-> pinned, bytes/s; 0 where not measured
  std::vector<gpu::CopyUnderDma> under_dma;  // the same while the DMA runs; empty where not measured
  std::string bandwidth_error;

  bool wants(const std::string& system) const {
    return std::find(systems.begin(), systems.end(), system) != systems.end();
  }
  bool extra_forms() const { return forms.size() > 1; }
};

// The threads that copy pageable operands: egpu's staging_threads, where 0
// means every hardware thread.
int staging_thread_count(const Settings& s) {
  return s.pipeline.staging_threads > 0 ? s.pipeline.staging_threads
                                        : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

struct Measurement {
  std::string memory, system;
  std::string form = "plain";  // kAllForms; the egpu systems only time others
  double seconds = 0;      // median
  int runs = 0;            // timed runs behind the median
  double rel_error = -1;   // < 0: not measured
  std::string error_ref;   // what rel_error is against
  bool reference = false;  // this result is the reference of the case
  bool failed = false;     // threw, or gave a wrong answer
  bool skipped = false;
  double floor = 0;  // seconds; 0: none
  double host_bytes = 0;  // pageable egpu and movement rows: bytes copied between pageable and pinned memory
  std::string floor_bound, note;
  double sample_error = -1;  // against the CPU sample (--forms); < 0: not measured

  // The system, with the form where it is not plain: "egpu-own:update".
  std::string name() const { return form == "plain" ? system : system + ":" + form; }
  // Rows that only move the bytes have no product rate.
  bool computes_product() const { return system != "movement" && form != "move"; }
};

// The floor of one backend at one size. h2d uploads A and B; a product that
// reads C (the update form) uploads C as well (h2d_c more). Where the two
// directions share a capacity (the measured rate of both at once is below
// the sum of the two), every byte up and down also passes through it:
// shared = (A + B (+ C) + C) / that rate.
// pageable: the copies are the slower of the DMA and the host's copy
// through pinned memory, alone and both ways at once.
struct Floor {
  std::string backend;  // "own", "cublas"
  bool pageable = false;
  double gemm = 0, h2d = 0, d2h = 0, h2d_c = 0;
  double matrix_bytes = 0, both_rate = 0;  // one matrix; bytes/s both ways at once (0: not measured)
  std::string error;
  double up(bool reads_c) const { return h2d + (reads_c ? h2d_c : 0.0); }
  double shared(bool reads_c) const { return both_rate > 0 ? (reads_c ? 4 : 3) * matrix_bytes / both_rate : 0.0; }
  double seconds(bool reads_c = false) const {
    return std::max({gemm, up(reads_c), d2h, shared(reads_c)});
  }
  std::string bound(bool reads_c = false) const {
    const double s = seconds(reads_c);
    return gemm >= s ? "compute" : up(reads_c) >= s ? "H2D" : d2h >= s ? "D2H" : "both ways";
  }
  // The same floor for operands in pageable memory.
  Floor for_pageable(const gpu::HostCopyRate& host, double bytes) const {
    Floor f = *this;
    f.pageable = true;
    if (host.pack > 0 && host.unpack > 0) {
      f.h2d = std::max(h2d, 2 * bytes / host.pack);
      f.h2d_c = std::max(h2d_c, bytes / host.pack);
      f.d2h = std::max(d2h, bytes / host.unpack);
    }
    if (host.both > 0) f.both_rate = both_rate > 0 ? std::min(both_rate, host.both) : host.both;
    return f;
  }
  bool ok() const { return error.empty() && gemm > 0 && h2d > 0 && d2h > 0; }
};

struct CaseResult {
  std::vector<Measurement> rows;
  std::vector<Floor> floors;
};

void progress(long n, const std::string& scalar, const Measurement& m) {
  std::fprintf(stderr, "  N=%ld %s %s %s: %s\n", n, scalar.c_str(), m.memory.c_str(), m.name().c_str(),
               m.runs > 0 ? format("%.4g s", m.seconds).c_str() : (m.note.empty() ? "-" : m.note.c_str()));
}

// Checks C against the reference (if there is one); a wrong answer fails m.
template <class Mat>
void finish_gpu_measurement(Measurement& m, const Mat& C, const Mat* reference, const std::string& reference_name,
                            long n) {
  if (reference == nullptr) return;
  using Scalar = typename Mat::Scalar;
  m.rel_error = relative_error(C, *reference);
  m.error_ref = reference_name;
  if (!(m.rel_error <= tolerance<Scalar>(n))) {  // NaN fails too
    m.failed = true;
    m.note = format("WRONG: error above %.1e", tolerance<Scalar>(n));
  }
}

// A sample of C's entries for the checks of --forms: where they are, the
// product's value there (dot products in long double) and C's value before
// an update call.
template <class Scalar>
struct Sample {
  using Wide = std::conditional_t<Eigen::NumTraits<Scalar>::IsComplex, std::complex<long double>, long double>;
  std::vector<Eigen::Index> rows, cols;
  std::vector<Wide> product, c0;
};

constexpr std::size_t kSampleEntries = 512;

// The four corners (tile edges) and random entries, the same for the same N.
template <class Mat>
Sample<typename Mat::Scalar> take_sample(const Mat& A, const Mat& B) {
  using Wide = typename Sample<typename Mat::Scalar>::Wide;
  Sample<typename Mat::Scalar> s;
  const Eigen::Index n = A.rows();
  for (Eigen::Index r : {Eigen::Index(0), n - 1})
    for (Eigen::Index c : {Eigen::Index(0), n - 1}) {
      s.rows.push_back(r);
      s.cols.push_back(c);
    }
  std::vector<double> u(2 * kSampleEntries);
  fill_random(u.data(), u.size(), 7777ull * static_cast<unsigned long long>(n) + 5);
  for (std::size_t i = 0; s.rows.size() < kSampleEntries; ++i) {
    const auto index = [&](double v) {
      return std::min(n - 1, static_cast<Eigen::Index>((v + 1.0) * 0.5 * static_cast<double>(n)));
    };
    s.rows.push_back(index(u[2 * i]));
    s.cols.push_back(index(u[2 * i + 1]));
  }
  s.product.assign(s.rows.size(), Wide(0));
  parallel_for(s.rows.size(), [&](std::size_t begin, std::size_t end) {
    for (std::size_t e = begin; e < end; ++e) {
      Wide sum(0);
      for (Eigen::Index k = 0; k < A.cols(); ++k)
        sum += static_cast<Wide>(A(s.rows[e], k)) * static_cast<Wide>(B(k, s.cols[e]));
      s.product[e] = sum;
    }
  });
  return s;
}

// The relative Frobenius error of C's sampled entries against `form` of the
// sample: over the expected values, for tanh over the product's (|tanh'| <=
// 1 on real values, so the product's rounding bounds tanh's error in that
// measure). NaN when C holds a NaN there.
template <class Mat>
double sample_error(const Mat& C, const Sample<typename Mat::Scalar>& s, const std::string& form) {
  using Wide = typename Sample<typename Mat::Scalar>::Wide;
  long double diff = 0, norm = 0;
  for (std::size_t e = 0; e < s.rows.size(); ++e) {
    const Wide p = s.product[e];
    const Wide expected = form == "update" ? Wide(0.5L) * p + Wide(2.0L) * s.c0[e]
                          : form == "tanh" ? Wide(std::tanh(p))
                          : reads_d(form)  ? Wide(std::tanh(p + s.c0[e]))
                                           : p;
    diff += std::norm(static_cast<Wide>(C(s.rows[e], s.cols[e])) - expected);
    norm += std::norm(form == "tanh" ? p : reads_d(form) ? p + s.c0[e] : expected);
  }
  return static_cast<double>(std::sqrt(diff) / std::sqrt(norm));
}

// The relative Frobenius error of C against A.cwiseProduct(B) over all of
// C: the move form's check (NaN when C holds a NaN).
template <class Mat>
double move_error(const Mat& C, const Mat& A, const Mat& B) {
  // Stored first: in C - A .* B a compiler may fuse the multiply into the
  // subtraction and leave the product's rounding in the difference.
  const Mat expected = A.cwiseProduct(B);
  const double norm = expected.norm();
  return (C - expected).norm() / (norm > 0 ? norm : 1.0);
}

// Wall-clock seconds of `repeats` timed calls of f after `warmups` untimed
// ones, prepare() before each call, outside the timed region.
std::vector<double> time_prepared(const std::function<void()>& prepare, const std::function<void()>& f,
                                  int warmups, int repeats) {
  for (int i = 0; i < warmups; ++i) {
    prepare();
    f();
  }
  std::vector<double> seconds;
  for (int i = 0; i < repeats; ++i) {
    prepare();
    const double start = now_seconds();
    f();
    seconds.push_back(now_seconds() - start);
  }
  return seconds;
}

template <class Scalar>
CaseResult run_case(long n, const std::string& scalar, const Settings& settings) {
  using Mat = Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic>;
  const Eigen::Index N = static_cast<Eigen::Index>(n);
  Mat A(N, N), B(N, N), C(N, N);
  fill_random(A, 1000003ull * static_cast<unsigned long long>(n) + 1);
  fill_random(B, 1000003ull * static_cast<unsigned long long>(n) + 2);
  CaseResult result;

  // --forms: the sample the forms are checked on, and C's values before
  // each update call (refilled from the same seed; D of bias holds them too).
  const unsigned long long c_seed = 1000003ull * static_cast<unsigned long long>(n) + 3;
  const bool with_d = std::any_of(settings.forms.begin(), settings.forms.end(), reads_d);
  Mat D, T;
  if (with_d && settings.gpu) {
    D.resize(N, N);
    fill_random(D, c_seed);
    T.resize(N, N);
  }
  Sample<Scalar> sample;
  if (settings.extra_forms() && settings.gpu && (settings.wants("egpu-own") || settings.wants("egpu-cublas"))) {
    sample = take_sample(A, B);
    fill_random(C, c_seed);
    for (std::size_t e = 0; e < sample.rows.size(); ++e)
      sample.c0.push_back(static_cast<typename Sample<Scalar>::Wide>(C(sample.rows[e], sample.cols[e])));
  }

  // CPU Eigen: the reference and the baseline. Pinning does not change what
  // the CPU does, so it is measured once and reported under each memory mode.
  Mat reference;
  std::string reference_name;
  Measurement cpu;
  cpu.system = "cpu-eigen";
  if (settings.wants("cpu-eigen")) {
    if (settings.cpu_max > 0 && n > settings.cpu_max) {
      cpu.skipped = true;
      cpu.note = "skipped (N > --cpu-max)";
    } else {
      reference.resize(N, N);
      const bool single = n > settings.cpu_full_max;
      const auto times = time_calls([&] { reference.noalias() = A * B; }, single ? 0 : settings.warmups,
                                    single ? 1 : settings.repeats);
      cpu.seconds = median(times);
      cpu.runs = static_cast<int>(times.size());
      cpu.reference = true;
      reference_name = "cpu-eigen";
      if (single) cpu.note = "single run, no warm-up (N > --cpu-full-max)";
      if (settings.memories.size() > 1) cpu.note += std::string(cpu.note.empty() ? "" : "; ") + "measured once";
    }
  }

  // Floors: device-resident GEMM of each backend in use, plus the copies.
  std::map<std::string, Floor> floors;
  if (settings.gpu) {
    const double bytes = static_cast<double>(N) * static_cast<double>(N) * static_cast<double>(sizeof(Scalar));
    auto measure = [&](const std::string& backend, gpu::DeviceGemm which) {
      Floor f;
      f.backend = backend;
      try {
        f.gemm = gpu::device_gemm_seconds<Scalar>(which, n, A.data(), B.data(), std::max(1, settings.warmups),
                                                  std::max(3, settings.repeats));
      } catch (const std::exception& e) {
        f.error = e.what();
        std::fprintf(stderr, "egpu-bench product: N=%ld %s: device GEMM (%s): %s\n", n, scalar.c_str(),
                     backend.c_str(), e.what());
      }
      if (settings.bandwidth.h2d > 0 && settings.bandwidth.d2h > 0) {
        f.h2d = 2 * bytes / settings.bandwidth.h2d;  // A and B up; C is not read (beta = 0)
        f.d2h = bytes / settings.bandwidth.d2h;      // C down
        f.h2d_c = bytes / settings.bandwidth.h2d;    // C up, where the form reads it
        f.matrix_bytes = bytes;
        f.both_rate = settings.bandwidth.both;
      } else if (f.error.empty()) {
        f.error = "no bandwidth measurement";
      }
      floors[backend] = f;
      result.floors.push_back(f);
      if (settings.host_copy.pack > 0 &&
          std::find(settings.memories.begin(), settings.memories.end(), "pageable") != settings.memories.end()) {
        floors[backend + ":pageable"] = f.for_pageable(settings.host_copy, bytes);
        result.floors.push_back(floors[backend + ":pageable"]);
      }
    };
    if (settings.wants("egpu-own")) measure("own", gpu::DeviceGemm::own);
    if (settings.wants("egpu-cublas") || settings.wants("cublasxt") ||
        (settings.wants("movement") && !settings.wants("egpu-own")))
      measure("cublas", gpu::DeviceGemm::cublas);
  }
  auto attach_floor = [&](Measurement& m, const std::string& backend) {
    auto it = floors.find(backend + ":pageable");
    if (m.memory != "pageable" || it == floors.end()) it = floors.find(backend);
    if (it != floors.end() && it->second.ok()) {
      const bool reads_c = m.form == "update" || reads_d(m.form);  // C, or D, goes up too
      m.floor = it->second.seconds(reads_c);
      m.floor_bound = it->second.bound(reads_c);
      if (m.memory == "pageable" && m.system != "cublasxt")
        m.host_bytes = (reads_c ? 4 : 3) * it->second.matrix_bytes;
    }
  };
  // Checks C against the sample; a wrong answer fails m.
  auto check_sample = [&](Measurement& m) {
    m.sample_error = sample_error(C, sample, m.form);
    if (!(m.sample_error <= tolerance<Scalar>(n))) {  // NaN fails too
      m.failed = true;
      m.note += std::string(m.note.empty() ? "" : "; ") +
                format("WRONG: sample error above %.1e", tolerance<Scalar>(n));
    }
  };

  for (const std::string& memory : settings.memories) {
    std::vector<Measurement> rows;
    if (settings.wants("cpu-eigen")) {
      rows.push_back(cpu);
      rows.back().memory = memory;
    }
    std::string pin_error;
    const std::vector<egpu::PinGuard> guards =
        memory != "pinned" ? std::vector<egpu::PinGuard>{}
        : D.size() > 0     ? pin_all(pin_error, A, B, C, D, T)
                           : pin_all(pin_error, A, B, C);
    if (!pin_error.empty())
      std::fprintf(stderr, "egpu-bench product: N=%ld %s: %s\n", n, scalar.c_str(), pin_error.c_str());

    // egpu-cublas first: it is the reference where CPU Eigen is skipped.
    for (const std::string system : {"egpu-cublas", "egpu-own", "cublasxt"}) {
      if (!settings.wants(system) || !settings.gpu) continue;
      Measurement m;
      m.memory = memory;
      m.system = system;
      attach_floor(m, system == "egpu-own" ? "own" : "cublas");
      if (!pin_error.empty()) {
        for (const std::string& form : settings.forms) {
          if (form != "plain" && system == std::string("cublasxt")) continue;
          Measurement f = m;
          f.form = form;
          f.failed = true;
          f.note = pin_error;
          rows.push_back(f);
          progress(n, scalar, f);
        }
        continue;
      }
      fill_nan(C);
      try {
        if (system == "cublasxt") {
          gpu::Xt xt;
          std::vector<long> blocks;
          for (long b : settings.xt_blocks)
            if (b <= n || blocks.empty()) blocks.push_back(b);
          const auto call = [&] { xt.gemm<Scalar>(n, A.data(), B.data(), C.data()); };
          xt.set_block_dim(static_cast<int>(blocks.front()));
          for (int i = 0; i < settings.warmups; ++i) call();
          long best = blocks.front();
          std::string sweep;
          if (blocks.size() > 1) {
            double best_seconds = std::numeric_limits<double>::infinity();
            for (long b : blocks) {
              xt.set_block_dim(static_cast<int>(b));
              const double t = median(time_calls(call, 0, 1));
              sweep += format("%s%ld:%.3gs", sweep.empty() ? "" : " ", b, t);
              if (t < best_seconds) {
                best_seconds = t;
                best = b;
              }
            }
            xt.set_block_dim(static_cast<int>(best));
          }
          const auto times = time_calls(call, 0, settings.repeats);
          m.seconds = median(times);
          m.runs = static_cast<int>(times.size());
          m.note = format("block %ld", best) + (sweep.empty() ? "" : " (sweep " + sweep + ")");
        } else {
          egpu::Options options = settings.pipeline;
          options.backend = system == "egpu-cublas" ? egpu::Backend::cublas : egpu::Backend::own;
          const auto times =
              time_calls([&] { C.noalias() = egpu::gpu(A * B, options); }, settings.warmups, settings.repeats);
          m.seconds = median(times);
          m.runs = static_cast<int>(times.size());
        }
        if (reference_name.empty() && system == std::string("egpu-cublas")) {
          // No CPU result: egpu-cublas becomes the reference, unless it left NaNs.
          if (!C.hasNaN()) {
            reference = C;
            reference_name = "egpu-cublas";
            m.reference = true;
          } else {
            m.failed = true;
            m.note = "WRONG: NaN in the result";
          }
        } else {
          finish_gpu_measurement(m, C, reference_name.empty() ? nullptr : &reference, reference_name, n);
        }
        if (system != std::string("cublasxt") && !sample.rows.empty()) check_sample(m);
      } catch (const std::exception& e) {
        m.failed = true;
        m.runs = 0;
        m.note = std::string("FAILED: ") + e.what();
        std::fprintf(stderr, "egpu-bench product: N=%ld %s %s %s: %s\n", n, scalar.c_str(), memory.c_str(),
                     system.c_str(), e.what());
      }
      rows.push_back(m);
      progress(n, scalar, m);

      // The other forms of this egpu system, on the same A, B and C.
      if (system == std::string("cublasxt")) continue;
      egpu::Options options = settings.pipeline;
      options.backend = system == std::string("egpu-cublas") ? egpu::Backend::cublas : egpu::Backend::own;
      for (const std::string& form : settings.forms) {
        if (form == "plain") continue;
        Measurement f;
        f.memory = memory;
        f.system = system;
        f.form = form;
        attach_floor(f, system == std::string("egpu-own") ? "own" : "cublas");
        try {
          const Scalar alpha(0.5), beta(2.0);
          std::vector<double> times;
          if (form == "update") {
            times = time_prepared([&] { fill_random(C, c_seed); },
                                  [&] { C = egpu::gpu(alpha * A * B + beta * C, options); }, settings.warmups,
                                  settings.repeats);
          } else if (form == "tanh") {
            fill_nan(C);
            times = time_calls([&] { C = egpu::gpu((A * B).array().tanh().matrix(), options); }, settings.warmups,
                               settings.repeats);
          } else if (form == "bias") {
            fill_nan(C);
            times = time_calls([&] { C = egpu::gpu((A * B + D).array().tanh().matrix(), options); },
                               settings.warmups, settings.repeats);
          } else if (form == "move") {
            egpu::Options on_gpu = options;
            on_gpu.where = egpu::Where::gpu;
            fill_nan(C);
            times = time_calls([&] { C = egpu::gpu((A.array() * B.array()).matrix(), on_gpu); }, settings.warmups,
                               settings.repeats);
          } else {  // bias-2pass
            fill_nan(C);
            times = time_calls(
                [&] {
                  T.noalias() = egpu::gpu(A * B, options);
                  C = egpu::gpu((T + D).array().tanh().matrix(), options);
                },
                settings.warmups, settings.repeats);
          }
          f.seconds = median(times);
          f.runs = static_cast<int>(times.size());
          if (m.runs > 0 && !m.failed) f.note = format("%s/plain %.3f", form.c_str(), f.seconds / m.seconds);
          if (form == "move") {
            f.rel_error = move_error(C, A, B);
            f.error_ref = "cpu-cwise";
            f.sample_error = f.rel_error;
            // Real scalars: one rounding on both sides, equal; complex ones
            // may differ where one side fuses a multiply-add.
            if (!(f.rel_error <= 4 * static_cast<double>(Eigen::NumTraits<Scalar>::epsilon()))) {
              f.failed = true;
              f.note += std::string(f.note.empty() ? "" : "; ") + format("WRONG: differs from A .* B (%.1e)", f.rel_error);
            }
          } else {
            check_sample(f);
            f.rel_error = f.sample_error;
            f.error_ref = "cpu-sample";
          }
        } catch (const std::exception& e) {
          f.failed = true;
          f.runs = 0;
          f.note = std::string("FAILED: ") + e.what();
          std::fprintf(stderr, "egpu-bench product: N=%ld %s %s %s: %s\n", n, scalar.c_str(), memory.c_str(),
                       f.name().c_str(), e.what());
        }
        rows.push_back(f);
        progress(n, scalar, f);
      }
    }
    // The bytes alone, after the egpu rows (it leaves C's values undefined),
    // against the floor of cuBLAS where it is measured, else the own kernel's.
    if (settings.wants("movement") && settings.gpu) {
      Measurement m;
      m.memory = memory;
      m.system = "movement";
      attach_floor(m, floors.count("cublas") > 0 ? "cublas" : "own");
      if (!pin_error.empty()) {
        m.failed = true;
        m.note = pin_error;
      } else {
        try {
          const std::size_t bytes = static_cast<std::size_t>(N) * static_cast<std::size_t>(N) * sizeof(Scalar);
          m.seconds = gpu::movement_seconds(A.data(), B.data(), C.data(), bytes, memory == "pageable",
                                            staging_thread_count(settings), settings.repeats);
          m.runs = settings.repeats;
          m.note = memory == "pageable" ? "fastest run, of several shares of the threads packing" : "fastest run";
        } catch (const std::exception& e) {
          m.failed = true;
          m.note = std::string("FAILED: ") + e.what();
          std::fprintf(stderr, "egpu-bench product: N=%ld %s %s movement: %s\n", n, scalar.c_str(), memory.c_str(),
                       e.what());
        }
      }
      rows.push_back(m);
      progress(n, scalar, m);
    }
    // Rows in the table's order: cpu-eigen, cublasxt, egpu-own, egpu-cublas, movement.
    for (const std::string& system : kAllSystems)
      for (const Measurement& m : rows)
        if (m.system == system) result.rows.push_back(m);
  }  // the guards unpin here
  return result;
}

CaseResult run_case(long n, const std::string& scalar, const Settings& settings) {
  if (scalar == "f32") return run_case<float>(n, scalar, settings);
  if (scalar == "f64") return run_case<double>(n, scalar, settings);
  if (scalar == "c32") return run_case<std::complex<float>>(n, scalar, settings);
  return run_case<std::complex<double>>(n, scalar, settings);  // c64, checked in parse()
}

Settings parse(Args& args) {
  Settings s;
  s.sizes = args.integers("sizes", {1024, 2048, 4096, 8192, 16384});
  s.scalars = args.words("scalars", {"f32", "f64"});
  s.memories = args.words("memory", {"pageable", "pinned"});
  s.systems = args.words("systems", kAllSystems);
  s.forms = args.words("forms", {"plain"});
  s.repeats = static_cast<int>(args.integer("repeats", 3));
  s.warmups = static_cast<int>(args.integer("warmups", 1));
  s.cpu_full_max = args.integer("cpu-full-max", 4096);
  s.cpu_max = args.integer("cpu-max", 0);
  s.xt_blocks = args.integers("xt-blocks", {1024, 2048, 4096, 8192});
  s.bw_mib = args.integer("bw-mib", 1024);
  s.pipeline = parse_pipeline_options(args);
  check_sizes(s.sizes);
  check_choices(s.scalars, {"f32", "f64", "c32", "c64"}, "scalars");
  check_choices(s.memories, {"pageable", "pinned"}, "memory");
  check_choices(s.systems, kAllSystems, "systems");
  check_choices(s.forms, kAllForms, "forms");
  {
    // Plain first (every ratio's base), then each other form once, in kAllForms' order.
    std::vector<std::string> forms;
    for (const std::string& form : kAllForms)
      if (form == "plain" || std::find(s.forms.begin(), s.forms.end(), form) != s.forms.end()) forms.push_back(form);
    s.forms = forms;
  }
  for (long b : s.xt_blocks)
    if (b < 64 || b > 65536) throw std::invalid_argument("--xt-blocks: " + std::to_string(b) + " is out of range");
  if (s.sizes.empty() || s.scalars.empty() || s.memories.empty() || s.systems.empty() || s.xt_blocks.empty())
    throw std::invalid_argument("--sizes, --scalars, --memory, --systems and --xt-blocks must not be empty");
  if (s.repeats < 1) throw std::invalid_argument("--repeats must be at least 1");
  if (s.warmups < 0) throw std::invalid_argument("--warmups must not be negative");
  if (s.cpu_max < 0) throw std::invalid_argument("--cpu-max must not be negative");
  if (s.bw_mib < 1 || s.bw_mib > 16384) throw std::invalid_argument("--bw-mib must be 1..16384");
  return s;
}

std::string ratio(double numerator, double denominator) {
  return numerator > 0 && denominator > 0 ? format("%.2fx", numerator / denominator) : "-";
}

}  // namespace

int run_product(int argc, char** argv) {
  Args args(argc, argv);
  if (print_help(args, kUsage)) return 0;
  Settings settings = parse(args);
  const int threads = static_cast<int>(args.integer("threads", 0));
  const CsvChoice csv_choice = parse_csv_options(args);
  args.finish();

  const RunInfo info = gather_run_info(threads);
  settings.gpu = egpu::has_device();
  std::printf("egpu-bench product: device %s, commit %s, %s, CPU Eigen %d.%d.%d on %d threads\n",
              info.device.c_str(), info.commit.c_str(), info.date.c_str(), EIGEN_WORLD_VERSION,
              EIGEN_MAJOR_VERSION, EIGEN_MINOR_VERSION, info.cpu_threads);
  std::printf("wall-clock per host-resident call, median of %d after %d warm-up(s); CPU Eigen runs once above N=%ld",
              settings.repeats, settings.warmups, settings.cpu_full_max);
  if (settings.cpu_max > 0) std::printf(" and not at all above N=%ld", settings.cpu_max);
  std::printf("\negpu pipeline options: %s\n", describe_pipeline_options(settings.pipeline).c_str());
  if (!settings.gpu) {
    std::printf("NO USABLE GPU: the GPU systems (cublasxt, egpu-own, egpu-cublas) and the pinned mode are "
                "SKIPPED; CPU Eigen only\n");
    settings.systems = {"cpu-eigen"};
    settings.memories = {"pageable"};
  } else {
    try {
      settings.bandwidth = gpu::measure_bandwidth(static_cast<std::size_t>(settings.bw_mib) << 20, 5);
      std::printf("pinned copy bandwidth (%ld MiB, median of 5): H2D %.1f GB/s, D2H %.1f GB/s, both at once %.1f GB/s\n",
                  settings.bw_mib, settings.bandwidth.h2d / 1e9, settings.bandwidth.d2h / 1e9,
                  settings.bandwidth.both / 1e9);
    } catch (const std::exception& e) {
      settings.bandwidth = gpu::Bandwidth{};
      std::printf("pinned copy bandwidth: FAILED (%s); no floors\n", e.what());
    }
    if (std::find(settings.memories.begin(), settings.memories.end(), "pageable") != settings.memories.end()) {
      try {
        settings.host_copy = gpu::measure_host_copy(std::size_t(256) << 20, staging_thread_count(settings), 5);
        std::printf("host copy pageable <-> pinned (256 MiB, %d threads, fastest of 5): pack %.1f GB/s, unpack %.1f GB/s, "
                    "both at once %.1f GB/s\n",
                    settings.host_copy.threads, settings.host_copy.pack / 1e9, settings.host_copy.unpack / 1e9,
                    settings.host_copy.both / 1e9);
      } catch (const std::exception& e) {
        settings.host_copy = gpu::HostCopyRate{};
        std::printf("host copy rate: FAILED (%s); pageable floors count the DMA only\n", e.what());
      }
      if (settings.host_copy.both > 0) {
        try {
          const int all = settings.host_copy.threads;
          settings.under_dma = gpu::measure_copy_under_dma(std::size_t(128) << 20, {all / 4, all / 2, all}, 3);
          std::printf("host copy both ways while the DMA runs both ways (128 MiB each way, fastest of 6), against both at\n"
                      "once alone:");
          for (const gpu::CopyUnderDma& mode : settings.under_dma)
            std::printf("%s %d threads: host %.1f GB/s (%.2f), DMA %.1f GB/s (%.2f)",
                        &mode == &settings.under_dma.front() ? "" : ";", mode.threads, mode.host / 1e9,
                        mode.host / settings.host_copy.both, mode.dma / 1e9,
                        settings.bandwidth.both > 0 ? mode.dma / settings.bandwidth.both : 0.0);
          std::printf("\n");
        } catch (const std::exception& e) {
          settings.under_dma.clear();
          std::printf("host copy while the DMA runs: FAILED (%s)\n", e.what());
        }
      }
    }
  }
  std::fflush(stdout);

  const std::unique_ptr<Csv> csv =
      open_csv(csv_choice, "product", info,
               {"date", "device", "commit", "scalar", "shape", "memory", "system", "seconds", "tflops", "floor_seconds",
                "floor_bound", "x_floor", "host_gbps", "host_under_dma_gbps", "vs_cublasxt", "vs_cpu", "rel_error",
                "error_ref", "repeats", "status", "egpu_options", "note"});

  Table table({"N", "scalar", "memory", "system", "seconds", "TFLOP/s", "x floor", "host GB/s", "vs cuBLASXt",
               "vs CPU", "rel.error", "runs", "note"});
  Table floor_table(
      {"N", "scalar", "backend", "device GEMM s", "GEMM TFLOP/s", "H2D s", "D2H s", "both ways s", "floor s", "bound"});
  // --forms: per N, scalar, memory mode and egpu system, each form's median
  // and its ratio to plain's, and each form's error on the CPU sample.
  std::vector<std::string> forms_headers = {"N", "scalar", "memory", "system", "plain s"};
  for (const std::string& form : settings.forms)
    if (form != "plain") {
      forms_headers.push_back(form + " s");
      forms_headers.push_back(form + "/plain");
    }
  for (const std::string& form : settings.forms) forms_headers.push_back(form + " err");
  forms_headers.push_back("note");
  Table forms_table(forms_headers);
  const std::string options_text = describe_pipeline_options(settings.pipeline);
  bool all_ok = true;
  for (const std::string& scalar : settings.scalars) {
    for (long n : settings.sizes) {
      const CaseResult result = run_case(n, scalar, settings);
      const double flops = product_flops(n, scalar);
      for (const Floor& f : result.floors)
        floor_table.add({std::to_string(n), scalar, f.backend + (f.pageable ? " (pageable)" : ""), f.gemm > 0 ? format("%.4g", f.gemm) : "-",
                         f.gemm > 0 ? format("%.2f", flops / f.gemm / 1e12) : "-",
                         f.h2d > 0 ? format("%.4g", f.h2d) : "-", f.d2h > 0 ? format("%.4g", f.d2h) : "-",
                         f.shared(false) > 0 ? format("%.4g", f.shared(false)) : "-",
                         f.ok() ? format("%.4g", f.seconds()) : "-", f.ok() ? f.bound() : "FAILED: " + f.error});
      for (const Measurement& m : result.rows) {
        const bool timed = m.runs > 0;
        double cpu_seconds = 0, xt_seconds = 0;
        for (const Measurement& other : result.rows) {
          // CPU Eigen and cuBLASXt compute the plain product: no ratio to the other forms.
          if (other.memory != m.memory || other.runs == 0 || m.form != "plain") continue;
          if (other.system == "cpu-eigen") cpu_seconds = other.seconds;
          if (other.system == "cublasxt" && !other.failed) xt_seconds = other.seconds;
        }
        const bool rated = timed && m.computes_product();
        const double tflops = rated ? flops / m.seconds / 1e12 : 0.0;
        const std::string x_floor = timed ? ratio(m.seconds, m.floor) : "-";
        const double host_gbps = timed && m.host_bytes > 0 ? m.host_bytes / m.seconds / 1e9 : 0.0;
        const std::string vs_xt = rated ? ratio(xt_seconds, m.seconds) : "-";
        const std::string vs_cpu = rated ? ratio(cpu_seconds, m.seconds) : "-";
        std::string error = "-";
        if (m.reference) error = "ref";
        else if (m.rel_error >= 0 || std::isnan(m.rel_error))
          error = format("%.1e", m.rel_error) + (m.error_ref == "cpu-eigen" ? "" : " (vs " + m.error_ref + ")");
        table.add({std::to_string(n), scalar, m.memory, m.name(), timed ? format("%.6f", m.seconds) : "-",
                   rated ? format("%.3f", tflops) : "-", x_floor, host_gbps > 0 ? format("%.1f", host_gbps) : "-",
                   vs_xt, vs_cpu, error, std::to_string(m.runs), m.note});
        if (csv) {
          const std::string status = m.skipped  ? "skipped"
                                     : m.failed ? (timed ? "wrong" : "failed")
                                     : m.reference ? "reference"
                                                   : "ok";
          std::string note = m.note;
          for (char& ch : note)
            if (ch == ',' || ch == '\n') ch = ';';  // plain cells: scripts/plot.sh splits on commas
          const bool has_error = !m.reference && (m.rel_error >= 0 || std::isnan(m.rel_error));
          csv->add({info.date, info.device, info.commit, scalar, format("%ldx%ldx%ld", n, n, n), m.memory, m.name(),
                    timed ? format("%.6g", m.seconds) : "", rated ? format("%.4g", tflops) : "",
                    m.floor > 0 ? format("%.6g", m.floor) : "", m.floor > 0 ? m.floor_bound : "",
                    timed && m.floor > 0 ? format("%.4g", m.seconds / m.floor) : "",
                    host_gbps > 0 ? format("%.4g", host_gbps) : "",
                    host_gbps > 0 && !settings.under_dma.empty()
                        ? format("%.4g", settings.under_dma.back().host / 1e9)
                        : "",
                    rated && xt_seconds > 0 ? format("%.4g", xt_seconds / m.seconds) : "",
                    rated && cpu_seconds > 0 ? format("%.4g", cpu_seconds / m.seconds) : "",
                    has_error ? format("%.3g", m.rel_error) : "", has_error ? m.error_ref : "",
                    std::to_string(m.runs), status, m.system.rfind("egpu-", 0) == 0 ? options_text : "", note});
        }
        all_ok = all_ok && !m.failed;
      }
      if (settings.extra_forms()) {
        for (const std::string& memory : settings.memories)
          for (const std::string system : {"egpu-own", "egpu-cublas"}) {
            std::vector<const Measurement*> by_form;
            for (const std::string& form : settings.forms) {
              const Measurement* found = nullptr;
              for (const Measurement& m : result.rows)
                if (m.memory == memory && m.system == system && m.form == form) found = &m;
              by_form.push_back(found);
            }
            const Measurement* plain = by_form.front();
            if (plain == nullptr) continue;
            const bool plain_ok = plain->runs > 0 && !plain->failed;
            std::vector<std::string> row = {std::to_string(n), scalar, memory, system,
                                            plain->runs > 0 ? format("%.6f", plain->seconds) : "-"};
            std::string notes;
            for (std::size_t i = 1; i < by_form.size(); ++i) {
              const Measurement* f = by_form[i];
              const bool timed = f != nullptr && f->runs > 0;
              row.push_back(timed ? format("%.6f", f->seconds) : "-");
              row.push_back(timed && plain_ok && !f->failed ? format("%.3f", f->seconds / plain->seconds) : "-");
            }
            for (std::size_t i = 0; i < by_form.size(); ++i) {
              const Measurement* f = by_form[i];
              row.push_back(f != nullptr && (f->sample_error >= 0 || std::isnan(f->sample_error))
                                ? format("%.1e", f->sample_error)
                                : "-");
              if (f != nullptr && f->failed) notes += (notes.empty() ? "" : "; ") + settings.forms[i] + ": " + f->note;
            }
            row.push_back(notes);
            forms_table.add(row);
          }
      }
      std::fprintf(stderr, "  done: N=%ld %s\n", n, scalar.c_str());
    }
  }
  std::printf("\n");
  table.print(stdout);
  if (settings.gpu) {
    std::printf("\nfloors (device GEMM: own = egpu::kernels::gemm_tiled, cublas = cublas<t>gemm default math; "
                "H2D = (A + B) / pinned H2D rate, D2H = C / pinned D2H rate, both ways = (A + B + C) / the rate of both\n"
                "directions at once; pageable: each the slower of that and the host's copy through pinned memory;\n"
                "host GB/s: a pageable egpu row's bytes copied on the host (A + B + C) over its time)\n");
    floor_table.print(stdout);
  }
  if (settings.gpu && settings.extra_forms()) {
    std::printf("\nforms (median wall time per host-resident call; <form>/plain = that form's time over plain's, same\n"
                "system, memory mode and data; err = relative error on a %zu-entry CPU sample, long double dot products;\n"
                "plain: C.noalias() = gpu(A * B)",
                kSampleEntries);
    for (const std::string& form : settings.forms) {
      if (form == "update") std::printf("; update: C = gpu(0.5 * A * B + 2.0 * C), C refilled before each call, untimed");
      if (form == "tanh") std::printf("; tanh: C = gpu((A * B).array().tanh().matrix())");
    }
    std::printf(")\n");
    forms_table.print(stdout);
  }
  if (csv) std::printf("\nCSV: %s\n", csv->path().c_str());
  if (!all_ok) std::printf("\nSOME RESULTS ARE WRONG OR FAILED (see the note column)\n");
  return all_ok ? 0 : 1;
}

}  // namespace egpu_bench

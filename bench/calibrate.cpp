// egpu-bench calibrate: measures the rates behind egpu's CPU/GPU dispatch
// on this machine and writes them where the library reads them
// (EGPU_CALIBRATION, else $XDG_CACHE_HOME/egpu/calibration.txt, else
// ~/.cache/egpu/calibration.txt; --out overrides). About half a minute.
//
//   gpu_call_seconds         an 8 x 8 product of pageable host doubles forced to the GPU
//   gpu_gemm_flops_<s>       dC = gpu(dA * dB) at N = 2048 on device data
//   gpu_product_seconds_     double products of pageable / pinned host matrices forced to
//   <memory>_n<N>            the GPU, N = 8 .. 2048 (each table no longer at one size than
//                            at the next)
//   <memory>_latency_seconds the same at N = 256 .. 2048, less the two above, fitted to
//   and transfer rates       latency + bytes / rate
//   gpu_memory               dC = gpu(dA + dB) on 2^24 device doubles
//   cpu_product_seconds_     CPU Eigen's C.noalias() = A * B, N = 32 .. 1024, the faster
//   <s>_n<N>                 of two passes
//   cpu_gemm_flops_<s>,      the same at N = 128 and 1024, fitted to (flops + half) / rate
//   cpu_gemm_half_flops_<s>
//   cpu_memory, cheap/costly c = a + b, c = a * b - (a + b) * 2 + a, c = exp(a) on
//   op seconds               2^22 doubles (one thread: Eigen's own)
//
// A rate that comes out odd (not positive, not finite, outside what any
// machine measures) keeps the library's default, with a notice. Without a
// GPU there is nothing to calibrate: every call runs on CPU Eigen.
#include <egpu/egpu.hpp>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "host_data.hpp"
#include "planner/cost_model.hpp"
#include "subcommands.hpp"

namespace egpu_bench {
namespace planner = egpu::planner;
namespace {

const char* const kUsage =
    "usage: egpu-bench calibrate [options]\n"
    "  --out PATH      where to write (default: where egpu reads it; see above)\n"
    "  --threads T     Eigen's threads for the CPU rates (default 0: all cores)\n"

    "  --repeats R     timed runs per figure, median taken (default 7)\n";

egpu::Options on_gpu() {
  egpu::Options o;
  o.where = egpu::Where::gpu;
  return o;
}

template <class S>
using Mat = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic>;

template <class S>
double flops(Eigen::Index n) {
  const double f = 2.0 * double(n) * double(n) * double(n);
  return Eigen::NumTraits<S>::IsComplex ? 4 * f : f;
}

template <class S>
double cpu_gemm_seconds(Eigen::Index n, int repeats) {
  Mat<S> a(n, n), b(n, n), c(n, n);
  fill_random(a, 1);
  fill_random(b, 2);
  return median(time_calls([&] { c.noalias() = a * b; }, 1, repeats));
}

template <class S>
double gpu_gemm_flops(Eigen::Index n, int repeats) {
  Mat<S> a(n, n), b(n, n);
  fill_random(a, 3);
  fill_random(b, 4);
  egpu::DeviceMatrix<S> da(a), db(b), dc(n, n);
  const double t = median(time_calls(
      [&] {
        dc = egpu::gpu(da * db);
        egpu::synchronize();
      },
      1, repeats));
  return flops<S>(n) / t;
}

// Times measured at increasing sizes, each no longer than the next one's: a
// busy host only adds time, so a smaller product measured slower than a
// larger one was measured while the host was busy.
template <std::size_t K>
void no_longer_than_the_next(std::array<double, K>& t) {
  for (std::size_t i = K - 1; i > 0; --i) t[i - 1] = std::min(t[i - 1], t[i]);
}

// CPU Eigen's products of scalar index s at the table's sizes (the faster
// of two passes over them), and its rate and half-rate flops from two of
// them.
template <class S>
void fit_cpu(planner::MachineRates& r, int s, int repeats, std::vector<std::string>& notices) {
  const auto& sizes = planner::MachineRates::kCpuTableSizes;
  auto& table = r.cpu_product_seconds[static_cast<std::size_t>(s)];
  for (int pass = 0; pass < 2; ++pass)
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      const double t = cpu_gemm_seconds<S>(sizes[i], sizes[i] <= 256 ? repeats * 4 : repeats);
      table[i] = pass == 0 ? t : std::min(table[i], t);
    }
  no_longer_than_the_next(table);
  constexpr std::size_t i1 = 3, i2 = 8;  // the fit's two sizes in the table
  static_assert(planner::MachineRates::kCpuTableSizes[i1] == 128 && planner::MachineRates::kCpuTableSizes[i2] == 1024,
                "the CPU fit reads N = 128 and 1024 from the table");
  const Eigen::Index n1 = 128, n2 = 1024;
  const double t1 = table[i1], t2 = table[i2];
  const double rate = (flops<S>(n2) - flops<S>(n1)) / (t2 - t1);
  if (!(rate > 0) || !(t1 > 0)) {
    notices.push_back("CPU product timings of scalar " + std::to_string(s) + " are odd (N=128 " +
                      std::to_string(t1) + " s, N=1024 " + std::to_string(t2) + " s); using N=1024 alone");
    r.cpu_gemm_flops[s] = flops<S>(n2) / t2;
    r.cpu_gemm_half_flops[s] = 0;
    return;
  }
  r.cpu_gemm_flops[s] = rate;
  r.cpu_gemm_half_flops[s] = std::max(0.0, t1 * rate - flops<S>(n1));
}

}  // namespace

int run_calibrate(int argc, char** argv) {
  Args args(argc, argv);
  if (print_help(args, kUsage, false)) return 0;
  const std::string out_arg = args.text("out", "");
  const long threads = args.integer("threads", 0);
  const int repeats = static_cast<int>(args.integer("repeats", 7));
  args.finish();
  if (repeats < 1) throw std::invalid_argument("--repeats is positive");

  const RunInfo info = gather_run_info(static_cast<int>(threads));
  if (!egpu::has_device()) {
    std::printf("egpu-bench calibrate: no usable GPU (%s): nothing to calibrate; every call runs on CPU Eigen.\n",
                info.device.c_str());
    return 0;
  }
  const std::string path =
      !out_arg.empty() ? out_arg
                       : planner::calibration_path(std::getenv("EGPU_CALIBRATION"), std::getenv("XDG_CACHE_HOME"),
                                                   std::getenv("HOME"));
  if (path.empty()) throw std::invalid_argument("no place to write: set --out, EGPU_CALIBRATION or HOME");

  planner::MachineRates r;
  r.device = info.device;
  r.cpu_threads = info.cpu_threads;
  std::vector<std::string> notices;

  {  // The GPU's fixed cost: a product with nothing to move.
    Mat<double> a(8, 8), b(8, 8), c(8, 8);
    fill_random(a, 5);
    fill_random(b, 6);
    r.gpu_call_seconds = median(time_calls([&] { c.noalias() = egpu::gpu(a * b, on_gpu()); }, 20, 25 * repeats));
  }
  r.gpu_gemm_flops[0] = gpu_gemm_flops<float>(2048, repeats);
  r.gpu_gemm_flops[1] = gpu_gemm_flops<double>(2048, repeats);
  r.gpu_gemm_flops[2] = gpu_gemm_flops<std::complex<float>>(2048, repeats);
  r.gpu_gemm_flops[3] = gpu_gemm_flops<std::complex<double>>(2048, repeats);
  {
    // What moving host data costs a call: double products of host matrices
    // forced to the GPU, N = 8 .. 2048, each time kept; from N = 256, less
    // the fixed cost and the kernel, fitted to latency + bytes / rate (the
    // rate covers both directions: bytes = A, B up and C down), pageable
    // then pinned.
    for (int pinned = 0; pinned < 2; ++pinned) {
      std::vector<double> xs, ys;
      const auto& sizes = planner::MachineRates::kGpuTableSizes;
      for (std::size_t i = 0; i < sizes.size(); ++i) {
        const Eigen::Index n = sizes[i];
        Mat<double> a(n, n), b(n, n), c(n, n);
        fill_random(a, 12);
        fill_random(b, 13);
        std::vector<egpu::PinGuard> guards;
        if (pinned) {
          guards.push_back(egpu::pin(a));
          guards.push_back(egpu::pin(b));
          guards.push_back(egpu::pin(c));
        }
        const double t = median(time_calls([&] { c.noalias() = egpu::gpu(a * b, on_gpu()); }, n < 256 ? 5 : 1,
                                           n < 256 ? 5 * repeats : repeats));
        r.gpu_product_seconds[static_cast<std::size_t>(pinned)][i] = t;
        if (n < 256) continue;  // the fit below: the sizes whose bytes take most of their time
        xs.push_back(3.0 * double(n) * double(n) * 8);
        ys.push_back(t - r.gpu_call_seconds - flops<double>(n) / r.gpu_gemm_flops[1]);
      }
      // Least squares on relative errors (weights 1 / y^2): the small sizes,
      // where CPU and GPU are close, count as much as the large ones.
      double w_sum = 0, mx = 0, my = 0;
      for (std::size_t i = 0; i < xs.size(); ++i) {
        const double w = 1 / (ys[i] * ys[i]);
        w_sum += w, mx += w * xs[i], my += w * ys[i];
      }
      mx /= w_sum, my /= w_sum;
      double sxy = 0, sxx = 0;
      for (std::size_t i = 0; i < xs.size(); ++i) {
        const double w = 1 / (ys[i] * ys[i]);
        sxy += w * (xs[i] - mx) * (ys[i] - my), sxx += w * (xs[i] - mx) * (xs[i] - mx);
      }
      double slope = sxy / sxx, latency = my - slope * mx;
      if (!(slope > 0) || !(latency >= 0)) {
        notices.push_back(std::string(pinned ? "pinned" : "pageable") +
                          " products do not fit latency + bytes / rate; taking the rate of the largest alone");
        slope = ys.back() / xs.back();
        latency = 0;
      }
      no_longer_than_the_next(r.gpu_product_seconds[static_cast<std::size_t>(pinned)]);
      (pinned ? r.h2d_pinned : r.h2d_pageable) = 1 / slope;
      (pinned ? r.d2h_pinned : r.d2h_pageable) = 1 / slope;
      (pinned ? r.pinned_latency_seconds : r.pageable_latency_seconds) = latency;
    }
  }
  {  // Device memory: a coefficient-wise sum on device data.
    const Eigen::Index n = 1 << 24;
    Mat<double> a(n, 1), b(n, 1);
    fill_random(a, 8);
    fill_random(b, 9);
    egpu::DeviceMatrix<double> da(a), db(b), dc(n, 1);
    const double t = median(time_calls(
        [&] {
          dc = egpu::gpu(da + db);
          egpu::synchronize();
        },
        1, repeats));
    r.gpu_memory_bytes = 3.0 * double(n) * 8 / t;
  }
  fit_cpu<float>(r, 0, repeats, notices);
  fit_cpu<double>(r, 1, repeats, notices);
  fit_cpu<std::complex<float>>(r, 2, repeats, notices);
  fit_cpu<std::complex<double>>(r, 3, repeats, notices);
  {  // CPU Eigen's coefficient-wise rates (one thread).
    const Eigen::Index n = 1 << 22;
    Eigen::ArrayXd a(n), b(n), c(n);
    fill_random(a, 10);
    fill_random(b, 11);
    const double t_add = median(time_calls([&] { c = a + b; }, 1, repeats));
    const double t_cheap = median(time_calls([&] { c = a * b - (a + b) * 2.0 + a; }, 1, repeats));
    const double t_exp = median(time_calls([&] { c = a.exp(); }, 1, repeats));
    r.cpu_memory_bytes = 3.0 * double(n) * 8 / t_add;
    // a + b is one operation and 24 bytes an element; the second has five.
    r.cpu_cheap_op_seconds = std::max(1e-12, (t_cheap - t_add) / (4.0 * double(n)));
    r.cpu_costly_op_seconds = std::max(1e-12, (t_exp - 16.0 * double(n) / r.cpu_memory_bytes) / double(n));
  }

  // What the library will read: the same text, read back with its checks.
  const std::string text = planner::format_rates(r);
  planner::parse_rates(text, notices);
  std::filesystem::create_directories(std::filesystem::path(path).parent_path().empty()
                                          ? std::filesystem::path(".")
                                          : std::filesystem::path(path).parent_path());
  std::ofstream out(path);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path);
  std::printf("egpu-bench calibrate: %s, %d CPU threads, commit %s -> %s\n%s", info.device.c_str(), info.cpu_threads,
              info.commit.c_str(), path.c_str(), text.c_str());
  for (const std::string& n : notices) std::printf("notice: %s\n", n.c_str());
  return 0;
}

}  // namespace egpu_bench

// egpu-bench small-calls: what egpu::gpu(...) adds to the smallest calls,
// those its dispatch keeps on the CPU: C.noalias() = A * B (square, double)
// and c = a * b + exp(a) (double arrays), CPU Eigen and egpu::gpu
// (automatic) in turn, each timed as the fastest of several rounds of many
// calls (the noise of a busy host only adds time; nanosecond differences
// need the floor, not the median, which egpu-bench dispatch reports).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <tuple>
#include <vector>

#include <Eigen/Dense>

#include "bench_common.hpp"
#include "egpu/egpu.hpp"
#include "subcommands.hpp"

namespace egpu_bench {
namespace {

const char* const kUsage =
    "usage: egpu-bench small-calls [options]\n"
    "  --sizes N,N,...   product sides and array lengths (default 2,8)\n"
    "  --rounds R        rounds per variant, the fastest reported (default 9)\n"
    "  --calls C         calls per round (default 1000000)\n";

// Seconds per call of f: the fastest of `rounds` rounds of `calls` calls.
template <class F> double fastest(F&& f, long rounds, long calls) {
  double best = 1e30;
  for (long r = 0; r < rounds; ++r) {
    const auto start = std::chrono::steady_clock::now();
    for (long c = 0; c < calls; ++c) f();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return best / double(calls);
}

// Keeps the compiler from dropping a result it sees unread.
inline void keep(const void* p) { asm volatile("" : : "r"(p) : "memory"); }

}  // namespace

int run_small_calls(int argc, char** argv) {
  Args args(argc, argv);
  if (print_help(args, kUsage, false)) return 0;
  const std::vector<long> sizes = args.integers("sizes", {2, 8});
  const long rounds = args.integer("rounds", 9), calls = args.integer("calls", 1000000);
  args.finish();
  std::printf("%-12s %6s %14s %14s %12s %8s\n", "call", "size", "CPU Eigen ns", "egpu::gpu ns", "added ns", "ratio");
  for (const long n : sizes) {
    Eigen::MatrixXd a = Eigen::MatrixXd::Random(n, n), b = Eigen::MatrixXd::Random(n, n), c(n, n);
    Eigen::ArrayXd x = Eigen::ArrayXd::Random(n), y(n);
    const double p_cpu = fastest([&] { c.noalias() = a * b; keep(c.data()); }, rounds, calls);
    const double p_egpu = fastest([&] { c.noalias() = egpu::gpu(a * b); keep(c.data()); }, rounds, calls);
    const double e_cpu = fastest([&] { y = x * x + x.exp(); keep(y.data()); }, rounds, calls);
    const double e_egpu = fastest([&] { y = egpu::gpu(x * x + x.exp()); keep(y.data()); }, rounds, calls);
    for (const auto& [what, cpu, gpu] : {std::tuple<const char*, double, double>{"product", p_cpu, p_egpu},
                                         std::tuple<const char*, double, double>{"elementwise", e_cpu, e_egpu}})
      std::printf("%-12s %6ld %14.2f %14.2f %12.2f %8.2f\n", what, n, cpu * 1e9, gpu * 1e9, (gpu - cpu) * 1e9,
                  gpu / cpu);
  }
  return 0;
}

}  // namespace egpu_bench

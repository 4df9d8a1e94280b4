// The dispatch's cost model (src/planner/cost_model), pure C++: its
// estimates against hand-computed figures for given rates, the choices
// they imply (small calls on the CPU, large ones on the GPU, pinned memory
// moving the line, fewer CPU threads moving it the other way), the
// thresholds below which the GPU never wins, and the calibration file:
// read back what is written, odd values replaced by defaults with a notice.
#define BOOST_TEST_MODULE cost_model
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "planner/cost_model.hpp"

using namespace egpu::planner;

namespace {

// Round figures, so that every estimate below can be worked out by hand.
MachineRates round_rates() {
  MachineRates r;
  r.device = "test GPU";
  r.gpu_call_seconds = 100e-6;
  r.h2d_pinned = r.d2h_pinned = 50e9;
  r.h2d_pageable = r.d2h_pageable = 10e9;
  r.gpu_gemm_flops = {{40e12, 50e12, 40e12, 50e12}};
  r.gpu_memory_bytes = 2e12;
  r.pinned_latency_seconds = r.pageable_latency_seconds = 0;  // (latency_counts_once checks them)
  r.cpu_threads = 16;
  r.cpu_gemm_flops = {{2e12, 1e12, 2e12, 1e12}};
  r.cpu_gemm_half_flops = {{4e6, 2e6, 4e6, 2e6}};
  r.cpu_memory_bytes = 10e9;
  r.cpu_cheap_op_seconds = 1e-9;
  r.cpu_costly_op_seconds = 5e-9;
  return r;
}

CallWork square_product(std::int64_t n, int scalar, bool pinned, int threads = 16) {
  CallWork w;
  w.work = Work::product;
  w.scalar = scalar;
  w.m = w.n = w.k = n;
  w.cpu_threads = threads;
  const double elem = scalar == 0 ? 4 : scalar == 3 ? 16 : 8;
  const double bytes = static_cast<double>(n) * static_cast<double>(n) * elem;
  (pinned ? w.pinned_in : w.pageable_in) = 2 * bytes;
  (pinned ? w.pinned_out : w.pageable_out) = bytes;
  return w;
}

bool close(double a, double b) { return std::abs(a - b) <= 1e-9 * std::abs(b); }

}  // namespace

BOOST_AUTO_TEST_CASE(product_estimates_by_hand) {
  const MachineRates r = round_rates();
  const CallCost c = estimate(r, square_product(1000, 1, false));
  // CPU: (2e9 + 2e6) / 1e12; GPU: 1e-4 + 16e6 / 10e9 + 8e6 / 10e9 + 2e9 / 50e12.
  BOOST_TEST(close(c.cpu_seconds, 2.002e-3));
  BOOST_TEST(close(c.gpu_seconds, 1e-4 + 1.6e-3 + 0.8e-3 + 4e-5));
  const CallCost p = estimate(r, square_product(1000, 1, true));
  BOOST_TEST(close(p.gpu_seconds, 1e-4 + 0.32e-3 + 0.16e-3 + 4e-5));
  // Complex: four times the real flops.
  const CallCost z = estimate(r, square_product(1000, 3, true));
  BOOST_TEST(close(z.cpu_seconds, (8e9 + 2e6) / 1e12));
  // Eight of sixteen threads: half the rate.
  const CallCost half = estimate(r, square_product(1000, 1, true, 8));
  BOOST_TEST(close(half.cpu_seconds, 2 * 2.002e-3));
  // More threads than calibrated count as the calibrated number.
  BOOST_TEST(close(estimate(r, square_product(1000, 1, true, 64)).cpu_seconds, 2.002e-3));
  BOOST_TEST(close(product_flops(square_product(10, 2, true)), 8000));
}

BOOST_AUTO_TEST_CASE(latency_counts_once_by_the_memory_moved) {
  MachineRates r = round_rates();
  const double base_pinned = estimate(r, square_product(500, 1, true)).gpu_seconds;
  const double base_pageable = estimate(r, square_product(500, 1, false)).gpu_seconds;
  r.pinned_latency_seconds = 1e-3;
  r.pageable_latency_seconds = 2e-3;
  BOOST_TEST(close(estimate(r, square_product(500, 1, true)).gpu_seconds, base_pinned + 1e-3));
  BOOST_TEST(close(estimate(r, square_product(500, 1, false)).gpu_seconds, base_pageable + 2e-3));
  CallWork mixed = square_product(500, 1, true);
  mixed.pageable_out = mixed.pinned_out;
  mixed.pinned_out = 0;
  const double base_mixed = [&] {
    MachineRates z = round_rates();
    return estimate(z, mixed).gpu_seconds;
  }();
  BOOST_TEST(close(estimate(r, mixed).gpu_seconds, base_mixed + 2e-3));
  CallWork none = square_product(500, 1, true);
  none.pinned_in = none.pinned_out = 0;  // device data: nothing crosses
  BOOST_TEST(close(estimate(r, none).gpu_seconds, estimate(round_rates(), none).gpu_seconds));
}

BOOST_AUTO_TEST_CASE(choices_move_with_size_memory_and_threads) {
  const MachineRates r = round_rates();
  for (int s = 0; s < 4; ++s) {
    BOOST_TEST(!estimate(r, square_product(2, s, true)).gpu());
    BOOST_TEST(!estimate(r, square_product(64, s, true)).gpu());
    BOOST_TEST(estimate(r, square_product(8192, s, false)).gpu());
  }
  // A size where pinned memory wins the GPU the call and pageable does not:
  // f64 N=700: CPU 0.688 ms; GPU pinned 0.1 + 0.235 + 0.014 ms, pageable
  // 0.1 + 1.18 + 0.014 ms.
  BOOST_TEST(estimate(r, square_product(700, 1, true)).gpu());
  BOOST_TEST(!estimate(r, square_product(700, 1, false)).gpu());
  // One CPU thread instead of sixteen hands the GPU smaller products.
  BOOST_TEST(!estimate(r, square_product(300, 1, true)).gpu());
  BOOST_TEST(estimate(r, square_product(300, 1, true, 1)).gpu());
}

BOOST_AUTO_TEST_CASE(coefficient_wise_estimates) {
  const MachineRates r = round_rates();
  CallWork w;
  w.work = Work::elementwise;
  w.scalar = 1;
  w.m = 1000;
  w.n = 1000;
  w.cheap_ops = 2;
  w.costly_ops = 1;
  w.pageable_in = 16e6;
  w.pageable_out = 8e6;
  w.device_bytes = 24e6;
  const CallCost c = estimate(r, w);
  BOOST_TEST(close(c.cpu_seconds, 1e6 * (2e-9 + 5e-9) + 24e6 / 10e9));
  BOOST_TEST(close(c.gpu_seconds, 1e-4 + 16e6 / 10e9 + 8e6 / 10e9 + 24e6 / 2e12));
  // Ten thousand elements stay on the CPU; a million with ten costly
  // operations each go to the GPU.
  CallWork small = w;
  small.m = small.n = 100;
  small.pageable_in = 16e4;
  small.pageable_out = 8e4;
  small.device_bytes = 24e4;
  BOOST_TEST(!estimate(r, small).gpu());
  w.costly_ops = 10;
  BOOST_TEST(estimate(r, w).gpu());
}

BOOST_AUTO_TEST_CASE(thresholds_below_which_the_gpu_never_wins) {
  const MachineRates r = round_rates();
  // One thread of the slowest CPU scalar at an eighth of its share: 1e-4 s * 1e12 / 16 / 8.
  const double flops = gpu_min_flops(r);
  BOOST_TEST(close(flops, 1e-4 * 1e12 / 16 / 8));
  // Any product below it, on any memory, any scalar, stays on the CPU.
  for (int s = 0; s < 4; ++s)
    for (std::int64_t n = 1; product_flops(square_product(n, s, true)) < flops; n += 3)
      BOOST_TEST(!estimate(r, square_product(n, s, true)).gpu());
  const double elements = gpu_min_elements(r);
  BOOST_TEST(close(elements, 1e-4 / (1e-9 + 8 / 10e9)));
  CallWork w;
  w.work = Work::elementwise;
  w.cheap_ops = 1;
  w.m = static_cast<std::int64_t>(elements * 0.99);
  w.n = 1;
  w.pinned_in = 4.0 * w.m;
  w.pinned_out = 4.0 * w.m;
  BOOST_TEST(!estimate(r, w).gpu());
}

// Flops of an N x N x N product of scalar index s.
double cube_flops(double n, int s) { return (s >= 2 ? 8.0 : 2.0) * n * n * n; }

// Measured CPU times (here the rate's line, twice as slow at N = 192 to
// 384, as multithreaded Eigen runs there) stand in for the line: at each
// measured size its time, between two of them a time between theirs,
// below the smallest in proportion to the flops, beyond the largest its
// time plus the rest at the rate; fewer threads, in proportion. A table
// with a size missing is not used.
BOOST_AUTO_TEST_CASE(measured_cpu_times_stand_in_for_the_rate) {
  MachineRates r = round_rates();
  const auto& sizes = MachineRates::kCpuTableSizes;
  for (int s = 0; s < 4; ++s)
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      const double slow = sizes[i] >= 192 && sizes[i] <= 384 ? 2.0 : 1.0;
      r.cpu_product_seconds[s][i] = slow * (cube_flops(sizes[i], s) + r.cpu_gemm_half_flops[s]) / r.cpu_gemm_flops[s];
    }
  for (int s = 0; s < 4; ++s) {
    for (std::size_t i = 0; i < sizes.size(); ++i)
      BOOST_TEST(close(estimate(r, square_product(sizes[i], s, true)).cpu_seconds, r.cpu_product_seconds[s][i]),
                 "scalar " << s << ", N " << sizes[i]);
    const double between = estimate(r, square_product(300, s, true)).cpu_seconds;
    BOOST_TEST((between > r.cpu_product_seconds[s][5] && between < r.cpu_product_seconds[s][6]), "N 300, scalar " << s);
    BOOST_TEST(close(estimate(r, square_product(16, s, true)).cpu_seconds,
                     r.cpu_product_seconds[s][0] * cube_flops(16, s) / cube_flops(32, s)));
    BOOST_TEST(close(estimate(r, square_product(2048, s, true)).cpu_seconds,
                     r.cpu_product_seconds[s].back() + (cube_flops(2048, s) - cube_flops(1024, s)) / r.cpu_gemm_flops[s]));
    BOOST_TEST(close(estimate(r, square_product(256, s, true, 4)).cpu_seconds, 4 * r.cpu_product_seconds[s][5]));
  }
  // N = 384 double: 2 (113.2e6 + 2e6) / 1e12 s on the CPU against 0.1 + 0.0708 + 0.0023 ms
  // pinned on the GPU: the measured time hands the GPU a call the line keeps.
  BOOST_TEST(estimate(r, square_product(384, 1, true)).gpu());
  BOOST_TEST(!estimate(round_rates(), square_product(384, 1, true)).gpu());
  r.cpu_product_seconds[1][3] = 0;
  BOOST_TEST(close(estimate(r, square_product(256, 1, true)).cpu_seconds,
                   estimate(round_rates(), square_product(256, 1, true)).cpu_seconds));
}

// Measured GPU times of double products stand in for the call cost, the
// latency and the transfers: at each measured size its time; between two
// sizes, linear in the bytes moved; below the smallest, the smallest's
// time less its device work; beyond the largest, the rest of the bytes at
// the rate. Other scalars and shapes go by the bytes they move and add
// their own device work; a call that moves pageable memory takes the
// pageable times.
BOOST_AUTO_TEST_CASE(measured_gpu_times_stand_in_for_call_cost_latency_and_transfers) {
  MachineRates r = round_rates();
  const auto& sizes = MachineRates::kGpuTableSizes;
  auto bytes = [](double n) { return 3 * n * n * 8; };
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const double n = sizes[i], device = cube_flops(n, 1) / r.gpu_gemm_flops[1];
    r.gpu_product_seconds[0][i] = 60e-6 + bytes(n) / 8e9 + device;   // pageable
    r.gpu_product_seconds[1][i] = 30e-6 + bytes(n) / 40e9 + device;  // pinned
  }
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    BOOST_TEST(close(estimate(r, square_product(sizes[i], 1, false)).gpu_seconds, r.gpu_product_seconds[0][i]));
    BOOST_TEST(close(estimate(r, square_product(sizes[i], 1, true)).gpu_seconds, r.gpu_product_seconds[1][i]));
  }
  // Float N = 1000 moves 12 MB, between double N = 512 and 1024: on the line
  // through them (straight here), plus its own device work.
  BOOST_TEST(close(estimate(r, square_product(1000, 0, true)).gpu_seconds,
                   30e-6 + 12e6 / 40e9 + cube_flops(1000, 0) / r.gpu_gemm_flops[0]));
  BOOST_TEST(close(estimate(r, square_product(2, 1, true)).gpu_seconds, 30e-6 + bytes(8) / 40e9 + 16 / 50e12));
  BOOST_TEST(close(estimate(r, square_product(4096, 1, true)).gpu_seconds,
                   30e-6 + bytes(2048) / 40e9 + (bytes(4096) - bytes(2048)) / r.h2d_pinned + cube_flops(4096, 1) / 50e12));
  CallWork mixed = square_product(1024, 1, true);
  mixed.pageable_out = mixed.pinned_out;
  mixed.pinned_out = 0;
  BOOST_TEST(close(estimate(r, mixed).gpu_seconds, r.gpu_product_seconds[0][5]));
  // Nothing moved (device data) or a size missing: the rates.
  CallWork none = square_product(500, 1, true);
  none.pinned_in = none.pinned_out = 0;
  BOOST_TEST(close(estimate(r, none).gpu_seconds, estimate(round_rates(), none).gpu_seconds));
  r.gpu_product_seconds[1][2] = 0;
  BOOST_TEST(close(estimate(r, square_product(700, 1, true)).gpu_seconds,
                   estimate(round_rates(), square_product(700, 1, true)).gpu_seconds));
}

BOOST_AUTO_TEST_CASE(calibration_file_round_trip) {
  const MachineRates r = round_rates();
  std::vector<std::string> notices;
  const MachineRates back = parse_rates(format_rates(r), notices);
  BOOST_TEST(notices.empty());
  BOOST_TEST(back.device == r.device);
  BOOST_TEST(back.cpu_threads == r.cpu_threads);
  for (int s = 0; s < 4; ++s) {
    BOOST_TEST(close(back.gpu_gemm_flops[s], r.gpu_gemm_flops[s]));
    BOOST_TEST(close(back.cpu_gemm_flops[s], r.cpu_gemm_flops[s]));
    BOOST_TEST(close(back.cpu_gemm_half_flops[s], r.cpu_gemm_half_flops[s]));
  }
  BOOST_TEST(close(back.gpu_call_seconds, r.gpu_call_seconds));
  BOOST_TEST(close(back.h2d_pageable, r.h2d_pageable));
  BOOST_TEST(close(back.cpu_costly_op_seconds, r.cpu_costly_op_seconds));
  MachineRates t = r;
  t.gpu_product_seconds[1][3] = 8.5e-5;
  t.cpu_product_seconds[2][8] = 3.25e-3;
  const MachineRates tb = parse_rates(format_rates(t), notices);
  BOOST_TEST(notices.empty());
  BOOST_TEST(close(tb.gpu_product_seconds[1][3], 8.5e-5));
  BOOST_TEST(close(tb.cpu_product_seconds[2][8], 3.25e-3));
  BOOST_TEST(tb.gpu_product_seconds[0][3] == 0.0);
  MachineRates l = r;
  l.pinned_latency_seconds = 1.5e-4;
  l.pageable_latency_seconds = 4.5e-4;
  const MachineRates lb = parse_rates(format_rates(l), notices);
  BOOST_TEST(close(lb.pinned_latency_seconds, 1.5e-4));
  BOOST_TEST(close(lb.pageable_latency_seconds, 4.5e-4));
}

BOOST_AUTO_TEST_CASE(odd_values_keep_the_defaults_with_a_notice) {
  const MachineRates d = default_rates();
  std::vector<std::string> notices;
  const MachineRates r = parse_rates(
      "# a comment\n"
      "device = Some GPU\n"
      "gpu_call_seconds = -5\n"           // negative
      "h2d_pinned_bytes_per_second = nan\n"
      "cpu_gemm_flops_f64 = 1e30\n"        // implausible
      "cpu_threads = 2.5\n"
      "cpu_memory_bytes_per_second = fast\n"
      "no_such_key = 1\n"
      "just words\n"
      "gpu_gemm_flops_f32 = 3e13   # measured\n",
      notices);
  BOOST_TEST(notices.size() == 7u);
  BOOST_TEST(r.device == "Some GPU");
  BOOST_TEST(r.gpu_call_seconds == d.gpu_call_seconds);
  BOOST_TEST(r.h2d_pinned == d.h2d_pinned);
  BOOST_TEST(r.cpu_gemm_flops[1] == d.cpu_gemm_flops[1]);
  BOOST_TEST(r.cpu_threads == d.cpu_threads);
  BOOST_TEST(r.cpu_memory_bytes == d.cpu_memory_bytes);
  BOOST_TEST(r.gpu_gemm_flops[0] == 3e13);
}

BOOST_AUTO_TEST_CASE(defaults_are_cautious) {
  // Uncalibrated, the GPU takes a host-resident f64 product only where it
  // is far ahead: not at N=1024, at N=8192.
  const MachineRates d = default_rates();
  BOOST_TEST(!estimate(d, square_product(1024, 1, false)).gpu());
  BOOST_TEST(!estimate(d, square_product(1024, 1, true)).gpu());
  BOOST_TEST(estimate(d, square_product(8192, 1, false)).gpu());
}

BOOST_AUTO_TEST_CASE(calibration_path_order) {
  BOOST_TEST(calibration_path("/x/c.txt", "/cache", "/home/u") == "/x/c.txt");
  BOOST_TEST(calibration_path(nullptr, "/cache", "/home/u") == "/cache/egpu/calibration.txt");
  BOOST_TEST(calibration_path("", "", "/home/u") == "/home/u/.cache/egpu/calibration.txt");
  BOOST_TEST(calibration_path(nullptr, nullptr, nullptr) == "");
}

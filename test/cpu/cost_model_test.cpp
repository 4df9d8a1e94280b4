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

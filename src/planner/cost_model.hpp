// The cost model behind egpu's CPU/GPU dispatch: what one call would take
// on CPU Eigen and on the GPU, from the call's work (flops, elements and
// their operations), the bytes that must cross PCIe (pageable or pinned),
// and rates measured on this machine (`egpu-bench calibrate`). Pure C++:
// no CUDA calls, tested on any machine.
//
//   CPU product:        (flops + half) / (rate * threads / calibrated threads)
//                       (`half`: the flops at which Eigen reaches half its rate)
//   CPU coefficient-wise: elements * (cheap ops * c_cheap + costly ops * c_costly)
//                       + bytes / CPU memory rate   (Eigen runs these on one thread)
//   GPU:                call cost + latency of the memory moved + bytes up / upload rate
//                       + bytes down / download rate + device work (flops / GEMM rate, or
//                       bytes / device memory rate)
//
// Where the calibration measured them, times at fixed sizes stand in for
// the first terms over the sizes where CPU and GPU are close, which no two
// rates follow (16 CPU threads ran N = 256 float at 0.6 of the rate a line
// through N = 128 and 1024 gives; a GPU call that moves a few hundred KiB
// pays none of the latency that larger ones do):
//   CPU product:        the measured times of square products, interpolated in
//                       flops (log-log), beyond the largest its time + the rest / rate
//   GPU:                the measured times of square double products of the memory's
//                       kind (pageable when a call moves any), less their device work,
//                       interpolated in bytes moved, beyond the largest its time +
//                       the rest / rate; + the call's device work
//
// The GPU side adds transfers and compute, as the pipeline runs them for a
// product of one tile (the sizes where the two sides are close); larger
// calls overlap them, so the model overstates the GPU there, where it wins
// by far anyway.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace egpu::planner {

enum class Work : std::uint8_t { product, elementwise, reduction };

// A call as the model sees it. Scalars index the rate arrays: 0 float,
// 1 double, 2 complex<float>, 3 complex<double>.
struct CallWork {
  Work work = Work::product;
  int scalar = 1;
  std::int64_t m = 0, n = 0, k = 0;  // a product: m x k times k x n; otherwise the value's rows, cols
  // Coefficient-wise programs: operations per element, transcendental
  // (exp, log, sin, pow, ...) and the rest (+, *, min, compare, ...).
  int costly_ops = 0, cheap_ops = 0;
  // Bytes the call reads and writes in host memory, split by whether the
  // memory is pinned (copied by DMA) or pageable (staged by host threads).
  double pageable_in = 0, pinned_in = 0, pageable_out = 0, pinned_out = 0;
  // Bytes the device reads and writes (coefficient-wise and reductions).
  double device_bytes = 0;
  int cpu_threads = 1;  // the threads CPU Eigen would use for a product
};

// Real flops of a product: 2mnk, four times that for complex scalars.
double product_flops(const CallWork& call);

// Rates of this machine. Every rate is per second.
struct MachineRates {
  std::string device;  // the GPU they were measured on
  // The GPU.
  double gpu_call_seconds = 150e-6;  // a call's fixed cost on host data, nothing to move
  double h2d_pinned = 10e9, d2h_pinned = 10e9;     // bytes
  double h2d_pageable = 4e9, d2h_pageable = 4e9;   // bytes, staging included
  // What a call that moves host data pays once beyond gpu_call_seconds
  // before its bytes flow (planning, staging, the first piece's round trip),
  // by the kind of memory it moves (the larger when it moves both).
  double pinned_latency_seconds = 0.3e-3, pageable_latency_seconds = 0.6e-3;
  std::array<double, 4> gpu_gemm_flops{{20e12, 20e12, 20e12, 20e12}};
  double gpu_memory_bytes = 1e12;
  // CPU Eigen.
  int cpu_threads = 1;  // threads the CPU product rates were measured with
  std::array<double, 4> cpu_gemm_flops{{2e12, 1e12, 2e12, 1e12}};
  std::array<double, 4> cpu_gemm_half_flops{{1e6, 1e6, 1e6, 1e6}};
  double cpu_memory_bytes = 20e9;     // coefficient-wise, one thread
  double cpu_cheap_op_seconds = 0.2e-9;
  double cpu_costly_op_seconds = 2e-9;

  // Measured times at fixed sizes; 0 where not measured (a table is used
  // only when all of it was).
  // N x N double products of host matrices, the GPU forced: [0] pageable, [1] pinned.
  static constexpr std::array<int, 7> kGpuTableSizes{{8, 64, 128, 256, 512, 1024, 2048}};
  std::array<std::array<double, 7>, 2> gpu_product_seconds{};
  // CPU Eigen's N x N products on cpu_threads threads, by scalar.
  static constexpr std::array<int, 9> kCpuTableSizes{{32, 64, 96, 128, 192, 256, 384, 512, 1024}};
  std::array<std::array<double, 9>, 4> cpu_product_seconds{};
};

// The rates used when this machine was not calibrated: a GPU that pays
// more than measured GPUs do and a CPU faster than measured hosts, so that
// the GPU takes a call only where it is far ahead.
MachineRates default_rates();

struct CallCost {
  double cpu_seconds = 0, gpu_seconds = 0;
  bool gpu() const { return gpu_seconds < cpu_seconds; }
};

CallCost estimate(const MachineRates& rates, const CallWork& call);

// Work below which the GPU never wins on these rates, whatever the call's
// memory: products of fewer flops (one CPU thread at an eighth of its share
// of the rate against the GPU's fixed cost alone), coefficient-wise calls
// of fewer elements (the cheapest operation on 4-byte values).
double gpu_min_flops(const MachineRates& rates);
double gpu_min_elements(const MachineRates& rates);

// The calibration file: `key = value` lines, `#` comments. Reading takes
// every known key whose value is a plausible rate (positive, finite, within
// wide bounds); anything else keeps the default and adds a line to
// `notices`. Writing gives back what reading takes.
MachineRates parse_rates(const std::string& text, std::vector<std::string>& notices);
std::string format_rates(const MachineRates& rates);

}  // namespace egpu::planner

namespace egpu::planner {

// Where the calibration file is: EGPU_CALIBRATION when set, else
// $XDG_CACHE_HOME/egpu/calibration.txt, else
// $HOME/.cache/egpu/calibration.txt ("" when none of them is set).
std::string calibration_path(const char* explicit_path, const char* xdg_cache_home, const char* home);

}  // namespace egpu::planner

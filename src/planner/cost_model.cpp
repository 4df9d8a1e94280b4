#include "planner/cost_model.hpp"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace egpu::planner {

double product_flops(const CallWork& call) {
  const double f = 2.0 * static_cast<double>(call.m) * static_cast<double>(call.n) * static_cast<double>(call.k);
  return call.scalar >= 2 ? 4.0 * f : f;
}

MachineRates default_rates() { return MachineRates(); }

namespace {

int clamp_scalar(int s) { return std::clamp(s, 0, 3); }

// Real flops of an N x N x N product of scalar index s.
double square_flops(double n, int s) { return (s >= 2 ? 8.0 : 2.0) * n * n * n; }

template <std::size_t K>
bool measured(const std::array<double, K>& t) {
  return std::all_of(t.begin(), t.end(), [](double x) { return x > 0; });
}

// The value at x of the curve through the points (xs, ys), xs increasing:
// between two points linear in x, or linear in log x and log y (`log_log`);
// below the first point ys[0] times x / xs[0] (`proportional`) or ys[0];
// beyond the last point its value plus (x - xs.back()) / rate.
template <std::size_t K>
double on_curve(const std::array<double, K>& xs, const std::array<double, K>& ys, double x, double rate,
                bool log_log, bool proportional) {
  if (x <= xs[0]) return proportional ? ys[0] * x / xs[0] : ys[0];
  if (x >= xs[K - 1]) return ys[K - 1] + (x - xs[K - 1]) / rate;
  std::size_t i = 1;
  while (xs[i] < x) ++i;
  if (log_log) {
    const double t = std::log(x / xs[i - 1]) / std::log(xs[i] / xs[i - 1]);
    return ys[i - 1] * std::pow(ys[i] / ys[i - 1], t);
  }
  return ys[i - 1] + (ys[i] - ys[i - 1]) * (x - xs[i - 1]) / (xs[i] - xs[i - 1]);
}

// CPU Eigen's product on the calibrated threads, from the measured times
// where there are (all of) them, else from the rate.
double cpu_product_seconds(const MachineRates& r, int s, double flops) {
  const auto& t = r.cpu_product_seconds[static_cast<std::size_t>(s)];
  if (!measured(t)) return (flops + r.cpu_gemm_half_flops[s]) / r.cpu_gemm_flops[s];
  std::array<double, MachineRates::kCpuTableSizes.size()> xs{};
  for (std::size_t i = 0; i < xs.size(); ++i) xs[i] = square_flops(MachineRates::kCpuTableSizes[i], s);
  return on_curve(xs, t, flops, r.cpu_gemm_flops[s], true, true);
}

// What a GPU call on host data costs beyond its device work, from the
// measured double products of the memory's kind where there are (all of)
// them; 0 bytes moved, or no table: -1.
double gpu_host_seconds(const MachineRates& r, const CallWork& call) {
  const double pageable = call.pageable_in + call.pageable_out, moved = pageable + call.pinned_in + call.pinned_out;
  const int kind = pageable > 0 ? 0 : 1;
  const auto& t = r.gpu_product_seconds[static_cast<std::size_t>(kind)];
  if (moved <= 0 || !measured(t)) return -1;
  std::array<double, MachineRates::kGpuTableSizes.size()> xs{}, ys{};
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const double n = MachineRates::kGpuTableSizes[i];
    xs[i] = 3 * n * n * 8;
    ys[i] = std::max(0.0, t[i] - square_flops(n, 1) / r.gpu_gemm_flops[1]);
  }
  return on_curve(xs, ys, moved, kind == 0 ? r.h2d_pageable : r.h2d_pinned, false, false);
}

double cpu_seconds(const MachineRates& r, const CallWork& call) {
  const int s = clamp_scalar(call.scalar);
  if (call.work == Work::product) {
    const double threads = std::clamp(static_cast<double>(call.cpu_threads), 1.0, static_cast<double>(r.cpu_threads));
    return cpu_product_seconds(r, s, product_flops(call)) * std::max(1, r.cpu_threads) / threads;
  }
  const double elements = static_cast<double>(call.m) * static_cast<double>(call.n);
  const double host_bytes = call.pageable_in + call.pinned_in + call.pageable_out + call.pinned_out;
  return elements * (call.cheap_ops * r.cpu_cheap_op_seconds + call.costly_ops * r.cpu_costly_op_seconds) +
         host_bytes / r.cpu_memory_bytes;
}

double gpu_seconds(const MachineRates& r, const CallWork& call) {
  const double device = call.work == Work::product ? product_flops(call) / r.gpu_gemm_flops[clamp_scalar(call.scalar)]
                                                   : call.device_bytes / r.gpu_memory_bytes;
  const double host = gpu_host_seconds(r, call);
  if (host >= 0) return host + device;
  const double transfers = call.pageable_in / r.h2d_pageable + call.pinned_in / r.h2d_pinned +
                           call.pageable_out / r.d2h_pageable + call.pinned_out / r.d2h_pinned;
  const double latency = std::max(call.pageable_in + call.pageable_out > 0 ? r.pageable_latency_seconds : 0.0,
                                  call.pinned_in + call.pinned_out > 0 ? r.pinned_latency_seconds : 0.0);
  return r.gpu_call_seconds + latency + transfers + device;
}

}  // namespace

CallCost estimate(const MachineRates& rates, const CallWork& call) {
  return CallCost{cpu_seconds(rates, call), gpu_seconds(rates, call)};
}

double gpu_min_flops(const MachineRates& r) {
  // The GPU takes at least its fixed cost. One CPU thread at an eighth of
  // its measured share of the rate (small products run below the rate the
  // calibration fits, never that far below) finishes fewer flops than
  // that many in less time.
  double least = 1e300;
  for (int s = 0; s < 4; ++s)
    least = std::min(least, r.gpu_call_seconds * r.cpu_gemm_flops[s] / std::max(1, r.cpu_threads) / 8);
  return least;
}

double gpu_min_elements(const MachineRates& r) {
  // The cheapest coefficient-wise call: one cheap operation on 4-byte
  // values, 8 bytes per element.
  return r.gpu_call_seconds / (r.cpu_cheap_op_seconds + 8.0 / r.cpu_memory_bytes);
}

// ---- the calibration file ---------------------------------------------------------

namespace {

struct Field {
  const char* key;
  double* value;
  double low, high;  // plausible range
};

std::vector<Field> fields(MachineRates& r) {
  std::vector<Field> f = {
      {"gpu_call_seconds", &r.gpu_call_seconds, 1e-7, 1.0},
      {"h2d_pinned_bytes_per_second", &r.h2d_pinned, 1e7, 1e13},
      {"d2h_pinned_bytes_per_second", &r.d2h_pinned, 1e7, 1e13},
      {"h2d_pageable_bytes_per_second", &r.h2d_pageable, 1e7, 1e13},
      {"d2h_pageable_bytes_per_second", &r.d2h_pageable, 1e7, 1e13},
      {"pinned_latency_seconds", &r.pinned_latency_seconds, 0.0, 1.0},
      {"pageable_latency_seconds", &r.pageable_latency_seconds, 0.0, 1.0},
      {"gpu_memory_bytes_per_second", &r.gpu_memory_bytes, 1e9, 1e14},
      {"cpu_memory_bytes_per_second", &r.cpu_memory_bytes, 1e7, 1e13},
      {"cpu_cheap_op_seconds", &r.cpu_cheap_op_seconds, 1e-13, 1e-6},
      {"cpu_costly_op_seconds", &r.cpu_costly_op_seconds, 1e-13, 1e-5},
  };
  static const char* const names[4] = {"f32", "f64", "c32", "c64"};
  static const auto keys = [] {
    std::array<std::array<std::string, 4>, 3> k;
    for (int s = 0; s < 4; ++s) {
      k[0][s] = std::string("gpu_gemm_flops_") + names[s];
      k[1][s] = std::string("cpu_gemm_flops_") + names[s];
      k[2][s] = std::string("cpu_gemm_half_flops_") + names[s];
    }
    return k;
  }();
  for (int s = 0; s < 4; ++s) {
    f.push_back({keys[0][s].c_str(), &r.gpu_gemm_flops[s], 1e9, 1e17});
    f.push_back({keys[1][s].c_str(), &r.cpu_gemm_flops[s], 1e7, 1e16});
    f.push_back({keys[2][s].c_str(), &r.cpu_gemm_half_flops[s], 0.0, 1e12});
  }
  // The measured times (0: not measured).
  static const auto table_keys = [] {
    std::vector<std::string> k;
    for (const char* kind : {"pageable", "pinned"})
      for (int n : MachineRates::kGpuTableSizes) k.push_back(std::string("gpu_product_seconds_") + kind + "_n" + std::to_string(n));
    for (int s = 0; s < 4; ++s)
      for (int n : MachineRates::kCpuTableSizes)
        k.push_back(std::string("cpu_product_seconds_") + names[s] + "_n" + std::to_string(n));
    return k;
  }();
  std::size_t key = 0;
  for (auto& kind : r.gpu_product_seconds)
    for (double& t : kind) f.push_back({table_keys[key++].c_str(), &t, 0.0, 1e3});
  for (auto& scalar : r.cpu_product_seconds)
    for (double& t : scalar) f.push_back({table_keys[key++].c_str(), &t, 0.0, 1e3});
  return f;
}

std::string trim(const std::string& s) {
  const auto first = s.find_first_not_of(" \t\r");
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(" \t\r") - first + 1);
}

}  // namespace

MachineRates parse_rates(const std::string& text, std::vector<std::string>& notices) {
  MachineRates r = default_rates();
  std::vector<Field> known = fields(r);
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    line = trim(line.substr(0, line.find('#')));
    if (line.empty()) continue;
    const auto eq = line.find('=');
    if (eq == std::string::npos) {
      notices.push_back("not `key = value`: " + line);
      continue;
    }
    const std::string key = trim(line.substr(0, eq)), value = trim(line.substr(eq + 1));
    if (key == "device") {
      r.device = value;
      continue;
    }
    char* end = nullptr;
    const double x = std::strtod(value.c_str(), &end);
    const bool number = !value.empty() && end != nullptr && *end == '\0' && std::isfinite(x);
    if (key == "cpu_threads") {
      if (number && x >= 1 && x <= 65536 && x == std::floor(x))
        r.cpu_threads = static_cast<int>(x);
      else
        notices.push_back("cpu_threads = " + value + " is not a thread count; using " + std::to_string(r.cpu_threads));
      continue;
    }
    const auto f = std::find_if(known.begin(), known.end(), [&](const Field& k) { return key == k.key; });
    if (f == known.end()) {
      notices.push_back("unknown key " + key);
      continue;
    }
    if (!number || x < f->low || x > f->high) {
      std::ostringstream why;
      why << key << " = " << value << " is outside [" << f->low << ", " << f->high << "]; using the default "
          << *f->value;
      notices.push_back(why.str());
      continue;
    }
    *f->value = x;
  }
  return r;
}

std::string format_rates(const MachineRates& rates) {
  MachineRates r = rates;
  std::ostringstream out;
  out << "# egpu calibration: the rates behind the CPU/GPU dispatch (egpu-bench calibrate)\n";
  out << "device = " << r.device << "\n";
  out << "cpu_threads = " << r.cpu_threads << "\n";
  out.precision(6);
  for (const Field& f : fields(r)) out << f.key << " = " << *f.value << "\n";
  return out.str();
}

}  // namespace egpu::planner

namespace egpu::planner {

std::string calibration_path(const char* explicit_path, const char* xdg_cache_home, const char* home) {
  auto set = [](const char* s) { return s != nullptr && *s != '\0'; };
  if (set(explicit_path)) return explicit_path;
  if (set(xdg_cache_home)) return std::string(xdg_cache_home) + "/egpu/calibration.txt";
  if (set(home)) return std::string(home) + "/.cache/egpu/calibration.txt";
  return "";
}

}  // namespace egpu::planner

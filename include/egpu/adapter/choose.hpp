// Where a call of egpu::gpu runs: the dispatch's gate, then the cost model
// (through the library) for the calls the gate leaves open, and CPU Eigen's
// side of a call the dispatch keeps on the CPU.
#pragma once

#include <Eigen/Core>

#include <complex>
#include <type_traits>

#include "egpu/detail/dispatch.hpp"
#include "egpu/device.hpp"

// A function the compiler must not inline into its callers: the large
// paths of a call, kept apart from the small path the dispatch's gate takes.
#if defined(_MSC_VER)
#define EGPU_NOINLINE __declspec(noinline)
#else
#define EGPU_NOINLINE __attribute__((noinline))
#endif

namespace egpu::detail {

// Real flops of an m x k times k x n product of Scalar.
template <class Scalar>
double product_flops(Eigen::Index m, Eigen::Index n, Eigen::Index k) {
  const double f = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  return Eigen::NumTraits<Scalar>::IsComplex ? 4.0 * f : f;
}

// The gate's answer for a call; calls on DeviceMatrix data (OnDevice) do
// not ask it. Work: the product's flops, or (flops 0) the coefficient-wise
// call's elements.
template <bool OnDevice>
Gate gate_for(const Options& options, double flops, double elements) {
  if constexpr (OnDevice) return Gate::undecided;
  else return gate(options, flops, elements);
}

// The decision for one call. OnDevice: the call reads or writes DeviceMatrix
// data, and runs on the GPU whenever there is one (without one, its data is
// host memory and CPU Eigen runs it). Otherwise the gate's answer `gated`
// (gate_for) decides, or `decide()` (the model) when it left the call open.
template <bool OnDevice, class Decide>
Decision choose(Gate gated, Decide&& decide) {
  if constexpr (OnDevice) {
    if (!has_device()) return Decision();
    if (dispatch_settings().verbose) return decide();  // for the log line ("device data": the GPU)
    Decision d;
    d.gpu = true;
    return d;
  } else {
    switch (gated) {
      case Gate::cpu:
        return Decision();
      case Gate::gpu: {
        Decision d;
        d.gpu = true;
        return d;
      }
      default:
        return decide();
    }
  }
}

// While one lives on a thread, Eigen products the dispatch meets there run
// on the CPU: the CPU side of a call evaluates its products with Eigen,
// which in transparent mode come back to the dispatch.
inline thread_local int t_cpu_scope = 0;
struct CpuScope {
  CpuScope() { ++t_cpu_scope; }
  ~CpuScope() { --t_cpu_scope; }
  CpuScope(const CpuScope&) = delete;
  CpuScope& operator=(const CpuScope&) = delete;
};
inline bool in_cpu_scope() { return t_cpu_scope > 0; }

}  // namespace egpu::detail

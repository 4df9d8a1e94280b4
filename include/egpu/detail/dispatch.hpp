// The CPU/GPU dispatch as the header-only adapter sees it: a cheap gate
// for calls that are surely the CPU's (or forced either way), the
// library's cost model for the rest, and the decision log of
// EGPU_VERBOSE=1. Nothing here knows Eigen or CUDA.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "egpu/detail/elementwise_program.hpp"
#include "egpu/detail/gemm_descriptor.hpp"
#include "egpu/options.hpp"

namespace egpu::detail {

// The process's dispatch settings, read once.
struct DispatchState {
  bool device = false;                // a usable GPU
  Where where = Where::automatic;     // EGPU_DISPATCH
  bool verbose = false;               // EGPU_VERBOSE: log every call
  double gpu_min_flops = 0;           // smaller products never pay on the GPU
  double gpu_min_elements = 0;        // smaller coefficient-wise calls never pay
};
const DispatchState& dispatch_state();

// dispatch_state() without a call into the library on every call of the
// caller's program (the gate runs on calls of a few nanoseconds).
inline const DispatchState& dispatch_settings() {
  static const DispatchState& s = dispatch_state();
  return s;
}

// Where one call runs, the model's two estimates (0 when the model was not
// asked), and whether the call is logged.
struct Decision {
  bool gpu = false;
  bool log = false;
  double cpu_seconds = 0, gpu_seconds = 0;
  std::string line;  // the call as logged
};

// The model's decision for a product of host matrices, and for a
// coefficient-wise expression or reduction of host leaves into `out` (for a
// reduction `out` describes nothing). `cpu_threads`: Eigen's thread count.
Decision decide_product(const GemmDesc& desc, const Options& options, int cpu_threads);
Decision decide_elementwise(const ElementwiseProgram& program, const MatrixDesc& out, ScalarKind out_scalar,
                            bool reduction, const Options& options);

// The decision of a call the gate settles without the model: where the
// options and EGPU_DISPATCH put it, or the CPU for a call below `work`'s
// threshold; `undecided` when the model must be asked.
enum class Gate : std::uint8_t { cpu, gpu, undecided };
inline Gate gate(const Options& options, double flops, double elements) {
  const DispatchState& s = dispatch_settings();
  if (s.verbose) return Gate::undecided;  // every call is logged, with the model's view
  if (!s.device) return Gate::cpu;
  const Where w = options.where == Where::automatic ? s.where : options.where;
  if (w != Where::automatic) return w == Where::gpu ? Gate::gpu : Gate::cpu;
  if (flops > 0 ? flops < s.gpu_min_flops : elements < s.gpu_min_elements) return Gate::cpu;
  return Gate::undecided;
}

// Writes the logged call's line (EGPU_VERBOSE) with its measured time.
void log_call(const Decision& decision, double seconds);

// Times a logged call from construction to destruction.
// The decision must outlive the CallLog.
class CallLog {
 public:
  explicit CallLog(const Decision& d) : m_decision(d) {
    if (d.log) m_start = std::chrono::steady_clock::now();
  }
  ~CallLog() {
    if (m_decision.log)
      log_call(m_decision, std::chrono::duration<double>(std::chrono::steady_clock::now() - m_start).count());
  }
  CallLog(const CallLog&) = delete;
  CallLog& operator=(const CallLog&) = delete;

 private:
  const Decision& m_decision;
  std::chrono::steady_clock::time_point m_start{};
};

}  // namespace egpu::detail

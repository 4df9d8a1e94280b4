// The CPU/GPU dispatch: the process's settings (EGPU_DISPATCH,
// EGPU_VERBOSE, the calibration file), the cost model's decision for each
// call on host data, and the decision log.
#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "egpu/detail/dispatch.hpp"
#include "egpu/device.hpp"
#include "planner/cost_model.hpp"
#include "runtime/device.hpp"
#include "runtime/device_select.hpp"
#include "runtime/pinning.hpp"

namespace egpu::detail {
namespace {

bool verbose_requested() { return runtime::quiet_requested(std::getenv("EGPU_VERBOSE")); }

void notice(const std::string& text) {
  if (runtime::quiet_requested(std::getenv("EGPU_QUIET"))) return;
  std::fprintf(stderr, "egpu: %s\n", text.c_str());
}

// This machine's rates: the calibration file when there is one for this
// device, else the cautious defaults (with a notice saying why).
planner::MachineRates load_rates() {
  const std::string path =
      planner::calibration_path(std::getenv("EGPU_CALIBRATION"), std::getenv("XDG_CACHE_HOME"), std::getenv("HOME"));
  const std::string fix = "; `egpu-bench calibrate` measures this machine. The dispatch uses cautious defaults";
  std::ifstream in(path);
  if (path.empty() || !in) {
    // Not an error: an uncalibrated machine. Said only when asked (EGPU_VERBOSE)
    // or when the file was named explicitly.
    if (verbose_requested() || std::getenv("EGPU_CALIBRATION") != nullptr)
      notice("no calibration file" + (path.empty() ? std::string() : " at " + path) + fix + ".");
    return planner::default_rates();
  }
  std::stringstream text;
  text << in.rdbuf();
  std::vector<std::string> notices;
  planner::MachineRates rates = planner::parse_rates(text.str(), notices);
  for (const std::string& n : notices) notice("calibration " + path + ": " + n);
  const std::string device = runtime::selected_device().name;
  if (rates.device != device) {
    notice("calibration " + path + " was measured on \"" + rates.device + "\", not on \"" + device + "\"" + fix +
           " for it.");
    return planner::default_rates();
  }
  return rates;
}

const planner::MachineRates& rates() {
  static const planner::MachineRates r = load_rates();
  return r;
}

DispatchState read_state() {
  DispatchState s;
  s.where = runtime::parse_dispatch_request(std::getenv("EGPU_DISPATCH"));
  s.verbose = verbose_requested();
  s.device = has_device();
  if (s.device && s.where == Where::automatic) {
    s.gpu_min_flops = planner::gpu_min_flops(rates());
    s.gpu_min_elements = planner::gpu_min_elements(rates());
  }
  return s;
}

int scalar_index(ScalarKind s) { return static_cast<int>(s); }
const char* scalar_name(ScalarKind s) {
  static const char* const names[] = {"f32", "f64", "c32", "c64"};
  return names[scalar_index(s)];
}

// The first and last element a description touches.
struct Span {
  const void* first = nullptr;
  const void* last = nullptr;
};
Span span_of(const MatrixDesc& d, std::int64_t elem) {
  std::int64_t lo = 0, hi = 0;
  for (std::int64_t corner : {(d.rows - 1) * d.row_stride, (d.cols - 1) * d.col_stride,
                              (d.rows - 1) * d.row_stride + (d.cols - 1) * d.col_stride}) {
    lo = std::min(lo, corner);
    hi = std::max(hi, corner);
  }
  const char* base = static_cast<const char*>(d.data);
  return {base + lo * elem, base + hi * elem + elem - 1};
}

// One piece of host memory the call moves.
struct Traffic {
  const MatrixDesc* desc;
  double bytes;
  bool in;  // read (uploaded) or written (downloaded)
  ScalarKind scalar;
};

// A call's pieces, without allocating (the decision is on every call's
// path): beyond the first eight, pieces count as pageable unseen.
struct TrafficList {
  static constexpr int kMax = 8;
  std::array<Traffic, kMax> items{};
  int count = 0;
  double unseen_in = 0, unseen_out = 0;
  void add(const Traffic& t) {
    if (count < kMax)
      items[static_cast<std::size_t>(count++)] = t;
    else
      (t.in ? unseen_in : unseen_out) += t.bytes;
  }
};

const char* where_text(Where w) { return w == Where::gpu ? "gpu" : w == Where::cpu ? "cpu" : "auto"; }

// Decides with the model: the traffic's bytes go to the pinned or the
// pageable side of the call as their memory is. The memory is looked at
// only when that can change the answer (or the call is logged).
Decision model_decision(planner::CallWork work, const TrafficList& traffic, bool log, std::string* memory_text) {
  work.pageable_in += traffic.unseen_in;
  work.pageable_out += traffic.unseen_out;
  std::array<bool, TrafficList::kMax> pinned{};
  auto with = [&](int pinned_mode /* 0 pageable, 1 pinned, 2 as it is */) {
    planner::CallWork w = work;
    for (int i = 0; i < traffic.count; ++i) {
      const Traffic& t = traffic.items[static_cast<std::size_t>(i)];
      const bool p = pinned_mode == 2 ? pinned[static_cast<std::size_t>(i)] : pinned_mode == 1;
      (t.in ? (p ? w.pinned_in : w.pageable_in) : (p ? w.pinned_out : w.pageable_out)) += t.bytes;
    }
    return planner::estimate(rates(), w);
  };
  planner::CallCost cost = with(0);
  if (log || cost.gpu() != with(1).gpu()) {
    for (int i = 0; i < traffic.count; ++i) {
      const Traffic& t = traffic.items[static_cast<std::size_t>(i)];
      if (t.desc->data != nullptr) {
        const Span s = span_of(*t.desc, scalar_size(t.scalar));
        pinned[static_cast<std::size_t>(i)] = runtime::is_pinned_range(s.first, s.last);
      }
      if (memory_text != nullptr) {
        *memory_text += i == 0 ? "" : ",";
        *memory_text += pinned[static_cast<std::size_t>(i)] ? "pinned" : "pageable";
      }
    }
    cost = with(2);
  }
  Decision d;
  d.gpu = cost.gpu();
  d.cpu_seconds = cost.cpu_seconds;
  d.gpu_seconds = cost.gpu_seconds;
  return d;
}

// The decision for a call on host data whose work and traffic are known.
Decision decide(const planner::CallWork& work, const TrafficList& traffic, bool touches_device,
                const Options& options, const std::string& what) {
  const DispatchState& s = dispatch_state();
  const Where w = options.where == Where::automatic ? s.where : options.where;
  Decision d;
  d.log = s.verbose;
  std::string memory;
  std::string why;
  if (!s.device) {
    why = "no GPU";
  } else if (touches_device) {
    d.gpu = true;
    why = "device data";
  } else if (w != Where::automatic) {
    d.gpu = w == Where::gpu;
    why = std::string("where=") + where_text(w);
  }
  if (why.empty() || (d.log && s.device && !touches_device)) {
    const Decision m = model_decision(work, traffic, d.log, d.log ? &memory : nullptr);
    d.cpu_seconds = m.cpu_seconds;
    d.gpu_seconds = m.gpu_seconds;
    if (why.empty()) {
      d.gpu = m.gpu;
      why = "model";
    }
  }
  if (d.log) {
    std::ostringstream line;
    line.precision(3);
    line << "egpu: " << what << " host memory [" << (memory.empty() ? "-" : memory) << "] -> "
         << (d.gpu ? "gpu" : "cpu") << " (" << why;
    if (d.cpu_seconds > 0 || d.gpu_seconds > 0)
      line << (why == "model" ? ": " : "; model: ") << "cpu " << d.cpu_seconds * 1e3 << " ms, gpu "
           << d.gpu_seconds * 1e3 << " ms";
    line << ")";
    d.line = line.str();
  }
  return d;
}

bool on_device_desc(const MatrixDesc& d) { return d.on_device; }

int elementwise_cost(EwOp op) {
  switch (op) {
    case EwOp::load:
    case EwOp::constant:
      return 0;
    case EwOp::exp: case EwOp::expm1: case EwOp::log: case EwOp::log1p: case EwOp::log10:
    case EwOp::sin: case EwOp::cos: case EwOp::tan: case EwOp::asin: case EwOp::acos: case EwOp::atan:
    case EwOp::sinh: case EwOp::cosh: case EwOp::tanh: case EwOp::pow: case EwOp::arg:
      return 2;
    default:
      return 1;
  }
}

}  // namespace

const DispatchState& dispatch_state() {
  static const DispatchState s = read_state();
  return s;
}

Decision decide_product(const GemmDesc& desc, const Options& options, int cpu_threads) {
  planner::CallWork work;
  work.work = planner::Work::product;
  work.scalar = scalar_index(desc.scalar);
  work.m = desc.m;
  work.n = desc.n;
  work.k = desc.k;
  work.cpu_threads = cpu_threads;
  const double elem = static_cast<double>(scalar_size(desc.scalar));
  TrafficList traffic;
  auto add = [&](const MatrixDesc& m, bool in) {
    if (!m.on_device)  // (no data yet: a temporary of the call, pageable)
      traffic.add({&m, static_cast<double>(m.rows) * static_cast<double>(m.cols) * elem, in, desc.scalar});
  };
  add(desc.a, true);
  add(desc.b, true);
  if (!desc.beta_is_zero) add(desc.c, true);
  add(desc.c, false);
  const bool device = on_device_desc(desc.a) || on_device_desc(desc.b) || on_device_desc(desc.c);
  std::string what;
  if (dispatch_state().verbose) {
    std::ostringstream s;
    s << "product " << scalar_name(desc.scalar) << " " << desc.m << "x" << desc.k << " * " << desc.k << "x" << desc.n
      << (desc.beta_is_zero ? "" : " (accumulating)");
    what = s.str();
  }
  return decide(work, traffic, device, options, what);
}

Decision decide_elementwise(const ElementwiseProgram& program, const MatrixDesc& out, ScalarKind out_scalar,
                            bool reduction, const Options& options) {
  planner::CallWork work;
  work.work = reduction ? planner::Work::reduction : planner::Work::elementwise;
  work.scalar = scalar_index(out_scalar);
  work.m = program.rows;
  work.n = program.cols;
  for (const EwInstr& in : program.code) (elementwise_cost(in.op) == 2 ? work.costly_ops : work.cheap_ops) +=
                                         elementwise_cost(in.op) > 0;
  TrafficList traffic;
  bool device = false;
  for (const EwLeaf& leaf : program.leaves) {
    device = device || leaf.m.on_device;
    const double elements = static_cast<double>(leaf.m.row_stride == 0 ? 1 : leaf.m.rows) *
                            static_cast<double>(leaf.m.col_stride == 0 ? 1 : leaf.m.cols);
    const double bytes = elements * static_cast<double>(scalar_size(leaf.scalar));
    work.device_bytes += bytes;
    if (!leaf.m.on_device) traffic.add({&leaf.m, bytes, true, leaf.scalar});
  }
  if (!reduction) {
    device = device || out.on_device;
    const double bytes = static_cast<double>(out.rows) * static_cast<double>(out.cols) *
                         static_cast<double>(scalar_size(out_scalar));
    work.device_bytes += bytes;
    if (!out.on_device) traffic.add({&out, bytes, false, out_scalar});
  }
  std::string what;
  if (dispatch_state().verbose) {
    std::ostringstream s;
    s << (reduction ? "reduction " : "coefficient-wise ") << scalar_name(out_scalar) << " " << program.rows << "x"
      << program.cols << " (" << program.leaves.size() << " leaves, " << work.cheap_ops + work.costly_ops << " ops)";
    what = s.str();
  }
  return decide(work, traffic, device, options, what);
}

void log_call(const Decision& decision, double seconds) {
  std::fprintf(stderr, "%s took %.3f ms\n", decision.line.c_str(), seconds * 1e3);
}

}  // namespace egpu::detail

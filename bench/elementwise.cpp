// egpu-bench elementwise: fused coefficient-wise expressions on
// device-resident data, egpu's generated kernel (egpu::backend::
// device_elementwise, the program the adapter describes from Eigen Maps of
// device memory) against a hand-written nvcc kernel of the same expression,
// CUB's DeviceTransform, Eigen's Tensor module on Eigen::GpuDevice
// (TensorMaps of the same memory) and the device-to-device copy of the same
// run.
//
// Timing: events around each call on one stream, the systems in turn
// call by call, `--warmups` untimed calls first, median of `--repeats`.
// Effective bandwidth: the bytes the expression must read and write once
// (each distinct operand read once, the result written once) over the time;
// "of copy" divides it by the rate of cudaMemcpyAsync device to device of
// n elements of the scalar in the same turn (its bytes read + written).
// "first call": the wall time of the first call of each expression, which
// compiles its kernel with NVRTC (unless EGPU_CACHE_DIR holds it); "enqueue":
// the host's time to queue a call whose kernel is compiled (median of 50).
// "max diff": the largest difference between egpu's and the hand-written
// kernel's results over the whole output, relative to max(|hand|, 1) (NaN
// where only one of them is NaN).
#include <egpu/device.hpp>

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "backend/device_elementwise.hpp"
#include "bench_common.hpp"
#include "egpu/adapter/elementwise_parts.hpp"
#include "elementwise_baselines.hpp"
#include "gpu_util.hpp"
#include "tensor_baseline.hpp"
#include "host_data.hpp"
#include "runtime/context.hpp"
#include "runtime/runtime_kernels.hpp"
#include "subcommands.hpp"

namespace egpu_bench {
namespace {

namespace ed = egpu::detail;

const char* const kUsage =
    "usage: egpu-bench elementwise [options]\n"
    "  --log2-sizes L,L,...  elements as powers of two (default 24,28)\n"
    "  --scalars S,S,...     f32, f64 (default both)\n"
    "  --expressions E,...   a*b+c, a*b+exp(a), select, cast, tanh(a)*sin(b)+pow(a,2.5)\n"
    "                        (default all; select is (a > 0).select(a, 0.1 * a), cast is\n"
    "                        a.cast<the other real type>())\n"
    "  --repeats R           timed runs per system, median reported (default 7)\n"
    "  --warmups W           untimed runs first (default 2)\n"
    "  --csv FILE | --csv-dir DIR | --no-csv\n"
    "(host-resident operands: egpu-bench elementwise-host)\n";

const std::vector<std::string> kExpressions = {"a*b+c", "a*b+exp(a)", "select", "cast", "tanh(a)*sin(b)+pow(a,2.5)"};

struct Settings {
  std::vector<long> log2_sizes;
  std::vector<std::string> scalars, expressions;
  int repeats = 7, warmups = 2;
};

struct Row {
  std::string scalar, expression;
  long log2_n = 0;
  double egpu_s = 0, hand_s = 0, cub_s = 0, tensor_s = 0, copy_s = 0, bytes = 0, first_call_s = 0, enqueue_us = 0, max_diff = 0;
  bool compiled = false;
};

template <class T> using Map = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, Eigen::Dynamic>>;

// The program of expression `name` over device arrays a, b, c (rows x cols).
template <class T>
ed::ElementwiseProgram program_of(const std::string& name, const T* a, const T* b, const T* c, Eigen::Index rows,
                                  Eigen::Index cols, std::vector<std::shared_ptr<void>>& keep) {
  const Map<T> A(a, rows, cols), B(b, rows, cols), C(c, rows, cols);
  using Other = std::conditional_t<std::is_same_v<T, float>, double, float>;
  if (name == "a*b+c") return ed::describe_elementwise(A * B + C, keep);
  if (name == "a*b+exp(a)") return ed::describe_elementwise(A * B + A.exp(), keep);
  if (name == "select") return ed::describe_elementwise((A > T(0)).select(A, T(0.1) * A), keep);
  if (name == "cast") return ed::describe_elementwise(A.template cast<Other>(), keep);
  if (name == "tanh(a)*sin(b)+pow(a,2.5)") return ed::describe_elementwise(A.tanh() * B.sin() + A.pow(T(2.5)), keep);
  throw std::invalid_argument("unknown expression " + name);
}

// Distinct operands the expression reads.
int operands_read(const std::string& name) {
  return name == "a*b+c" ? 3 : name == "select" || name == "cast" ? 1 : 2;
}

template <class T>
Row run_case(const std::string& scalar, const std::string& expression, long log2_n, const Settings& s) {
  using Other = std::conditional_t<std::is_same_v<T, float>, double, float>;
  const bool cast = expression == "cast";
  const std::size_t n = std::size_t(1) << log2_n;
  const Eigen::Index rows = std::min<Eigen::Index>(Eigen::Index(n), 4096), cols = Eigen::Index(n) / rows;
  egpu::runtime::Context& ctx = egpu::runtime::thread_context();
  cudaStream_t stream = ctx.stream(0);
  const std::size_t out_size = cast ? sizeof(Other) : sizeof(T);
  gpu::DeviceMemory a(n * sizeof(T), stream), b(n * sizeof(T), stream), c(n * sizeof(T), stream),
      ours(n * out_size, stream), hand(n * out_size, stream), copy(n * sizeof(T), stream);
  auto* pa = static_cast<T*>(a.p);
  auto* pb = static_cast<T*>(b.p);
  auto* pc = static_cast<T*>(c.p);
  gpu::fill_uniform(pa, n, 1, stream);
  gpu::fill_uniform(pb, n, 2, stream);
  gpu::fill_uniform(pc, n, 3, stream);

  std::vector<std::shared_ptr<void>> keep;
  const ed::ElementwiseProgram program = program_of<T>(expression, pa, pb, pc, rows, cols, keep);
  ed::validate(program);  // what the library's entries do before a launch
  ed::MatrixDesc out;
  out.data = ours.p;
  out.rows = rows;
  out.cols = cols;
  out.col_stride = rows;
  const ed::ScalarKind out_kind = cast ? ed::scalar_kind_of<Other>::value : ed::scalar_kind_of<T>::value;
  auto run_egpu = [&] { egpu::backend::device_elementwise(program, out, out_kind, ctx, stream); };
  auto run_hand = [&] {
    if (cast)
      gpu::hand_written_cast(pa, static_cast<Other*>(hand.p), n, stream);
    else
      gpu::hand_written(expression, pa, pb, pc, static_cast<T*>(hand.p), n, stream);
  };
  auto run_cub = [&] {
    if (cast)
      gpu::cub_transform_cast(pa, static_cast<Other*>(hand.p), n, stream);
    else
      gpu::cub_transform(expression, pa, pb, pc, static_cast<T*>(hand.p), n, stream);
  };
  gpu::EigenTensor tensor(stream);
  auto run_tensor = [&] {
    if (cast)
      tensor.cast(pa, static_cast<Other*>(hand.p), n);
    else
      tensor.elementwise(expression, pa, pb, pc, static_cast<T*>(hand.p), n);
  };
  auto run_copy = [&] {
    gpu::check(cudaMemcpyAsync(copy.p, a.p, n * sizeof(T), cudaMemcpyDeviceToDevice, stream), "copy");
  };

  Row row;
  row.scalar = scalar;
  row.expression = expression;
  row.log2_n = log2_n;
  gpu::check(cudaStreamSynchronize(stream), "fill");
  const long compiled_before = egpu::runtime::runtime_kernel_stats().compiled;
  double t0 = now_seconds();
  run_egpu();
  gpu::check(cudaStreamSynchronize(stream), "first call");
  row.first_call_s = now_seconds() - t0;
  row.compiled = egpu::runtime::runtime_kernel_stats().compiled > compiled_before;

  const auto seconds =
      gpu::time_in_turn(stream, s.warmups, s.repeats, {run_copy, run_egpu, run_hand, run_cub, run_tensor});
  row.copy_s = median(seconds[0]);
  row.egpu_s = median(seconds[1]);
  row.hand_s = median(seconds[2]);
  row.cub_s = median(seconds[3]);
  row.tensor_s = median(seconds[4]);
  row.bytes = double(n) * (double(operands_read(expression)) * sizeof(T) + double(out_size));

  std::vector<double> enqueue;
  for (int i = 0; i < 50; ++i) {
    t0 = now_seconds();
    run_egpu();
    enqueue.push_back(now_seconds() - t0);
    gpu::check(cudaStreamSynchronize(stream), "enqueue timing");
  }
  row.enqueue_us = 1e6 * median(enqueue);

  run_hand();  // the hand-written kernel's result again (CUB and Tensor wrote the same buffer)
  gpu::check(cudaStreamSynchronize(stream), "hand-written kernel");
  auto compare = [&](auto* zero) {
    using U = std::remove_pointer_t<decltype(zero)>;
    std::vector<U> x(n), y(n);
    gpu::check(cudaMemcpy(x.data(), ours.p, n * sizeof(U), cudaMemcpyDeviceToHost), "download");
    gpu::check(cudaMemcpy(y.data(), hand.p, n * sizeof(U), cudaMemcpyDeviceToHost), "download");
    return max_difference(x.data(), y.data(), n);
  };
  row.max_diff = cast ? compare(static_cast<Other*>(nullptr)) : compare(static_cast<T*>(nullptr));
  return row;
}

}  // namespace

int run_elementwise(int argc, char** argv) {
  Args args(argc, argv);
  if (print_help(args, kUsage, false)) return 0;
  Settings s;
  s.log2_sizes = args.integers("log2-sizes", {24, 28});
  s.scalars = args.words("scalars", {"f32", "f64"});
  s.expressions = args.words("expressions", kExpressions);
  s.repeats = static_cast<int>(args.integer("repeats", 7));
  s.warmups = static_cast<int>(args.integer("warmups", 2));
  check_choices(s.scalars, {"f32", "f64"}, "--scalars");
  check_choices(s.expressions, kExpressions, "--expressions");
  for (long l : s.log2_sizes)
    if (l < 12 || l > 31) throw std::invalid_argument("--log2-sizes: 12 to 31");
  const CsvChoice csv_choice = parse_csv_options(args);
  args.finish();

  const RunInfo info = gather_run_info(0);
  std::printf("egpu-bench elementwise: device %s, commit %s, %s\n", info.device.c_str(), info.commit.c_str(),
              info.date.c_str());
  std::printf("device-resident; events per call, copy / egpu / hand-written / CUB / Eigen Tensor in turn, median of %d "
              "after %d warm-up(s)\n",
              s.repeats, s.warmups);
  if (!egpu::has_device()) {
    std::printf("NO USABLE GPU: egpu-bench elementwise measures device-resident expressions; SKIPPED\n");
    return 0;
  }
  std::fflush(stdout);
  const std::unique_ptr<Csv> csv =
      open_csv(csv_choice, "elementwise", info,
               {"date", "device", "commit", "scalar", "expression", "elements", "egpu_seconds", "hand_seconds",
                "cub_seconds", "tensor_seconds", "copy_seconds", "bytes", "egpu_gbps", "copy_gbps", "egpu_of_copy",
                "egpu_of_hand", "cub_of_copy", "tensor_of_copy", "first_call_seconds", "compiled", "enqueue_us",
                "max_diff", "repeats"});
  Table table({"scalar", "expression", "elements", "egpu ms", "egpu GB/s", "copy GB/s", "egpu/copy", "CUB/copy",
               "Tensor/copy", "egpu/hand", "first call ms", "enqueue us", "max diff"});
  for (const std::string& scalar : s.scalars)
    for (long log2_n : s.log2_sizes)
      for (const std::string& expression : s.expressions) {
        const Row r = scalar == "f32" ? run_case<float>(scalar, expression, log2_n, s)
                                      : run_case<double>(scalar, expression, log2_n, s);
        const double egpu_rate = r.bytes / r.egpu_s;
        const double elem = scalar == "f32" ? 4 : 8;
        const double copy_gbps = 2.0 * double(std::size_t(1) << log2_n) * elem / r.copy_s;
        const std::string first = format("%.1f%s", 1e3 * r.first_call_s, r.compiled ? " (compiled)" : "");
        const double cub_of_copy = r.bytes / r.cub_s / copy_gbps, tensor_of_copy = r.bytes / r.tensor_s / copy_gbps;
        table.add({r.scalar, r.expression, format("2^%ld", r.log2_n), format("%.3f", 1e3 * r.egpu_s),
                   format("%.0f", egpu_rate / 1e9), format("%.0f", copy_gbps / 1e9),
                   format("%.3f", egpu_rate / copy_gbps), format("%.3f", cub_of_copy), format("%.3f", tensor_of_copy),
                   format("%.3f", r.hand_s / r.egpu_s), first, format("%.1f", r.enqueue_us),
                   format("%.1e", r.max_diff)});
        if (csv)
          csv->add({info.date, info.device, info.commit, r.scalar, r.expression, format("%ld", 1L << r.log2_n),
                    format("%.6g", r.egpu_s), format("%.6g", r.hand_s), format("%.6g", r.cub_s),
                    format("%.6g", r.tensor_s), format("%.6g", r.copy_s), format("%.0f", r.bytes),
                    format("%.1f", egpu_rate / 1e9), format("%.1f", copy_gbps / 1e9),
                    format("%.4f", egpu_rate / copy_gbps), format("%.4f", r.hand_s / r.egpu_s),
                    format("%.4f", cub_of_copy), format("%.4f", tensor_of_copy),
                    format("%.4f", r.first_call_s), r.compiled ? "1" : "0", format("%.2f", r.enqueue_us),
                    format("%.2e", r.max_diff), std::to_string(s.repeats)});
        std::fflush(stdout);
      }
  std::printf("\n");
  table.print(stdout, Table::Style::markdown);
  if (csv) std::printf("\nCSV: %s\n", csv->path().c_str());
  return 0;
}

}  // namespace egpu_bench

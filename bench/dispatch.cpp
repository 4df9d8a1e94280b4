// egpu-bench dispatch: egpu's automatic CPU/GPU choice (Options::where =
// automatic) against both of its sides, timed side by side in one run:
//
//   products          C.noalias() = A * B, square N, host matrices (pageable
//                     or pinned): CPU Eigen on every core; egpu forced to the
//                     GPU (where = gpu); egpu automatic. ratio = automatic /
//                     min(CPU, GPU): 1.0 is the better side's time.
//   coefficient-wise  c = a * b + exp(a) on arrays of 1 to 2^27 elements:
//                     CPU Eigen (one thread, Eigen's own); forced; automatic.
//
// Each row says where the automatic call went (the library's count of GPU
// products, or the decision log's side for coefficient-wise calls) and what
// the model expected of each side. Run `egpu-bench calibrate` first on the
// machine: the model's rates come from it. EGPU_DISPATCH must be unset.
#include <egpu/egpu.hpp>
#include <egpu/detail/testing.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "host_data.hpp"
#include "subcommands.hpp"

namespace egpu_bench {
namespace {

const char* const kUsage =
    "usage: egpu-bench dispatch [options]\n"
    "  --parts P,P         products, elementwise (default both)\n"
    "  --sizes N,N,...     product sizes (default 2,8,32,64,128,256,512,1024,2048,4096,8192,16384)\n"
    "  --log2-elements L,L coefficient-wise sizes as powers of two (default 0,4,8,...,24,27)\n"
    "  --scalars S,S       f32, f64 (default both)\n"
    "  --memory M,M        pageable, pinned (default pageable,pinned)\n"
    "  --threads T         CPU Eigen's threads (default 0: all cores)\n"
    "  --repeats R         timed runs, median reported (default 5; 3 above N=4096)\n"
    "  --csv FILE | --csv-dir DIR | --no-csv\n";

egpu::Options where(egpu::Where w) {
  egpu::Options o;
  o.where = w;
  return o;
}

struct Row {
  std::string part, scalar, memory;
  double size = 0;  // N or elements
  double cpu = 0, gpu = 0, automatic = 0;
  std::string went;
};

Row new_row(const char* part, const std::string& scalar, bool pinned, double size) {
  Row row;
  row.part = part;
  row.scalar = scalar;
  row.memory = pinned ? "pinned" : "pageable";
  row.size = size;
  return row;
}

// Median wall time of f: more repeats for short calls (the small sizes are
// tens of nanoseconds), at least `repeats`.
double timed(const std::function<void()>& f, int repeats) {
  const double once = median(time_calls(f, 1, 1));
  const int more = once < 1e-3 ? static_cast<int>(std::min(2e5, 2e-2 / std::max(once, 1e-8))) : 1;
  if (more > 1) {
    // Batches of `more` calls, the median batch divided by its length.
    std::vector<double> batches = time_calls(
        [&] {
          for (int i = 0; i < more; ++i) f();
        },
        1, repeats);
    return median(batches) / more;
  }
  return median(time_calls(f, 0, repeats));
}

// Random a and b; a, b and c page-locked when `pinned` (for the guards' life).
template <class X>
std::vector<egpu::PinGuard> operands(bool pinned, X& a, X& b, X& c) {
  fill_random(a, 1);
  fill_random(b, 2);
  std::string error;
  std::vector<egpu::PinGuard> guards;
  if (pinned) guards = pin_all(error, a, b, c);
  if (!error.empty()) throw std::runtime_error(error);
  return guards;
}

template <class S>
Row product_row(long n, const std::string& scalar, bool pinned, int repeats) {
  using M = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic>;
  M a(n, n), b(n, n), c(n, n);
  const std::vector<egpu::PinGuard> guards = operands(pinned, a, b, c);
  const int r = n > 4096 ? std::min(repeats, 3) : repeats;
  Row row = new_row("product", scalar, pinned, double(n));
  row.cpu = timed([&] { c.noalias() = a * b; }, r);
  row.gpu = timed([&] { c.noalias() = egpu::gpu(a * b, where(egpu::Where::gpu)); }, r);
  const std::size_t before = egpu::detail::products_run_on_gpu();
  c.noalias() = egpu::gpu(a * b);
  row.went = egpu::detail::products_run_on_gpu() > before ? "gpu" : "cpu";
  row.automatic = timed([&] { c.noalias() = egpu::gpu(a * b); }, r);
  return row;
}

template <class S>
Row elementwise_row(long log2, const std::string& scalar, bool pinned, int repeats) {
  using A = Eigen::Array<S, Eigen::Dynamic, 1>;
  const Eigen::Index n = Eigen::Index(1) << log2;
  A a(n), b(n), c(n);
  const std::vector<egpu::PinGuard> guards = operands(pinned, a, b, c);
  Row row = new_row("elementwise", scalar, pinned, double(n));
  row.cpu = timed([&] { c = a * b + a.exp(); }, repeats);
  row.gpu = timed([&] { c = egpu::gpu(a * b + a.exp(), where(egpu::Where::gpu)); }, repeats);
  row.automatic = timed([&] { c = egpu::gpu(a * b + a.exp()); }, repeats);
  // Which side: the automatic time against the two (the log says it exactly).
  row.went = std::abs(row.automatic - row.gpu) < std::abs(row.automatic - row.cpu) ? "gpu?" : "cpu?";
  return row;
}

}  // namespace

int run_dispatch(int argc, char** argv) {
  Args args(argc, argv);
  if (print_help(args, kUsage, false)) return 0;
  const std::vector<std::string> parts = args.words("parts", {"products", "elementwise"});
  const std::vector<long> sizes =
      args.integers("sizes", {2, 8, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384});
  const std::vector<long> log2s = args.integers("log2-elements", {0, 4, 8, 12, 16, 20, 24, 27});
  const std::vector<std::string> scalars = args.words("scalars", {"f32", "f64"});
  const std::vector<std::string> memory = args.words("memory", {"pageable", "pinned"});
  const long threads = args.integer("threads", 0);
  const int repeats = static_cast<int>(args.integer("repeats", 5));
  const CsvChoice csv_choice = parse_csv_options(args);
  args.finish();
  check_choices(parts, {"products", "elementwise"}, "--parts");
  check_choices(scalars, {"f32", "f64"}, "--scalars");
  check_choices(memory, {"pageable", "pinned"}, "--memory");
  check_sizes(sizes);
  if (std::getenv("EGPU_DISPATCH") != nullptr && *std::getenv("EGPU_DISPATCH") != '\0')
    throw std::invalid_argument("EGPU_DISPATCH is set: the automatic choice is what this measures");

  const RunInfo info = gather_run_info(static_cast<int>(threads));
  std::printf("egpu-bench dispatch: %s, commit %s, %s, CPU Eigen on %d threads; median of %d\n",
              info.device.c_str(), info.commit.c_str(), info.date.c_str(), info.cpu_threads, repeats);
  std::vector<Row> rows;
  for (const std::string& part : parts)
    for (const std::string& mem : memory)
      for (const std::string& s : scalars) {
        const bool pinned = mem == "pinned";
        if (part == "products") {
          for (long n : sizes) {
            rows.push_back(s == "f32" ? product_row<float>(n, s, pinned, repeats)
                                      : product_row<double>(n, s, pinned, repeats));
            const Row& r = rows.back();
            std::fprintf(stderr, "  product %s %s N=%ld: cpu %.3g s, gpu %.3g s, auto %.3g s (%s)\n", s.c_str(),
                         mem.c_str(), n, r.cpu, r.gpu, r.automatic, r.went.c_str());
          }
        } else {
          for (long l : log2s) {
            rows.push_back(s == "f32" ? elementwise_row<float>(l, s, pinned, repeats)
                                      : elementwise_row<double>(l, s, pinned, repeats));
          }
        }
      }

  Table table({"part", "scalar", "memory", "size", "CPU Eigen s", "GPU s", "auto s", "auto went", "auto / best"});
  auto csv = open_csv(csv_choice, "dispatch", info,
                      {"date", "device", "commit", "cpu_threads", "part", "scalar", "memory", "size", "cpu_s", "gpu_s",
                       "auto_s", "auto_went", "auto_over_best"});
  double worst = 0;
  for (const Row& r : rows) {
    const double ratio = r.automatic / std::min(r.cpu, r.gpu);
    worst = std::max(worst, ratio);
    table.add({r.part, r.scalar, r.memory, format("%.0f", r.size), format("%.3g", r.cpu), format("%.3g", r.gpu),
               format("%.3g", r.automatic), r.went, format("%.2f", ratio)});
    if (csv)
      csv->add({info.date, info.device, info.commit, std::to_string(info.cpu_threads), r.part, r.scalar, r.memory,
                format("%.0f", r.size), format("%.6g", r.cpu), format("%.6g", r.gpu), format("%.6g", r.automatic),
                r.went, format("%.4f", ratio)});
  }
  table.print(stdout, Table::Style::markdown);
  std::printf("worst auto / best: %.2f\n", worst);
  if (csv) std::printf("CSV: %s\n", csv->path().c_str());
  return 0;
}

}  // namespace egpu_bench

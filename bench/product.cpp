// egpu-bench product: square products C.noalias() = A * B on host-resident
// Eigen matrices, timed wall-clock over the whole call (what a user sees):
//   cpu-eigen    C.noalias() = A * B               (Eigen, all cores via OpenMP)
//   egpu-own     C.noalias() = egpu::gpu(A * B)    (the library's own kernel)
//   egpu-cublas  C.noalias() = egpu::gpu(A * B, opt) with Backend::cublas
// Each GPU result is checked against CPU Eigen's (relative Frobenius error).
#include <egpu/egpu.hpp>

#include <cmath>
#include <complex>
#include <cstdio>
#include <exception>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "subcommands.hpp"

namespace egpu_bench {
namespace {

const char* const kUsage =
    "usage: egpu-bench product [options]\n"
    "  --sizes N,N,...       square sizes (default 256,512,1024,2048,4096,8192)\n"
    "  --scalars S,S,...     f32, f64, c32, c64 (default f32,f64)\n"
    "  --systems S,S,...     egpu-own, egpu-cublas (default both; cpu-eigen always runs: it is the reference)\n"
    "  --repeats R           timed runs per case, median reported (default 3)\n"
    "  --warmups W           untimed runs first (default 1)\n"
    "  --cpu-full-max N      above this size CPU Eigen runs once, without warm-up (default 4096)\n"
    "  --threads T           CPU Eigen threads (default: all cores)\n"
    "  --csv FILE            CSV output (default bench/results/product-<date>-<device>.csv in the\n"
    "                        source tree, else ./; rows are appended)\n"
    "  --csv-dir DIR         default CSV name, in DIR\n"
    "  --no-csv              table only\n";

struct Settings {
  std::vector<long> sizes;
  std::vector<std::string> scalars, systems;
  int repeats = 3, warmups = 1;
  long cpu_full_max = 4096;
};

struct Measurement {
  std::string system;
  double seconds = 0;       // median
  int runs = 0;             // timed runs behind the median
  double rel_error = -1;    // < 0: the reference itself
  bool failed = false;      // threw or gave a wrong answer
  std::string note;
};

// Two correct products differ by rounding that grows about like sqrt(k);
// anything far above that is a wrong answer, not rounding.
template <class Scalar>
double tolerance(long k) {
  using Real = typename Eigen::NumTraits<Scalar>::Real;
  return 50.0 * static_cast<double>(std::numeric_limits<Real>::epsilon()) * std::sqrt(static_cast<double>(k));
}

template <class Scalar>
std::vector<Measurement> run_case(long n, const Settings& settings) {
  using Mat = Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic>;
  using Real = typename Eigen::NumTraits<Scalar>::Real;
  const Eigen::Index N = static_cast<Eigen::Index>(n);
  const Mat A = Mat::Random(N, N), B = Mat::Random(N, N);  // uniform in [-1, 1]: never all zeros
  std::vector<Measurement> out;

  // The reference, and the baseline.
  Mat reference(N, N);
  {
    Measurement m;
    m.system = "cpu-eigen";
    const bool single = n > settings.cpu_full_max;
    const auto times = time_calls([&] { reference.noalias() = A * B; }, single ? 0 : settings.warmups,
                                  single ? 1 : settings.repeats);
    m.seconds = median(times);
    m.runs = static_cast<int>(times.size());
    if (single) m.note = "single run, no warm-up (N > --cpu-full-max)";
    out.push_back(m);
  }
  const double reference_norm = static_cast<double>(reference.norm());

  for (const std::string& system : settings.systems) {
    Measurement m;
    m.system = system;
    egpu::Options options;
    options.backend = system == "egpu-cublas" ? egpu::Backend::cublas : egpu::Backend::own;
    // NaN everywhere first: an element the GPU never writes shows as an error.
    Mat C = Mat::Constant(N, N, Scalar(std::numeric_limits<Real>::quiet_NaN()));
    try {
      const auto times =
          time_calls([&] { C.noalias() = egpu::gpu(A * B, options); }, settings.warmups, settings.repeats);
      m.seconds = median(times);
      m.runs = static_cast<int>(times.size());
      m.rel_error = static_cast<double>((C - reference).norm()) / reference_norm;
      if (!(m.rel_error <= tolerance<Scalar>(n))) {  // NaN fails too
        m.failed = true;
        m.note = format("WRONG: error above %.1e", tolerance<Scalar>(n));
      }
    } catch (const std::exception& e) {
      m.failed = true;
      m.note = std::string("FAILED: ") + e.what();
      std::fprintf(stderr, "egpu-bench product: N=%ld %s: %s\n", n, system.c_str(), e.what());
    }
    out.push_back(m);
  }
  return out;
}

std::vector<Measurement> run_case(long n, const std::string& scalar, const Settings& settings) {
  if (scalar == "f32") return run_case<float>(n, settings);
  if (scalar == "f64") return run_case<double>(n, settings);
  if (scalar == "c32") return run_case<std::complex<float>>(n, settings);
  return run_case<std::complex<double>>(n, settings);  // c64, checked in parse()
}

// Real flops of an n x n x n product: a complex multiply-add is 8.
double flops(long n, const std::string& scalar) {
  const double per_multiply_add = (scalar == "c32" || scalar == "c64") ? 8.0 : 2.0;
  return per_multiply_add * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n);
}

Settings parse(Args& args) {
  Settings s;
  s.sizes = args.integers("sizes", {256, 512, 1024, 2048, 4096, 8192});
  s.scalars = args.words("scalars", {"f32", "f64"});
  s.systems = args.words("systems", {"egpu-own", "egpu-cublas"});
  s.repeats = static_cast<int>(args.integer("repeats", 3));
  s.warmups = static_cast<int>(args.integer("warmups", 1));
  s.cpu_full_max = args.integer("cpu-full-max", 4096);
  for (long n : s.sizes)
    if (n < 1 || n > 65536) throw std::invalid_argument("--sizes: " + std::to_string(n) + " is out of range");
  for (const std::string& scalar : s.scalars)
    if (scalar != "f32" && scalar != "f64" && scalar != "c32" && scalar != "c64")
      throw std::invalid_argument("--scalars: unknown scalar \"" + scalar + "\" (f32, f64, c32, c64)");
  for (const std::string& system : s.systems)
    if (system != "egpu-own" && system != "egpu-cublas")
      throw std::invalid_argument("--systems: unknown system \"" + system + "\" (egpu-own, egpu-cublas)");
  if (s.repeats < 1) throw std::invalid_argument("--repeats must be at least 1");
  if (s.warmups < 0) throw std::invalid_argument("--warmups must not be negative");
  return s;
}

}  // namespace

int run_product(int argc, char** argv) {
  Args args(argc, argv);
  if (args.flag("help")) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  const Settings settings = parse(args);
  const int threads = static_cast<int>(args.integer("threads", 0));
  const std::string csv_file = args.text("csv", "");
  const std::string csv_dir = args.text("csv-dir", "");
  const bool no_csv = args.flag("no-csv");
  args.finish();

  const RunInfo info = gather_run_info(threads);
  std::printf("egpu-bench product: device %s, commit %s, %s, CPU Eigen %d.%d.%d on %d threads\n",
              info.device.c_str(), info.commit.c_str(), info.date.c_str(), EIGEN_WORLD_VERSION,
              EIGEN_MAJOR_VERSION, EIGEN_MINOR_VERSION, info.cpu_threads);
  std::printf("wall-clock per host-resident call, median of %d after %d warm-up(s); CPU Eigen runs once above N=%ld\n",
              settings.repeats, settings.warmups, settings.cpu_full_max);
  if (!egpu::has_device()) std::printf("no usable GPU: the egpu systems run on CPU Eigen\n");
  std::fflush(stdout);

  std::unique_ptr<Csv> csv;
  if (!no_csv) {
    const std::string path = csv_file.empty() ? default_csv_path("product", info, csv_dir) : csv_file;
    csv = std::make_unique<Csv>(path, std::vector<std::string>{"date", "device", "commit", "scalar", "shape", "system",
                                                               "seconds", "tflops", "rel_error", "repeats", "status"});
  }

  Table table({"N", "scalar", "system", "seconds", "TFLOP/s", "vs CPU", "rel.error", "runs", "note"});
  bool all_ok = true;
  for (const std::string& scalar : settings.scalars) {
    for (long n : settings.sizes) {
      const std::vector<Measurement> results = run_case(n, scalar, settings);
      const double cpu_seconds = results.front().seconds;
      for (const Measurement& m : results) {
        const bool timed = m.runs > 0;
        const double tflops = timed ? flops(n, scalar) / m.seconds / 1e12 : 0.0;
        const bool reference = m.rel_error < 0 && !m.failed;
        table.add({std::to_string(n), scalar, m.system, timed ? format("%.6f", m.seconds) : "-",
                   timed ? format("%.3f", tflops) : "-", timed ? format("%.2fx", cpu_seconds / m.seconds) : "-",
                   reference ? "ref" : timed ? format("%.1e", m.rel_error) : "-", std::to_string(m.runs), m.note});
        if (csv)
          csv->add({info.date, info.device, info.commit, scalar, format("%ldx%ldx%ld", n, n, n), m.system,
                    timed ? format("%.6g", m.seconds) : "", timed ? format("%.4g", tflops) : "",
                    reference || !timed ? "" : format("%.3g", m.rel_error), std::to_string(m.runs),
                    m.failed ? (timed ? "wrong" : "failed") : (reference ? "reference" : "ok")});
        all_ok = all_ok && !m.failed;
      }
      // Progress on stderr: the table comes at the end.
      std::fprintf(stderr, "  done: N=%ld %s\n", n, scalar.c_str());
    }
  }
  std::printf("\n");
  table.print(stdout);
  if (csv) std::printf("\nCSV: %s\n", csv->path().c_str());
  if (!all_ok) std::printf("\nSOME RESULTS ARE WRONG OR FAILED (see the note column)\n");
  return all_ok ? 0 : 1;
}

}  // namespace egpu_bench

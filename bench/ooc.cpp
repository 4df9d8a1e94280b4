// egpu-bench ooc: the out-of-core path against the in-core one. The same
// host-resident product C.noalias() = egpu::gpu(A * B, options) runs with
// Options::device_memory_limit = 0 (in-core: the device takes the whole
// working set) and = (A + B + C bytes) / --fraction (out-of-core: the
// pipeline tiles the product through a quarter of the memory it would
// want), for each backend. Reported: seconds of each (wall-clock, median)
// and the OOC rate over the in-core rate (1.0: tiling costs nothing).
//
// Checks: each OOC result against the same backend's in-core result, and
// each in-core result against egpu-cublas's in-core result (CPU Eigen is left
// out: at N=16384 it would take longer than everything else together).
#include <egpu/egpu.hpp>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdio>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "host_data.hpp"
#include "subcommands.hpp"

namespace egpu_bench {
namespace {

const char* const kUsage =
    "usage: egpu-bench ooc [options]\n"
    "  --sizes N,N,...       square sizes (default 8192,16384)\n"
    "  --scalars S,S,...     f32, f64, c32, c64 (default f64,f32)\n"
    "  --backends B,B,...    own, cublas (default both)\n"
    "  --memory M,M,...      pageable, pinned (default pageable): pinned page-locks A, B and\n"
    "                        both results with egpu::pin\n"
    "  --fraction F          out-of-core device_memory_limit = working set (A + B + C) / F\n"
    "                        (default 4)\n"
    "  --repeats R           timed runs per case, median reported (default 3)\n"
    "  --warmups W           untimed runs first (default 1)\n"
    "  --csv FILE            CSV output (default bench/results/ooc-<date>-<device>.csv in the\n"
    "                        source tree, else ./; rows are appended)\n"
    "  --csv-dir DIR         default CSV name, in DIR\n"
    "  --no-csv              table only\n"
    "egpu pipeline options (passed to egpu::Options of both runs):\n";

struct Settings {
  std::vector<long> sizes;
  std::vector<std::string> scalars, backends, memories;
  long fraction = 4;
  int repeats = 3, warmups = 1;
  egpu::Options pipeline;
};

struct Run {
  double seconds = 0;
  int runs = 0;
  std::string error;  // exception text
};

struct Row {
  std::string memory, backend;
  std::size_t limit = 0;
  Run in_core, ooc;
  double err_ooc = -1;      // OOC vs in-core, same backend
  double err_in_core = -1;  // in-core vs egpu-cublas in-core (< 0: not measured / is the reference)
  bool failed = false;
  std::string note;
};

template <class Mat>
Run time_product(const Mat& A, const Mat& B, Mat& C, const egpu::Options& options, const Settings& settings) {
  Run run;
  fill_nan(C);
  try {
    const auto times =
        time_calls([&] { C.noalias() = egpu::gpu(A * B, options); }, settings.warmups, settings.repeats);
    run.seconds = median(times);
    run.runs = static_cast<int>(times.size());
  } catch (const std::exception& e) {
    run.error = e.what();
  }
  return run;
}

template <class Scalar>
std::vector<Row> run_case(long n, const std::string& scalar, const Settings& settings) {
  using Mat = Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic>;
  const Eigen::Index N = static_cast<Eigen::Index>(n);
  Mat A(N, N), B(N, N), C_in(N, N), C_ooc(N, N), cublas_in_core;
  fill_random(A, 1000003ull * static_cast<unsigned long long>(n) + 1);
  fill_random(B, 1000003ull * static_cast<unsigned long long>(n) + 2);
  const std::size_t working_set = 3 * static_cast<std::size_t>(N) * static_cast<std::size_t>(N) * sizeof(Scalar);
  const std::size_t limit = working_set / static_cast<std::size_t>(settings.fraction);
  const double tol = tolerance<Scalar>(n);

  // egpu-cublas in-core first: it is the reference of the in-core results.
  std::vector<std::string> backends = settings.backends;
  std::stable_sort(backends.begin(), backends.end(),
                   [](const std::string& a, const std::string& b) { return a == "cublas" && b != "cublas"; });

  std::vector<Row> rows;
  for (const std::string& memory : settings.memories) {
    std::string pin_error;
    const std::vector<egpu::PinGuard> guards =
        memory == "pinned" ? pin_all(pin_error, A, B, C_in, C_ooc) : std::vector<egpu::PinGuard>{};
    for (const std::string& backend : backends) {
      Row row;
      row.memory = memory;
      row.backend = backend;
      row.limit = limit;
      if (!pin_error.empty()) {
        row.failed = true;
        row.note = pin_error;
        rows.push_back(row);
        continue;
      }
      egpu::Options options = settings.pipeline;
      options.backend = backend == "cublas" ? egpu::Backend::cublas : egpu::Backend::own;
      options.device_memory_limit = 0;
      row.in_core = time_product(A, B, C_in, options, settings);
      options.device_memory_limit = limit;
      row.ooc = time_product(A, B, C_ooc, options, settings);

      std::vector<std::string> notes;
      if (!row.in_core.error.empty()) notes.push_back("in-core FAILED: " + row.in_core.error);
      if (!row.ooc.error.empty()) notes.push_back("OOC FAILED: " + row.ooc.error);
      if (row.in_core.error.empty() && row.ooc.error.empty()) {
        row.err_ooc = relative_error(C_ooc, C_in);
        if (!(row.err_ooc <= tol)) notes.push_back(format("WRONG: OOC differs from in-core above %.1e", tol));
      }
      if (row.in_core.error.empty()) {
        if (backend == "cublas" && cublas_in_core.size() == 0) {
          if (!C_in.hasNaN()) cublas_in_core = C_in;
          else notes.push_back("WRONG: NaN in the in-core result");
        } else if (cublas_in_core.size() != 0) {
          row.err_in_core = relative_error(C_in, cublas_in_core);
          if (!(row.err_in_core <= tol)) notes.push_back(format("WRONG: in-core differs from cuBLAS above %.1e", tol));
        }
      }
      row.failed = !notes.empty();
      for (const std::string& note : notes) row.note += (row.note.empty() ? "" : "; ") + note;
      std::fprintf(stderr, "  N=%ld %s %s %s: in-core %.4g s, OOC %.4g s\n", n, scalar.c_str(), memory.c_str(),
                   backend.c_str(), row.in_core.seconds, row.ooc.seconds);
      rows.push_back(row);
    }
  }
  return rows;
}

std::vector<Row> run_case(long n, const std::string& scalar, const Settings& settings) {
  if (scalar == "f32") return run_case<float>(n, scalar, settings);
  if (scalar == "f64") return run_case<double>(n, scalar, settings);
  if (scalar == "c32") return run_case<std::complex<float>>(n, scalar, settings);
  return run_case<std::complex<double>>(n, scalar, settings);
}

Settings parse(Args& args) {
  Settings s;
  s.sizes = args.integers("sizes", {8192, 16384});
  s.scalars = args.words("scalars", {"f64", "f32"});
  s.backends = args.words("backends", {"own", "cublas"});
  s.memories = args.words("memory", {"pageable"});
  s.fraction = args.integer("fraction", 4);
  s.repeats = static_cast<int>(args.integer("repeats", 3));
  s.warmups = static_cast<int>(args.integer("warmups", 1));
  s.pipeline = parse_pipeline_options(args);
  check_sizes(s.sizes);
  check_choices(s.scalars, {"f32", "f64", "c32", "c64"}, "scalars");
  check_choices(s.backends, {"own", "cublas"}, "backends");
  check_choices(s.memories, {"pageable", "pinned"}, "memory");
  if (s.sizes.empty() || s.scalars.empty() || s.backends.empty() || s.memories.empty())
    throw std::invalid_argument("--sizes, --scalars, --backends and --memory must not be empty");
  if (s.fraction < 2 || s.fraction > 1024) throw std::invalid_argument("--fraction must be 2..1024");
  if (s.repeats < 1) throw std::invalid_argument("--repeats must be at least 1");
  if (s.warmups < 0) throw std::invalid_argument("--warmups must not be negative");
  return s;
}

}  // namespace

int run_ooc(int argc, char** argv) {
  Args args(argc, argv);
  if (print_help(args, kUsage)) return 0;
  const Settings settings = parse(args);
  const CsvChoice csv_choice = parse_csv_options(args);
  args.finish();

  const RunInfo info = gather_run_info(0);
  std::printf("egpu-bench ooc: device %s, commit %s, %s\n", info.device.c_str(), info.commit.c_str(),
              info.date.c_str());
  if (!egpu::has_device()) {
    std::printf("NO USABLE GPU: egpu-bench ooc measures egpu's out-of-core path on a GPU; SKIPPED\n");
    return 0;
  }
  std::printf("wall-clock per host-resident call, median of %d after %d warm-up(s); OOC limit = working set / %ld\n",
              settings.repeats, settings.warmups, settings.fraction);
  std::printf("egpu pipeline options: %s\n", describe_pipeline_options(settings.pipeline).c_str());
  std::fflush(stdout);

  const std::unique_ptr<Csv> csv =
      open_csv(csv_choice, "ooc", info,
               {"date", "device", "commit", "scalar", "shape", "memory", "backend", "limit_bytes", "in_core_seconds",
                "ooc_seconds", "in_core_tflops", "ooc_tflops", "rate_ratio", "err_ooc_vs_in_core",
                "err_in_core_vs_cublas", "repeats", "status", "egpu_options", "note"});
  const std::string options_text = describe_pipeline_options(settings.pipeline);

  Table table({"N", "scalar", "memory", "backend", "limit MiB", "in-core s", "OOC s", "in-core TFLOP/s",
               "OOC TFLOP/s", "OOC/in-core rate", "err OOC", "err vs cuBLAS", "note"});
  bool all_ok = true;
  for (const std::string& scalar : settings.scalars) {
    for (long n : settings.sizes) {
      const double flops = product_flops(n, scalar);
      for (const Row& r : run_case(n, scalar, settings)) {
        const bool in_ok = r.in_core.runs > 0, ooc_ok = r.ooc.runs > 0;
        const auto seconds = [](const Run& run) { return run.runs > 0 ? format("%.6f", run.seconds) : "-"; };
        const auto tflops = [&](const Run& run) {
          return run.runs > 0 ? format("%.3f", flops / run.seconds / 1e12) : "-";
        };
        const std::string rate = in_ok && ooc_ok ? format("%.3f", r.in_core.seconds / r.ooc.seconds) : "-";
        const std::string err_ooc = r.err_ooc >= 0 || std::isnan(r.err_ooc) ? format("%.1e", r.err_ooc) : "-";
        const std::string err_in =
            r.err_in_core >= 0 || std::isnan(r.err_in_core) ? format("%.1e", r.err_in_core) : "-";
        table.add({std::to_string(n), scalar, r.memory, r.backend, format("%.0f", static_cast<double>(r.limit) / 1048576.0),
                   seconds(r.in_core), seconds(r.ooc), tflops(r.in_core), tflops(r.ooc), rate, err_ooc, err_in,
                   r.note});
        if (csv) {
          std::string note = r.note;
          for (char& ch : note)
            if (ch == ',' || ch == '\n') ch = ';';
          csv->add({info.date, info.device, info.commit, scalar, format("%ldx%ldx%ld", n, n, n), r.memory,
                    r.backend, std::to_string(r.limit), in_ok ? format("%.6g", r.in_core.seconds) : "",
                    ooc_ok ? format("%.6g", r.ooc.seconds) : "",
                    in_ok ? format("%.4g", flops / r.in_core.seconds / 1e12) : "",
                    ooc_ok ? format("%.4g", flops / r.ooc.seconds / 1e12) : "",
                    in_ok && ooc_ok ? format("%.4g", r.in_core.seconds / r.ooc.seconds) : "",
                    err_ooc == "-" ? "" : format("%.3g", r.err_ooc), err_in == "-" ? "" : format("%.3g", r.err_in_core),
                    std::to_string(settings.repeats), r.failed ? (in_ok && ooc_ok ? "wrong" : "failed") : "ok",
                    options_text, note});
        }
        all_ok = all_ok && !r.failed;
      }
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

// egpu-bench elementwise-host: fused coefficient-wise expressions on
// host-resident Eigen arrays, what a user sees of
//   out = egpu::gpu(a * b + a.exp(), options);      (and a * b + c)
// with a, b, c, out Eigen::Array<T, Dynamic, Dynamic> of 2^L elements
// (4096 rows, or all of them when fewer), random in [-1, 1), the same data
// for every system. Systems:
//   egpu        the call above: operands go up in chunks, one fused kernel
//               per chunk, results come down, overlapped on several streams
//   CPU 1 core  out = a * b + a.exp(); as Eigen runs it (Eigen never splits
//               a coefficient-wise assignment over threads)
//   CPU OpenMP  the same split by hand over --threads threads:
//               `#pragma omp parallel for` over one contiguous block of
//               columns per thread, each out.middleCols(j0, w) = ...
// Memory modes: pageable (plain arrays) and pinned (a, b, out, and c where
// read, page-locked with egpu::pin around the egpu calls). The CPU systems
// run once per expression: page-locking does not change them.
//
// Timing: wall clock (steady_clock) around each whole call, --warmups
// untimed calls first, median of --repeats.
//
// Floors, from rates measured at the start of the same run:
//   H2D, D2H   pinned cudaMemcpyAsync each way (gpu::measure_bandwidth)
//   pack       host copy pageable -> pinned with the staging threads
//   unpack     host copy pinned -> pageable with the staging threads
//              (gpu::measure_host_copy: memcpy or egpu's staging copy,
//              the fastest run; --staging-threads, else every hardware
//              thread, as egpu::Options::staging_threads = 0)
// With up = the bytes of the operands read (a and b, or a, b and c) and
// down = the bytes of out:
//   pinned floor   = max(up / H2D, down / D2H)
//   pageable floor = max(up / H2D, down / D2H, up / pack + down / unpack)
// The host terms add: the same staging threads and the same host memory
// bus do both directions' copies, so packing and unpacking cannot each run
// at its full measured rate at once. Each PCIe direction has its own copy
// engine and may overlap the other and the host copies. The kernel's own
// time (about 1 ms on 3 GB at device bandwidth) is left out. The CSV keeps
// each term (floor_pack_seconds = up / pack, ...), so a looser floor such
// as max(up / min(H2D, pack), down / min(D2H, unpack)) can be derived.
// "of floor" = floor / egpu seconds (1.0: at the floor).
//
// "max diff": the largest |egpu - CPU 1 core| / max(|CPU 1 core|, 1) over
// the whole result (NaN where only one side is NaN); above 100 epsilon the
// row is marked WRONG and the exit status is 1. The OpenMP result is checked
// against the one-core result the same way.
#include <egpu/egpu.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench_common.hpp"
#include "gpu_baselines.hpp"
#include "host_data.hpp"
#include "subcommands.hpp"

namespace egpu_bench {
namespace {

const char* const kUsage =
    "usage: egpu-bench elementwise-host [options]\n"
    "  --log2-sizes L,L,...  elements as powers of two (default 27: 1 GiB per f64 array)\n"
    "  --scalars S,S,...     f64, f32 (default f64)\n"
    "  --expressions E,...   a*b+exp(a), a*b+c (default both)\n"
    "  --memory M,M,...      pageable, pinned (default both): pinned page-locks the operands\n"
    "                        and the result with egpu::pin around the egpu calls\n"
    "  --repeats R           timed runs per system, median reported (default 5)\n"
    "  --warmups W           untimed runs first (default 1; the first egpu call of an\n"
    "                        expression may compile its kernel)\n"
    "  --threads T           CPU OpenMP threads (default: all cores)\n"
    "  --bw-mib M            size of the copy-rate measurements (default 1024)\n"
    "  --csv FILE            CSV output (default bench/results/elementwise-host-<date>-<device>.csv\n"
    "                        in the source tree, else ./; rows are appended)\n"
    "  --csv-dir DIR         default CSV name, in DIR\n"
    "  --no-csv              table only\n"
    "egpu options:\n"
    "  --streams S           egpu::Options::streams (0: egpu chooses; default 0)\n"
    "  --staging-threads T   egpu::Options::staging_threads, also the threads of the host\n"
    "                        copy-rate measurement (0: every hardware thread; default 0)\n"
    "  --device-memory-mib M egpu::Options::device_memory_limit in MiB (0: egpu chooses)\n"
    "  --chunk-kib K         egpu::Options::chunk_bytes in KiB (0: egpu chooses)\n";

const std::vector<std::string> kExpressions = {"a*b+exp(a)", "a*b+c"};

enum class Expr { ab_exp_a, ab_c };

struct Settings {
  std::vector<long> log2_sizes;
  std::vector<std::string> scalars, expressions, memories;
  int repeats = 5, warmups = 1, threads = 1;
  long bw_mib = 1024, device_memory_mib = 0;
  egpu::Options options;
};

// Rates of the floors (bytes per second); 0 where the measurement failed.
struct Rates {
  double h2d = 0, d2h = 0, pack = 0, unpack = 0;
  int staging_threads = 0;
};

// Seconds of each term; pack and unpack are 0 for pinned memory.
struct Floor {
  double h2d = 0, d2h = 0, pack = 0, unpack = 0;
  double host() const { return pack + unpack; }
  double seconds() const { return std::max(host(), std::max(h2d, d2h)); }
  std::string bound() const { return host() >= h2d && host() >= d2h ? "host copy" : h2d >= d2h ? "H2D" : "D2H"; }
};

struct Row {
  std::string scalar, expression, memory;
  long log2_n = 0;
  double egpu_s = 0, cpu1_s = 0, omp_s = 0, max_diff = -1;
  double up_bytes = 0, down_bytes = 0;
  Floor floor;
  bool has_floor = false, failed = false;
  std::string note;
};

// out = expression, the same code for whole arrays and their column blocks.
template <class A, class B, class C, class Out>
void cpu_evaluate(Expr e, const A& a, const B& b, const C& c, Out&& out) {
  if (e == Expr::ab_exp_a) out = a * b + a.exp();
  else out = a * b + c;
}

// The careful user's parallel version: one contiguous block of columns per
// thread, each evaluated by Eigen on its thread.
template <class Array>
void cpu_openmp(Expr e, const Array& a, const Array& b, const Array& c, Array& out, int threads) {
  const Eigen::Index cols = out.cols();
  const int blocks = static_cast<int>(std::min<Eigen::Index>(threads, cols));
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads) schedule(static)
#endif
  for (int t = 0; t < blocks; ++t) {
    const Eigen::Index j0 = cols * t / blocks, w = cols * (t + 1) / blocks - j0;
    cpu_evaluate(e, a.middleCols(j0, w), b.middleCols(j0, w), c.middleCols(j0, w), out.middleCols(j0, w));
  }
}

template <class Array>
void egpu_evaluate(Expr e, const Array& a, const Array& b, const Array& c, Array& out, const egpu::Options& options) {
  if (e == Expr::ab_exp_a) out = egpu::gpu(a * b + a.exp(), options);
  else out = egpu::gpu(a * b + c, options);
}

void progress(const Row& r, const char* what, double seconds) {
  std::fprintf(stderr, "  2^%ld %s %s %s: %.4f s\n", r.log2_n, r.scalar.c_str(), r.expression.c_str(), what, seconds);
}

// All rows of one scalar and size: every expression in every memory mode.
template <class T>
std::vector<Row> run_size(const std::string& scalar, long log2_n, const Settings& s, const Rates& rates) {
  using Array = Eigen::Array<T, Eigen::Dynamic, Eigen::Dynamic>;
  const Eigen::Index n = Eigen::Index(1) << log2_n;
  const Eigen::Index rows = std::min<Eigen::Index>(n, 4096), cols = n / rows;
  Array a(rows, cols), b(rows, cols), c(rows, cols), ref(rows, cols), out(rows, cols);
  fill_random(a, 1);
  fill_random(b, 2);
  fill_random(c, 3);
  fill_nan(ref);  // every page written before any timing
  fill_nan(out);
  const double tolerance = 100.0 * static_cast<double>(std::numeric_limits<T>::epsilon());

  std::vector<Row> result;
  for (const std::string& expression : s.expressions) {
    const Expr e = expression == "a*b+c" ? Expr::ab_c : Expr::ab_exp_a;
    Row base;
    base.scalar = scalar;
    base.expression = expression;
    base.log2_n = log2_n;
    base.up_bytes = double(n) * double(sizeof(T)) * (e == Expr::ab_c ? 3 : 2);
    base.down_bytes = double(n) * double(sizeof(T));

    base.cpu1_s = median(time_calls([&] { cpu_evaluate(e, a, b, c, ref); }, s.warmups, s.repeats));
    progress(base, "CPU 1 core", base.cpu1_s);
    base.omp_s = median(time_calls([&] { cpu_openmp(e, a, b, c, out, s.threads); }, s.warmups, s.repeats));
    progress(base, "CPU OpenMP", base.omp_s);
    const double omp_diff = max_difference(out.data(), ref.data(), static_cast<std::size_t>(n));
    if (!(omp_diff <= tolerance)) base.note = format("CPU OpenMP differs from CPU 1 core: %.1e", omp_diff);

    for (const std::string& memory : s.memories) {
      Row r = base;
      r.memory = memory;
      const bool pinned = memory == "pinned";
      if (rates.h2d > 0 && rates.d2h > 0 && (pinned || (rates.pack > 0 && rates.unpack > 0))) {
        r.has_floor = true;
        r.floor.h2d = r.up_bytes / rates.h2d;
        r.floor.d2h = r.down_bytes / rates.d2h;
        if (!pinned) {
          r.floor.pack = r.up_bytes / rates.pack;
          r.floor.unpack = r.down_bytes / rates.unpack;
        }
      }
      std::string pin_error;
      std::vector<egpu::PinGuard> guards;
      if (pinned) {
        guards = e == Expr::ab_c ? pin_all(pin_error, a, b, c, out) : pin_all(pin_error, a, b, out);
        if (!pin_error.empty()) {
          r.failed = true;
          r.note = pin_error;
          std::fprintf(stderr, "egpu-bench elementwise-host: %s\n", pin_error.c_str());
          result.push_back(r);
          continue;
        }
      }
      fill_nan(out);  // an element egpu never writes shows as NaN
      try {
        r.egpu_s = median(time_calls([&] { egpu_evaluate(e, a, b, c, out, s.options); }, s.warmups, s.repeats));
        progress(r, (memory + " egpu").c_str(), r.egpu_s);
        r.max_diff = max_difference(out.data(), ref.data(), static_cast<std::size_t>(n));
        if (!(r.max_diff <= tolerance)) {
          r.failed = true;
          r.note = std::string("WRONG") + (r.note.empty() ? "" : "; ") + r.note;
        }
      } catch (const std::exception& ex) {
        r.failed = true;
        r.egpu_s = 0;
        r.note = std::string("FAILED: ") + ex.what();
        std::fprintf(stderr, "egpu-bench elementwise-host: 2^%ld %s %s %s: %s\n", log2_n, scalar.c_str(),
                     expression.c_str(), memory.c_str(), ex.what());
      }
      result.push_back(r);
    }  // the guards unpin here
  }
  return result;
}

int hardware_threads() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

Settings parse(Args& args) {
  Settings s;
  s.log2_sizes = args.integers("log2-sizes", {27});
  s.scalars = args.words("scalars", {"f64"});
  s.expressions = args.words("expressions", kExpressions);
  s.memories = args.words("memory", {"pageable", "pinned"});
  s.repeats = static_cast<int>(args.integer("repeats", 5));
  s.warmups = static_cast<int>(args.integer("warmups", 1));
  const long threads = args.integer("threads", 0);
  s.bw_mib = args.integer("bw-mib", 1024);
  const long streams = args.integer("streams", 0);
  const long staging = args.integer("staging-threads", 0);
  s.device_memory_mib = args.integer("device-memory-mib", 0);
  const long chunk_kib = args.integer("chunk-kib", 0);
  if (chunk_kib < 0 || chunk_kib > (1L << 22)) throw std::invalid_argument("--chunk-kib must be 0..4194304");
  s.options.chunk_bytes = chunk_kib << 10;
  check_choices(s.scalars, {"f64", "f32"}, "scalars");
  check_choices(s.expressions, kExpressions, "expressions");
  check_choices(s.memories, {"pageable", "pinned"}, "memory");
  for (long l : s.log2_sizes)
    if (l < 12 || l > 30) throw std::invalid_argument("--log2-sizes: 12 to 30");
  if (s.log2_sizes.empty() || s.scalars.empty() || s.expressions.empty() || s.memories.empty())
    throw std::invalid_argument("--log2-sizes, --scalars, --expressions and --memory must not be empty");
  if (s.repeats < 1) throw std::invalid_argument("--repeats must be at least 1");
  if (s.warmups < 0) throw std::invalid_argument("--warmups must not be negative");
  if (threads < 0 || threads > 1024) throw std::invalid_argument("--threads must be 0..1024");
  if (s.bw_mib < 1 || s.bw_mib > 16384) throw std::invalid_argument("--bw-mib must be 1..16384");
  if (streams < 0 || streams > 64) throw std::invalid_argument("--streams must be 0..64");
  if (staging < 0 || staging > 1024) throw std::invalid_argument("--staging-threads must be 0..1024");
  if (s.device_memory_mib < 0 || s.device_memory_mib > (1L << 24))
    throw std::invalid_argument("--device-memory-mib must be 0..16777216");
  s.threads = openmp_threads(threads);
  s.options.streams = static_cast<int>(streams);
  s.options.staging_threads = static_cast<int>(staging);
  s.options.device_memory_limit = static_cast<std::size_t>(s.device_memory_mib) << 20;
  return s;
}

std::string describe(const egpu::Options& o) {
  auto value = [](long long v) { return v == 0 ? std::string("auto") : std::to_string(v); };
  return "streams=" + value(o.streams) + " staging_threads=" + value(o.staging_threads) +
         " device_memory_limit=" + value(static_cast<long long>(o.device_memory_limit)) +
         " chunk_bytes=" + value(o.chunk_bytes);
}

}  // namespace

int run_elementwise_host(int argc, char** argv) {
  Args args(argc, argv);
  if (print_help(args, kUsage, false)) return 0;
  Settings s = parse(args);
  const CsvChoice csv_choice = parse_csv_options(args);
  args.finish();

  const RunInfo info = gather_run_info(s.threads);
  std::printf("egpu-bench elementwise-host: device %s, commit %s, %s, CPU Eigen %d.%d.%d, OpenMP baseline on %d "
              "threads\n",
              info.device.c_str(), info.commit.c_str(), info.date.c_str(), EIGEN_WORLD_VERSION, EIGEN_MAJOR_VERSION,
              EIGEN_MINOR_VERSION, s.threads);
  std::printf("host-resident; wall clock per call, median of %d after %d warm-up(s); egpu options: %s\n", s.repeats,
              s.warmups, describe(s.options).c_str());
  if (!egpu::has_device()) {
    std::printf("NO USABLE GPU: egpu-bench elementwise-host measures egpu against PCIe floors; SKIPPED\n");
    return 0;
  }

  Rates rates;
  const std::size_t bw_bytes = static_cast<std::size_t>(s.bw_mib) << 20;
  try {
    const gpu::Bandwidth bw = gpu::measure_bandwidth(bw_bytes, 5);
    rates.h2d = bw.h2d;
    rates.d2h = bw.d2h;
    std::printf("pinned copy (%ld MiB, median of 5): H2D %.1f GB/s, D2H %.1f GB/s\n", s.bw_mib, rates.h2d / 1e9,
                rates.d2h / 1e9);
  } catch (const std::exception& e) {
    std::printf("pinned copy bandwidth: FAILED (%s); no floors\n", e.what());
  }
  try {
    // egpu's staging_threads = 0 means every hardware thread.
    const int staging = s.options.staging_threads > 0 ? s.options.staging_threads : hardware_threads();
    const gpu::HostCopyRate host = gpu::measure_host_copy(bw_bytes, staging, 5);
    rates.pack = host.pack;
    rates.unpack = host.unpack;
    rates.staging_threads = host.threads;
    std::printf("host copy (%ld MiB, %d threads, fastest of 5): pageable->pinned %.1f GB/s, "
                "pinned->pageable %.1f GB/s\n",
                s.bw_mib, host.threads, rates.pack / 1e9, rates.unpack / 1e9);
  } catch (const std::exception& e) {
    std::printf("host copy rate: FAILED (%s); no pageable floors\n", e.what());
  }
  std::fflush(stdout);

  const std::unique_ptr<Csv> csv = open_csv(
      csv_choice, "elementwise-host", info,
      {"date", "device", "commit", "scalar", "expression", "elements", "memory", "egpu_seconds", "egpu_gbps",
       "floor_seconds", "floor_bound", "of_floor", "floor_h2d_seconds", "floor_d2h_seconds", "floor_pack_seconds",
       "floor_unpack_seconds", "cpu1_seconds", "cpu_omp_seconds", "cpu_omp_threads", "vs_cpu1", "vs_cpu_omp",
       "max_diff", "status", "h2d_gbps", "d2h_gbps", "pack_gbps", "unpack_gbps", "staging_threads", "repeats",
       "egpu_options", "note"});
  Table table({"scalar", "expression", "n", "memory", "egpu s", "GB/s", "floor s", "bound", "of floor",
               "CPU 1-core s", "CPU OpenMP s", "vs 1 core", "vs OpenMP", "max diff", "note"});
  const std::string options_text = describe(s.options);
  bool all_ok = true;
  for (const std::string& scalar : s.scalars)
    for (long log2_n : s.log2_sizes) {
      const std::vector<Row> rows =
          scalar == "f32" ? run_size<float>(scalar, log2_n, s, rates) : run_size<double>(scalar, log2_n, s, rates);
      for (const Row& r : rows) {
        const bool timed = r.egpu_s > 0, floored = r.has_floor, diffed = r.max_diff >= 0 || std::isnan(r.max_diff);
        const double gbps = timed ? (r.up_bytes + r.down_bytes) / r.egpu_s / 1e9 : 0;
        const double floor_s = floored ? r.floor.seconds() : 0;
        // A missing value is "-" in the table and empty in the CSV.
        auto cell = [](bool ok, const char* fmt, double v) { return ok ? format(fmt, v) : std::string("-"); };
        auto csv_cell = [](bool ok, const char* fmt, double v) { return ok ? format(fmt, v) : std::string(); };
        table.add({r.scalar, r.expression, format("2^%ld", r.log2_n), r.memory, cell(timed, "%.4g", r.egpu_s),
                   cell(timed, "%.1f", gbps), cell(floored, "%.4g", floor_s), floored ? r.floor.bound() : "-",
                   cell(timed && floored, "%.2f", floor_s / r.egpu_s), format("%.4g", r.cpu1_s),
                   format("%.4g", r.omp_s), cell(timed, "%.1fx", r.cpu1_s / r.egpu_s),
                   cell(timed, "%.1fx", r.omp_s / r.egpu_s), cell(diffed, "%.1e", r.max_diff), r.note});
        if (csv) {
          std::string note = r.note;
          for (char& ch : note)
            if (ch == ',' || ch == '\n') ch = ';';  // plain cells: scripts split on commas
          const std::string status = !r.failed ? "ok" : timed ? "wrong" : "failed";
          csv->add({info.date, info.device, info.commit, r.scalar, r.expression, format("%ld", 1L << r.log2_n),
                    r.memory, csv_cell(timed, "%.6g", r.egpu_s), csv_cell(timed, "%.2f", gbps),
                    csv_cell(floored, "%.6g", floor_s), floored ? r.floor.bound() : "",
                    csv_cell(timed && floored, "%.4f", floor_s / r.egpu_s), csv_cell(floored, "%.6g", r.floor.h2d),
                    csv_cell(floored, "%.6g", r.floor.d2h), csv_cell(floored, "%.6g", r.floor.pack),
                    csv_cell(floored, "%.6g", r.floor.unpack), format("%.6g", r.cpu1_s), format("%.6g", r.omp_s),
                    std::to_string(s.threads), csv_cell(timed, "%.4g", r.cpu1_s / r.egpu_s),
                    csv_cell(timed, "%.4g", r.omp_s / r.egpu_s), csv_cell(diffed, "%.3g", r.max_diff), status,
                    format("%.2f", rates.h2d / 1e9), format("%.2f", rates.d2h / 1e9),
                    format("%.2f", rates.pack / 1e9), format("%.2f", rates.unpack / 1e9),
                    std::to_string(rates.staging_threads), std::to_string(s.repeats), options_text, note});
        }
        all_ok = all_ok && !r.failed;
      }
    }
  std::printf("\n");
  table.print(stdout, Table::Style::markdown);
  std::printf("\nfloor: pinned max(up / H2D, down / D2H); pageable also up / pack + down / unpack (staging threads);\n"
              "of floor = floor / egpu; vs = CPU seconds / egpu seconds\n");
  if (csv) std::printf("\nCSV: %s\n", csv->path().c_str());
  if (!all_ok) std::printf("\nSOME RESULTS ARE WRONG OR FAILED (see the note column)\n");
  return all_ok ? 0 : 1;
}

}  // namespace egpu_bench

// egpu-bench resident: egpu::DeviceMatrix, data that stays on the GPU.
// Four measurements, each against its own floor measured in the same run:
//
//   gemm       dC = egpu::gpu(dA * dB) at N (default 8192), f32, f64, c64,
//              wall clock around the call and egpu::synchronize(), against
//              the same backend's kernel on device memory timed with events
//              (gpu::device_gemm_seconds): ratio = kernel / egpu (1.0: no
//              hidden copies or waits).
//   transfer   upload (DeviceMatrix d = A; d = A) and download
//              (d.copy_to(A)) of --transfer-mib MiB of doubles, from and
//              into pinned and pageable host matrices, against pinned
//              cudaMemcpyAsync each way (gpu::measure_bandwidth).
//   chain      --chain-calls calls on 256 x 256 doubles, products and
//              coefficient-wise expressions in turn, each reading the last:
//              the host's time per queued call (the loop without a wait),
//              the whole chain with its final wait, and the same chain
//              queued behind products that keep the GPU busy until every
//              call is queued: then only the device's time is left (its
//              kernels and the gaps between them), the floor of the chain.
//              Then the same calls recorded once with egpu::record and
//              launched as one graph: its host time, whole run and device
//              time the same way, its result checked against the calls'.
//   iterate    --steps steps of X = gpu(X + dt * (A * X).array().tanh()
//              .matrix()) with N = --iterate-n (default 4096) doubles:
//              DeviceMatrix operands; the same code on host matrices
//              through egpu::gpu; CPU Eigen on every core (fewer steps,
//              per-step time scaled). Floor: the product's kernel time per
//              step (gpu::device_gemm_seconds, own kernel), which leaves out
//              the coefficient-wise pass (so the ratio is an upper bound).
//
// Results are checked: the products against CPU Eigen on a sample of
// entries, the transfers bit for bit, the iterations against each other.
#include <egpu/egpu.hpp>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "gpu_baselines.hpp"
#include "subcommands.hpp"

namespace egpu_bench {
namespace {

const char* const kUsage =
    "usage: egpu-bench resident [options]\n"
    "  --parts P,P,...     gemm, transfer, chain, iterate (default all)\n"
    "  --n N               gemm's size (default 8192)\n"
    "  --scalars S,S,...   gemm's scalars: f32, f64, c32, c64 (default f32,f64,c64)\n"
    "  --transfer-mib M    transfer size in MiB (default 1024)\n"
    "  --chain-calls C     calls in the chain (default 1000)\n"
    "  --iterate-n N       iterate's size (default 4096)\n"
    "  --steps S           iterate's steps (default 100; CPU Eigen runs S / 10, at least 2)\n"
    "  --repeats R         timed runs, median reported (default 5)\n"
    "  --threads T         CPU Eigen threads (default: all cores)\n"
    "  --csv FILE          CSV output (default bench/results/resident-<date>-<device>.csv)\n"
    "  --csv-dir DIR       default CSV name, in DIR\n"
    "  --no-csv            table only\n";

template <class S> using Mat = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic>;

template <class S> Mat<S> random_mat(long rows, long cols, unsigned long long seed) {
  Mat<S> m(rows, cols);
  using R = typename Eigen::NumTraits<S>::Real;
  const std::size_t count = static_cast<std::size_t>(m.size()) * sizeof(S) / sizeof(R);
  fill_random(reinterpret_cast<R*>(m.data()), count, seed);
  return m;
}

struct Out {
  Table table{{"part", "case", "egpu", "floor", "floor / egpu", "note"}};
  std::unique_ptr<Csv> csv;
  RunInfo info;
  bool wrong = false;
  void add(const std::string& part, const std::string& what, double egpu_s, double floor_s, const std::string& unit,
           const std::string& note) {
    const double ratio = egpu_s > 0 && floor_s > 0 ? floor_s / egpu_s : 0;
    table.add({part, what, format("%.4g %s", egpu_s, unit.c_str()), floor_s > 0 ? format("%.4g %s", floor_s, unit.c_str()) : "-",
               floor_s > 0 ? format("%.3f", ratio) : "-", note});
    if (csv)
      csv->add({info.date, info.device, info.commit, part, what, format("%.6g", egpu_s), format("%.6g", floor_s),
                format("%.4f", ratio), unit, note});
  }
};

double wall(const std::function<void()>& f, int repeats) { return median(time_calls(f, 1, repeats)); }

// Largest |got - ref| / max|ref| over a sample of entries of A * B.
template <class S>
double sampled_error(const Mat<S>& a, const Mat<S>& b, const Mat<S>& c) {
  std::mt19937_64 rng(7);
  double err = 0, scale = 0;
  for (int s = 0; s < 256; ++s) {
    const long i = static_cast<long>(rng() % static_cast<unsigned long long>(c.rows()));
    const long j = static_cast<long>(rng() % static_cast<unsigned long long>(c.cols()));
    std::complex<long double> ref = 0;
    for (long p = 0; p < a.cols(); ++p)
      ref += std::complex<long double>(std::complex<double>(a(i, p))) * std::complex<long double>(std::complex<double>(b(p, j)));
    err = std::max(err, static_cast<double>(std::abs(std::complex<long double>(std::complex<double>(c(i, j))) - ref)));
    scale = std::max(scale, static_cast<double>(std::abs(ref)));
  }
  return err / std::max(scale, 1e-300);
}

template <class S>
void gemm_part(Out& out, long n, int repeats, const char* name) {
  const Mat<S> a = random_mat<S>(n, n, 1), b = random_mat<S>(n, n, 2);
  const egpu::DeviceMatrix<S> da(a), db(b);
  egpu::DeviceMatrix<S> dc(n, n);
  for (const egpu::Backend backend : {egpu::Backend::own, egpu::Backend::cublas}) {
    egpu::Options opt;
    opt.backend = backend;
    const double egpu_s = wall([&] {
      dc = egpu::gpu(da * db, opt);
      egpu::synchronize();
    }, repeats);
    const double kernel_s = gpu::device_gemm_seconds<S>(
        backend == egpu::Backend::own ? gpu::DeviceGemm::own : gpu::DeviceGemm::cublas, n, a.data(), b.data(), 1,
        repeats);
    const double err = sampled_error(a, b, dc.to_host());
    const double limit = 64 * n * double(std::numeric_limits<typename Eigen::NumTraits<S>::Real>::epsilon());
    if (!(err <= limit)) out.wrong = true;
    out.add("gemm", format("%s N=%ld %s", name, n, backend == egpu::Backend::own ? "own" : "cublas"), egpu_s, kernel_s,
            "s", format("%.1f TFLOP/s, error %.2g%s", (Eigen::NumTraits<S>::IsComplex ? 8.0 : 2.0) * double(n) * n * n / egpu_s / 1e12, err,
                        err <= limit ? "" : " WRONG"));
    std::fflush(stdout);
  }
}

void transfer_part(Out& out, long mib, int repeats) {
  const long rows = 8192, cols = std::max<long>(1, (mib << 20) / 8 / rows);
  const double bytes = 8.0 * rows * cols;
  const gpu::Bandwidth bw = gpu::measure_bandwidth(static_cast<std::size_t>(bytes), repeats);
  Mat<double> host = random_mat<double>(rows, cols, 3), back(rows, cols);
  egpu::DeviceMatrix<double> d(rows, cols);
  for (const bool pinned : {true, false}) {
    std::vector<egpu::PinGuard> guards;
    if (pinned) {
      guards.push_back(egpu::pin(host));
      guards.push_back(egpu::pin(back));
    }
    const char* memory = pinned ? "pinned" : "pageable";
    const double up = wall([&] {
      d = host;
      egpu::synchronize();
    }, repeats);
    back.setZero();
    const double down = wall([&] { d.copy_to(back); }, repeats);
    const bool same = std::memcmp(back.data(), host.data(), static_cast<std::size_t>(bytes)) == 0;
    if (!same) out.wrong = true;
    out.add("transfer", format("upload %.0f MiB, %s", bytes / 1048576, memory), up, bytes / bw.h2d, "s",
            format("%.1f GB/s vs pinned cudaMemcpy %.1f", bytes / up / 1e9, bw.h2d / 1e9));
    out.add("transfer", format("download %.0f MiB, %s", bytes / 1048576, memory), down, bytes / bw.d2h, "s",
            format("%.1f GB/s vs pinned cudaMemcpy %.1f%s", bytes / down / 1e9, bw.d2h / 1e9, same ? "" : " WRONG"));
    std::fflush(stdout);
  }
}

// Times `queue` (which queues the chain's calls): the host's time to queue
// them, the whole run with its final wait, and the device's time with the
// same calls queued behind products that keep the GPU busy until every one
// is queued (the busy part timed alone and taken off).
struct ChainTimes {
  double queue = 0, total = 0, device = 0;
};
ChainTimes time_chain(const std::function<void()>& queue, int repeats) {
  const long big = 4096;
  const Mat<double> hb = random_mat<double>(big, big, 6);
  const egpu::DeviceMatrix<double> dbig(hb);
  egpu::DeviceMatrix<double> dbig_out(big, big);
  auto busy = [&] {
    for (int k = 0; k < 12; ++k) dbig_out = egpu::gpu(dbig * dbig);
  };
  std::vector<double> queue_s, total_s, device_s;
  for (int r = 0; r < repeats; ++r) {
    double t0 = now_seconds();
    queue();
    const double t1 = now_seconds();
    egpu::synchronize();
    total_s.push_back(now_seconds() - t0);
    queue_s.push_back(t1 - t0);
    t0 = now_seconds();
    busy();
    egpu::synchronize();
    const double busy_s = now_seconds() - t0;
    t0 = now_seconds();
    busy();
    queue();
    const double queued = now_seconds();
    egpu::synchronize();
    const double t3 = now_seconds();
    if (queued - t0 < busy_s) device_s.push_back(t3 - t0 - busy_s);
  }
  return {median(queue_s), median(total_s), device_s.empty() ? 0 : median(device_s)};
}

void chain_part(Out& out, long calls, int repeats) {
  const long n = 256;
  const Mat<double> a = random_mat<double>(n, n, 4) / double(n), x0 = random_mat<double>(n, n, 5);
  const egpu::DeviceMatrix<double> da(a);
  egpu::DeviceMatrix<double> dx = x0, dy(n, n);
  auto chain = [&] {
    for (long c = 0; c < calls; c += 2) {
      dy = egpu::gpu(da * dx);
      dx = egpu::gpu((dx.array() + 0.01 * dy.array().tanh()).matrix());
    }
  };
  chain();
  egpu::synchronize();
  const ChainTimes each = time_chain(chain, repeats);
  const std::string what = format("%ld calls 256x256 f64", calls);
  const char* floor_note = "floor: the calls' device time behind a busy GPU";
  out.add("chain", what + ": host time per queued call", each.queue / double(calls) * 1e6, 0, "us", "");
  out.add("chain", what + ": whole chain", each.total, each.device, "s",
          each.device > 0 ? floor_note : "the busy GPU did not cover the queueing");

  // The same calls recorded once (egpu::record) and launched as one graph.
  egpu::Graph graph = egpu::record(chain);
  const Mat<double> before = dx.to_host();
  graph.launch();
  const Mat<double> recorded = dx.to_host();
  dx = before;
  chain();
  const double diff = (dx.to_host() - recorded).norm() / std::max(recorded.norm(), 1e-300);
  if (!(diff == 0)) out.wrong = true;
  const ChainTimes rec = time_chain([&] { graph.launch(); }, repeats);
  out.add("chain", what + ", recorded: host time to launch", rec.queue * 1e6, 0, "us",
          format("%zu operations in the graph", graph.calls()));
  out.add("chain", what + ", recorded: whole chain", rec.total, rec.device, "s",
          rec.device > 0 ? format("%s; %.3f x the calls' own floor; same result as the calls: %s", floor_note,
                                  rec.total / std::max(each.device, 1e-30), diff == 0 ? "yes" : "NO")
                         : "the busy GPU did not cover the queueing");
  std::fflush(stdout);
}

void iterate_part(Out& out, long n, long steps, int repeats) {
  const double dt = 0.01;
  const Mat<double> a = random_mat<double>(n, n, 7) / double(n), x0 = random_mat<double>(n, n, 8);
  const double kernel_s = gpu::device_gemm_seconds<double>(gpu::DeviceGemm::own, n, a.data(), x0.data(), 1, repeats);

  // CPU Eigen first, on a quiet host.
  const long cpu_steps = std::max<long>(2, steps / 10);
  Mat<double> xc = x0;
  const double cpu_start = now_seconds();
  for (long s = 0; s < cpu_steps; ++s) xc = (xc + dt * (a * xc).array().tanh().matrix()).eval();
  const double cpu_s = (now_seconds() - cpu_start) * double(steps) / double(cpu_steps);

  const egpu::DeviceMatrix<double> da(a);
  egpu::DeviceMatrix<double> dx(n, n);
  std::vector<double> runs;
  for (int r = 0; r < std::max(1, repeats / 2); ++r) {
    dx = x0;
    egpu::synchronize();
    const double t0 = now_seconds();
    for (long s = 0; s < steps; ++s) dx = egpu::gpu(dx + dt * (da * dx).array().tanh().matrix());
    egpu::synchronize();
    runs.push_back(now_seconds() - t0);
  }
  const double dev_s = median(runs);
  const Mat<double> x_dev = dx.to_host();

  Mat<double> x = x0;
  const double host_s = wall([&] {
    x = x0;
    for (long s = 0; s < steps; ++s) x = egpu::gpu(x + dt * (a * x).array().tanh().matrix());
  }, 1);
  const double host_diff = (x - x_dev).norm() / x_dev.norm();

  const double floor = kernel_s * double(steps);
  const bool agree = host_diff < 1e-12;
  if (!agree) out.wrong = true;
  out.add("iterate", format("%ld steps N=%ld f64, DeviceMatrix", steps, n), dev_s, floor, "s",
          "floor: the product's kernel time alone");
  out.add("iterate", format("%ld steps N=%ld f64, host matrices through egpu::gpu", steps, n), host_s, floor, "s",
          format("%.2fx the DeviceMatrix run; relative difference %.1e%s", host_s / dev_s, host_diff, agree ? "" : " WRONG"));
  out.add("iterate", format("%ld steps N=%ld f64, CPU Eigen %d threads (%ld steps timed)", steps, n, out.info.cpu_threads, cpu_steps),
          cpu_s, floor, "s", format("%.1fx the DeviceMatrix run", cpu_s / dev_s));
  std::fflush(stdout);
}

}  // namespace

int run_resident(int argc, char** argv) {
  Args args(argc, argv);
  if (print_help(args, kUsage, false)) return 0;
  const std::vector<std::string> parts = args.words("parts", {"gemm", "transfer", "chain", "iterate"});
  check_choices(parts, {"gemm", "transfer", "chain", "iterate"}, "--parts");
  const long n = args.integer("n", 8192);
  const std::vector<std::string> scalars = args.words("scalars", {"f32", "f64", "c64"});
  check_choices(scalars, {"f32", "f64", "c32", "c64"}, "--scalars");
  const long transfer_mib = args.integer("transfer-mib", 1024);
  const long calls = args.integer("chain-calls", 1000);
  const long iterate_n = args.integer("iterate-n", 4096);
  const long steps = args.integer("steps", 100);
  const int repeats = static_cast<int>(args.integer("repeats", 5));
  const int threads = static_cast<int>(args.integer("threads", 0));
  const CsvChoice csv_choice = parse_csv_options(args);
  args.finish();
  if (n < 1 || transfer_mib < 1 || calls < 2 || iterate_n < 1 || steps < 1 || repeats < 1)
    throw std::invalid_argument("sizes, counts and repeats must be positive");

  Out out;
  out.info = gather_run_info(threads);
  std::printf("egpu-bench resident: device %s, commit %s, %s; median of %d\n", out.info.device.c_str(),
              out.info.commit.c_str(), out.info.date.c_str(), repeats);
  if (!egpu::has_device()) {
    std::printf("NO USABLE GPU: egpu-bench resident measures device-resident data; SKIPPED\n");
    return 0;
  }
  out.csv = open_csv(csv_choice, "resident", out.info,
                     {"date", "device", "commit", "part", "case", "egpu", "floor", "floor_over_egpu", "unit", "note"});
  auto has = [&](const char* p) { return std::find(parts.begin(), parts.end(), p) != parts.end(); };
  if (has("gemm"))
    for (const std::string& s : scalars) {
      if (s == "f32") gemm_part<float>(out, n, repeats, "f32");
      if (s == "f64") gemm_part<double>(out, n, repeats, "f64");
      if (s == "c32") gemm_part<std::complex<float>>(out, n, repeats, "c32");
      if (s == "c64") gemm_part<std::complex<double>>(out, n, repeats, "c64");
    }
  if (has("transfer")) transfer_part(out, transfer_mib, repeats);
  if (has("chain")) chain_part(out, calls, repeats);
  if (has("iterate")) iterate_part(out, iterate_n, steps, repeats);
  out.table.print(stdout, Table::Style::markdown);
  if (out.csv) std::printf("CSV: %s\n", out.csv->path().c_str());
  return out.wrong ? 1 : 0;
}

}  // namespace egpu_bench

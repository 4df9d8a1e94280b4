// egpu-bench gemm: the own kernel family (egpu::kernels::gemm_tiled) against
// cuBLAS on device-resident data, in the same run, per scalar, shape, operand
// layout and (float) math mode.
//
// Timing: device events around each call on one stream, each call queued
// whole before it starts (so the host's launch latency is not timed, for
// either system), ours and cuBLAS in turn call by call (so a drift of the
// clocks reaches both alike), `--warmups` untimed calls of each first,
// median of `--repeats`. Inputs are uniform in [-1, 1) (never zeros),
// copied up once outside the timing; each system writes its own C, filled
// with NaN before its first call. Rates: 2mnk real flops (8mnk complex) per
// second.
//
// Errors: max_ij |C_ij - ref_ij| / max_ij |ref_ij| (|.| the complex modulus)
// against a float64 reference computed on the GPU by cuBLAS DGEMM / ZGEMM
// (pedantic math) on the same operands converted to double. For f64 / c64
// data the reference is that same fp64 cuBLAS product of the operands
// themselves, so the cuBLAS column shows how far default-math cuBLAS lies
// from pedantic cuBLAS (usually 0), and ours is measured against cuBLAS.
//
// Ops: two letters, op(A) then op(B): N (as stored, column-major), T
// (transposed: the kernel's Layout::row_major), C (conjugate transpose,
// complex only: row_major with conj). cuBLAS gets the same operations.
//
// cuBLAS variant of each row: exact rows and float tf32x3 rows against
// cublas<t>gemm with --cublas-exact math (default: CUBLAS_DEFAULT_MATH, no
// TF32), float tf32 rows against SGEMM with CUBLAS_TF32_TENSOR_OP_MATH. So a
// tf32x3 row reads directly as "rate and error against exact SGEMM on the
// same data".
#include <egpu/device.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <complex>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "bench_common.hpp"
#include "gpu_baselines.hpp"
#include "gpu_util.hpp"
#include "host_data.hpp"
#include "kernels/gemm/gemm_args.hpp"
#include "subcommands.hpp"

namespace egpu_bench {
namespace {

namespace kern = egpu::kernels;
using kern::GemmConfig;
using kern::MathMode;

const char* const kUsage =
    "usage: egpu-bench gemm [options]\n"
    "  --shapes S,S,...      MxNxK (or N for N^3) (default 4096x4096x4096,8192x8192x8192,\n"
    "                        4095x4097x511,8192x64x8192,64x8192x8192,8192x8192x64)\n"
    "  --quick               the default shapes without 8192^3, and --repeats 5 unless given\n"
    "  --scalars S,S,...     f32, f64, c32, c64 (default all)\n"
    "  --ops O,O,...         op(A)op(B) letters: N, T, C (conjugate transpose, complex only)\n"
    "                        (default NN,NT,TN,TT,CN,NC; C cases are skipped for f32/f64)\n"
    "  --ops-at S,S,...      shapes that run every --ops combination; the other shapes run\n"
    "                        NN only; \"all\": every shape (default 4096x4096x4096)\n"
    "  --math M,M,...        float math modes of the own kernel: exact, tf32, tf32x3 (default\n"
    "                        all; other scalars always run exact)\n"
    "  --configs C,C,...     own-kernel configurations: automatic, a configuration's name, or\n"
    "                        \"all\" (automatic and every selectable one) (default automatic)\n"
    "  --cublas-exact M      math of the exact cuBLAS rows: default (CUBLAS_DEFAULT_MATH) or\n"
    "                        pedantic (CUBLAS_PEDANTIC_MATH) (default default)\n"
    "  --repeats R           timed runs per system, median reported (default 7)\n"
    "  --warmups W           untimed runs first (default 2)\n"
    "  --csv FILE            CSV output (default bench/results/gemm-<date>-<device>.csv in the\n"
    "                        source tree, else ./; rows are appended)\n"
    "  --csv-dir DIR         default CSV name, in DIR\n"
    "  --no-csv              table only\n"
    "\n"
    "Rates are device-resident (events around each call, queued before it starts;\n"
    "ours and cuBLAS timed in turn; median of repeats). Errors are\n"
    "max|C - ref| / max|ref| against an fp64 cuBLAS product of the same operands (for f64/c64\n"
    "that reference is pedantic-math cuBLAS itself). Exact and tf32x3 rows compare with exact\n"
    "cuBLAS, tf32 rows with cuBLAS TF32 (CUBLAS_TF32_TENSOR_OP_MATH).\n";

const std::vector<std::string> kDefaultShapes = {"4096x4096x4096", "8192x8192x8192", "4095x4097x511",
                                                 "8192x64x8192",   "64x8192x8192",   "8192x8192x64"};
const std::vector<std::string> kAllOps = {"NN", "NT", "TN", "TT", "CN", "NC"};
const std::vector<std::string> kAllMath = {"exact", "tf32", "tf32x3"};

struct Shape {
  long m = 0, n = 0, k = 0;
  std::string text() const { return format("%ldx%ldx%ld", m, n, k); }
};

Shape parse_shape(const std::string& text) {
  const std::vector<std::string> parts = split(text, 'x');
  std::vector<long> dims;
  for (const std::string& part : parts) {
    char* end = nullptr;
    const long v = std::strtol(part.c_str(), &end, 10);
    if (part.empty() || *end != '\0' || v < 1 || v > 65536)
      throw std::invalid_argument("--shapes: \"" + text + "\" is not MxNxK (or N) with sizes 1..65536");
    dims.push_back(v);
  }
  if (dims.size() == 1) return {dims[0], dims[0], dims[0]};
  if (dims.size() != 3) throw std::invalid_argument("--shapes: \"" + text + "\" is not MxNxK (or N)");
  return {dims[0], dims[1], dims[2]};
}

MathMode parse_math(const std::string& name) {
  return name == "tf32" ? MathMode::tf32 : name == "tf32x3" ? MathMode::tf32x3 : MathMode::exact;
}

struct Settings {
  std::vector<Shape> shapes;
  std::vector<std::string> scalars, ops, math, configs;
  std::vector<std::string> ops_at;  // shape texts; {"all"}: every shape
  bool cublas_pedantic = false;
  int repeats = 7, warmups = 2;

  bool all_ops_at(const Shape& s) const {
    for (const std::string& text : ops_at)
      if (text == "all" || parse_shape(text).text() == s.text()) return true;
    return false;
  }
};

// One timed system on one case.
struct Timing {
  double seconds = 0;  // median; 0: not timed
  double error = -1;   // max|C - ref| / max|ref|; < 0: not measured
  std::string failure;
};

// One row: the own kernel in one math mode and configuration, next to the
// cuBLAS variant it is compared with.
struct Row {
  std::string scalar, shape, ops, math, config, cublas_name;
  double flops = 0, tolerance = 0;
  Timing ours, cublas;
  bool cublas_is_reference = false;
};

// A side of the product: the kernel's layout and conj flag, cuBLAS's op.
struct Side {
  kern::Layout layout = kern::Layout::col_major;
  bool conj = false;
  cublasOperation_t op = CUBLAS_OP_N;
};

Side side(char letter) {
  if (letter == 'T') return {kern::Layout::row_major, false, CUBLAS_OP_T};
  if (letter == 'C') return {kern::Layout::row_major, true, CUBLAS_OP_C};
  return {};
}

template <class S> constexpr bool kComplex = !std::is_same_v<S, Real<S>>;
// The reference's scalar: double or std::complex<double>.
template <class S> using Wide = std::conditional_t<kComplex<S>, std::complex<double>, double>;

template <class S>
const char* cublas_name() {
  if constexpr (std::is_same_v<S, float>) return "sgemm";
  else if constexpr (std::is_same_v<S, double>) return "dgemm";
  else if constexpr (std::is_same_v<S, std::complex<float>>) return "cgemm";
  else return "zgemm";
}

// The names of every configuration the kernel family offers for K.
template <class K>
void add_config_names(std::vector<std::string>& names) {
  for (const std::string& math : kAllMath)
    for (GemmConfig c : kern::selectable_configs<K>(parse_math(math)))
      if (std::find(names.begin(), names.end(), kern::config_name(c)) == names.end())
        names.push_back(kern::config_name(c));
}

template <class S>
void fill_random(std::vector<S>& v, unsigned long long seed) {
  egpu_bench::fill_random(reinterpret_cast<Real<S>*>(v.data()), v.size() * sizeof(S) / sizeof(Real<S>), seed);
}

template <class S>
std::vector<Wide<S>> widen(const std::vector<S>& v) {
  std::vector<Wide<S>> w(v.size());
  parallel_for(v.size(), [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) w[i] = static_cast<Wide<S>>(v[i]);
  });
  return w;
}

// max|c - ref| / max|ref|; NaN when c holds a NaN.
template <class S, class W>
double max_relative_error(const std::vector<S>& c, const std::vector<W>& ref) {
  double diff = 0, norm = 0;
  bool nan = false;
  std::mutex lock;
  parallel_for(ref.size(), [&](std::size_t begin, std::size_t end) {
    double d = 0, r = 0;
    bool n = false;
    for (std::size_t i = begin; i < end; ++i) {
      const double e = std::abs(static_cast<W>(c[i]) - ref[i]);
      n = n || std::isnan(e);
      d = std::max(d, e);
      r = std::max(r, static_cast<double>(std::abs(ref[i])));
    }
    std::lock_guard<std::mutex> guard(lock);
    diff = std::max(diff, d);
    norm = std::max(norm, r);
    nan = nan || n;
  });
  if (nan) return std::numeric_limits<double>::quiet_NaN();
  return norm > 0 ? diff / norm : diff;
}

// Above this error a result is reported WRONG rather than imprecise: far
// above rounding (exact, tf32x3: eps(T) sqrt(k) growth; tf32: operands
// rounded to 10 mantissa bits), far below what a wrong index or a lost
// k-slice gives.
template <class S>
double tolerance(MathMode math, long k) {
  if (math == MathMode::tf32) return 1.0 / 64;
  return 64.0 * static_cast<double>(std::numeric_limits<Real<S>>::epsilon()) * std::sqrt(static_cast<double>(k));
}

template <class S>
std::vector<S> download(const gpu::DeviceMemory& d, std::size_t count, cudaStream_t stream) {
  std::vector<S> h(count);
  gpu::check(cudaMemcpyAsync(h.data(), d.p, count * sizeof(S), cudaMemcpyDeviceToHost, stream), "download C");
  gpu::check(cudaStreamSynchronize(stream), "download C");
  return h;
}

template <class T>
void upload(gpu::DeviceMemory& d, const std::vector<T>& h, cudaStream_t stream) {
  gpu::check(cudaMemcpyAsync(d.p, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice, stream), "upload");
  gpu::check(cudaStreamSynchronize(stream), "upload");
}

// One shape and op combination of scalar S: the reference once, then every
// (math, config) row of the own kernel and the cuBLAS variants they need.
template <class S>
std::vector<Row> run_case(const std::string& scalar, const Shape& shape, const std::string& ops,
                          const Settings& settings) {
  using K = typename gpu::kernel_type<S>::type;
  using W = Wide<S>;
  const long m = shape.m, n = shape.n, k = shape.k;
  const Side sa = side(ops[0]), sb = side(ops[1]);
  const int lda = static_cast<int>(ops[0] == 'N' ? m : k);
  const int ldb = static_cast<int>(ops[1] == 'N' ? k : n);
  const std::size_t size_a = static_cast<std::size_t>(m) * static_cast<std::size_t>(k);
  const std::size_t size_b = static_cast<std::size_t>(k) * static_cast<std::size_t>(n);
  const std::size_t size_c = static_cast<std::size_t>(m) * static_cast<std::size_t>(n);

  gpu::check(cudaSetDevice(gpu::device_index()), "cudaSetDevice");
  gpu::Stream stream;
  gpu::Cublas cublas(stream.s);
  std::vector<S> ha(size_a), hb(size_b);
  const unsigned long long seed = 1000003ull * static_cast<unsigned long long>(m + 7 * n + 13 * k);
  fill_random(ha, seed + 1);
  fill_random(hb, seed + 2);
  gpu::DeviceMemory da(size_a * sizeof(S), stream.s), db(size_b * sizeof(S), stream.s);
  gpu::DeviceMemory dc(size_c * sizeof(S), stream.s);
  upload(da, ha, stream.s);
  upload(db, hb, stream.s);

  // The fp64 reference, pedantic cuBLAS on operands widened on the host.
  std::vector<W> ref;
  {
    gpu::check(cublasSetMathMode(cublas.h, CUBLAS_PEDANTIC_MATH), "cublasSetMathMode");
    gpu::DeviceMemory dref(size_c * sizeof(W), stream.s);
    auto reference = [&](const void* a, const void* b) {
      gpu::check(gpu::cublas_gemm(cublas.h, sa.op, sb.op, static_cast<int>(m), static_cast<int>(n),
                                  static_cast<int>(k), W(1), static_cast<const W*>(a), lda,
                                  static_cast<const W*>(b), ldb, W(0), static_cast<W*>(dref.p),
                                  static_cast<int>(m)),
                 "reference gemm");
    };
    if constexpr (std::is_same_v<S, W>) {
      reference(da.p, db.p);
    } else {
      gpu::DeviceMemory da64(size_a * sizeof(W), stream.s), db64(size_b * sizeof(W), stream.s);
      upload(da64, widen(ha), stream.s);
      upload(db64, widen(hb), stream.s);
      reference(da64.p, db64.p);
    }
    ref = download<W>(dref, size_c, stream.s);
  }

  // Times ours and cuBLAS in turn (gpu::time_in_turn), each writing its own
  // C, poisoned with NaN first, then measures both C's errors. A system whose
  // first call fails is reported FAILED and the other is timed alone.
  gpu::DeviceMemory dc_cublas(size_c * sizeof(S), stream.s);
  auto measure = [&](const std::function<void()>& ours, const std::function<void()>& theirs) {
    std::array<Timing, 2> t;
    const std::array<const gpu::DeviceMemory*, 2> out{&dc, &dc_cublas};
    const std::array<const std::function<void()>*, 2> system{&ours, &theirs};
    std::vector<std::size_t> live;  // the systems whose first call ran
    for (std::size_t i = 0; i < 2; ++i) {
      try {
        gpu::check(cudaMemsetAsync(out[i]->p, 0xff, size_c * sizeof(S), stream.s), "cudaMemset C");  // NaN
        (*system[i])();
        gpu::check(cudaStreamSynchronize(stream.s), "first call");
        live.push_back(i);
      } catch (const std::exception& e) {
        t[i].failure = e.what();
        (void)cudaStreamSynchronize(stream.s);
      }
    }
    std::vector<std::function<void()>> timed;
    for (std::size_t i : live) timed.push_back(*system[i]);
    try {
      const std::vector<std::vector<double>> seconds =
          gpu::time_in_turn(stream.s, settings.warmups, settings.repeats, timed);
      for (std::size_t j = 0; j < live.size(); ++j) {
        t[live[j]].seconds = median(seconds[j]);
        t[live[j]].error = max_relative_error(download<S>(*out[live[j]], size_c, stream.s), ref);
      }
    } catch (const std::exception& e) {
      for (std::size_t i : live) {
        t[i].seconds = 0;
        t[i].failure = e.what();
      }
      (void)cudaStreamSynchronize(stream.s);
    }
    return t;
  };

  // The cuBLAS variant of a math mode: its name and a call of it.
  auto cublas_variant = [&](MathMode math) {
    const bool tf32 = math == MathMode::tf32 && std::is_same_v<S, float>;
    const std::string name = std::string(cublas_name<S>()) +
                             (tf32 ? "-tf32" : settings.cublas_pedantic ? "-pedantic" : "");
    const cublasMath_t mode = tf32                      ? CUBLAS_TF32_TENSOR_OP_MATH
                              : settings.cublas_pedantic ? CUBLAS_PEDANTIC_MATH
                                                         : CUBLAS_DEFAULT_MATH;
    std::function<void()> call = [&, mode] {
      gpu::check(cublasSetMathMode(cublas.h, mode), "cublasSetMathMode");
      gpu::check(gpu::cublas_gemm(cublas.h, sa.op, sb.op, static_cast<int>(m), static_cast<int>(n),
                                  static_cast<int>(k), S(1), static_cast<const S*>(da.p), lda,
                                  static_cast<const S*>(db.p), ldb, S(0), static_cast<S*>(dc_cublas.p),
                                  static_cast<int>(m)),
                 "cublas gemm");
    };
    return std::make_pair(name, call);
  };

  std::vector<Row> rows;
  const std::vector<std::string> maths = std::is_same_v<S, float> ? settings.math : std::vector<std::string>{"exact"};
  for (const std::string& math_name : maths) {
    const MathMode math = parse_math(math_name);
    std::vector<GemmConfig> configs;
    for (const std::string& wanted : settings.configs) {
      if (wanted == "automatic" || wanted == "all") configs.push_back(GemmConfig::automatic);
      for (GemmConfig c : kern::selectable_configs<K>(math))
        if (wanted == "all" || wanted == kern::config_name(c)) configs.push_back(c);
    }
    for (GemmConfig config : configs) {
      Row row;
      row.scalar = scalar;
      row.shape = shape.text();
      row.ops = ops;
      row.math = math_name;
      row.config = kern::config_name(config);
      row.flops = (kComplex<S> ? 8.0 : 2.0) * static_cast<double>(m) * static_cast<double>(n) *
                  static_cast<double>(k);
      row.tolerance = tolerance<S>(math, k);
      kern::GemmArgs<K> args;
      args.m = m;
      args.n = n;
      args.k = k;
      args.a = static_cast<const K*>(da.p);
      args.lda = lda;
      args.a_layout = sa.layout;
      args.conj_a = sa.conj;
      args.b = static_cast<const K*>(db.p);
      args.ldb = ldb;
      args.b_layout = sb.layout;
      args.conj_b = sb.conj;
      args.c = static_cast<K*>(dc.p);
      args.ldc = m;
      args.alpha = gpu::one<K>();
      args.beta = gpu::zero<K>();
      args.beta_is_zero = true;
      args.math = math;
      const auto [cublas_call_name, cublas_call] = cublas_variant(math);
      row.cublas_name = cublas_call_name;
      const std::array<Timing, 2> t =
          measure([&] { kern::gemm_tiled<K>(args, static_cast<void*>(stream.s), config); }, cublas_call);
      row.ours = t[0];
      row.cublas = t[1];
      rows.push_back(row);
      std::fprintf(stderr, "  %s %s %s %s %s: ours %.4g s, %s %.4g s\n", scalar.c_str(), row.shape.c_str(),
                   ops.c_str(), math_name.c_str(), row.config.c_str(), row.ours.seconds, row.cublas_name.c_str(),
                   row.cublas.seconds);
    }
  }
  return rows;
}

std::vector<Row> run_case(const std::string& scalar, const Shape& shape, const std::string& ops,
                          const Settings& settings) {
  if (scalar == "f32") return run_case<float>(scalar, shape, ops, settings);
  if (scalar == "f64") return run_case<double>(scalar, shape, ops, settings);
  if (scalar == "c32") return run_case<std::complex<float>>(scalar, shape, ops, settings);
  return run_case<std::complex<double>>(scalar, shape, ops, settings);  // c64, checked in parse()
}

Settings parse(Args& args) {
  Settings s;
  const bool quick = args.flag("quick");
  std::vector<std::string> shapes = kDefaultShapes;
  if (quick) shapes.erase(std::find(shapes.begin(), shapes.end(), "8192x8192x8192"));
  for (const std::string& text : args.words("shapes", shapes)) s.shapes.push_back(parse_shape(text));
  s.scalars = args.words("scalars", {"f32", "f64", "c32", "c64"});
  s.ops = args.words("ops", kAllOps);
  s.ops_at = args.words("ops-at", {"4096x4096x4096"});
  s.math = args.words("math", kAllMath);
  s.configs = args.words("configs", {"automatic"});
  const std::string cublas_exact = args.text("cublas-exact", "default");
  s.repeats = static_cast<int>(args.integer("repeats", quick ? 5 : 7));
  s.warmups = static_cast<int>(args.integer("warmups", 2));
  check_choices(s.scalars, {"f32", "f64", "c32", "c64"}, "scalars");
  check_choices(s.math, kAllMath, "math");
  check_choices({cublas_exact}, {"default", "pedantic"}, "cublas-exact");
  s.cublas_pedantic = cublas_exact == "pedantic";
  for (const std::string& op : s.ops)
    if (op.size() != 2 || std::string("NTC").find(op[0]) == std::string::npos ||
        std::string("NTC").find(op[1]) == std::string::npos)
      throw std::invalid_argument("--ops: \"" + op + "\" is not two of N, T, C");
  for (const std::string& text : s.ops_at)
    if (text != "all") parse_shape(text);
  std::vector<std::string> config_names = {"automatic", "all"};
  add_config_names<float>(config_names);
  add_config_names<double>(config_names);
  add_config_names<kern::cfloat>(config_names);
  add_config_names<kern::cdouble>(config_names);
  check_choices(s.configs, config_names, "configs");
  if (s.shapes.empty() || s.scalars.empty() || s.ops.empty() || s.math.empty() || s.configs.empty())
    throw std::invalid_argument("--shapes, --scalars, --ops, --math and --configs must not be empty");
  if (s.repeats < 1) throw std::invalid_argument("--repeats must be at least 1");
  if (s.warmups < 0) throw std::invalid_argument("--warmups must not be negative");
  return s;
}

std::string rate(const Row& row, const Timing& t) {
  return t.seconds > 0 ? format("%.2f", row.flops / t.seconds / 1e12) : "-";
}

std::string error_cell(const Timing& t) {
  return t.error >= 0 || std::isnan(t.error) ? format("%.2e", t.error) : "-";
}

// "ok", "WRONG" (error above the row's tolerance, NaN included), "FAILED".
std::string status(const Timing& t, double tolerance) {
  if (!t.failure.empty() || t.seconds <= 0) return "FAILED";
  return t.error <= tolerance ? "ok" : "WRONG";
}

}  // namespace

int run_gemm(int argc, char** argv) {
  Args args(argc, argv);
  if (print_help(args, kUsage, false)) return 0;
  const Settings settings = parse(args);
  const CsvChoice csv_choice = parse_csv_options(args);
  args.finish();

  const RunInfo info = gather_run_info(0);
  std::printf("egpu-bench gemm: device %s, commit %s, %s\n", info.device.c_str(), info.commit.c_str(),
              info.date.c_str());
  std::printf("device-resident, events per call (queued before it starts; ours and cuBLAS in turn), median of %d after %d warm-up(s); exact cuBLAS math: %s\n",
              settings.repeats, settings.warmups, settings.cublas_pedantic ? "pedantic" : "default");
  if (!egpu::has_device()) {
    std::printf("NO USABLE GPU: egpu-bench gemm measures device-resident products on a GPU; SKIPPED\n");
    return 0;
  }
  std::fflush(stdout);

  const std::unique_ptr<Csv> csv =
      open_csv(csv_choice, "gemm", info,
               {"date", "device", "commit", "scalar", "shape", "ops", "math", "config", "cublas", "ours_tflops",
                "cublas_tflops", "ratio", "ours_seconds", "cublas_seconds", "ours_error", "cublas_error", "error_ref",
                "repeats", "status", "note"});

  Table table({"scalar", "shape", "ops", "math", "config", "ours TFLOP/s", "cuBLAS", "cuBLAS TFLOP/s",
               "ours/cuBLAS", "ours err", "cuBLAS err", "status"});
  bool all_ok = true;
  std::string context_lost;  // the case after which every CUDA call fails (an illegal address, a trap)
  for (const std::string& scalar : settings.scalars) {
    const bool complex = scalar == "c32" || scalar == "c64";
    for (const Shape& shape : settings.shapes) {
      for (const std::string& ops : settings.ops) {
        if (!complex && ops.find('C') != std::string::npos) continue;
        if (ops != "NN" && !settings.all_ops_at(shape)) continue;
        if (!context_lost.empty()) continue;
        std::vector<Row> rows;
        try {
          rows = run_case(scalar, shape, ops, settings);
        } catch (const std::exception& e) {
          std::fprintf(stderr, "egpu-bench gemm: %s %s %s: %s\n", scalar.c_str(), shape.text().c_str(), ops.c_str(),
                       e.what());
          Row row;
          row.scalar = scalar;
          row.shape = shape.text();
          row.ops = ops;
          row.ours.failure = row.cublas.failure = e.what();
          rows.push_back(row);
        }
        if (const cudaError_t sticky = cudaDeviceSynchronize(); sticky != cudaSuccess)
          context_lost = scalar + " " + shape.text() + " " + ops + " (" + cudaGetErrorString(sticky) + ")";
        for (const Row& row : rows) {
          const std::string ours_status = status(row.ours, row.tolerance);
          const std::string cublas_status = status(row.cublas, row.tolerance);
          const std::string row_status = ours_status == "ok" && cublas_status == "ok"
                                             ? "ok"
                                             : "ours " + ours_status + ", cuBLAS " + cublas_status;
          all_ok = all_ok && row_status == "ok";
          const bool both = row.ours.seconds > 0 && row.cublas.seconds > 0;
          const std::string ratio = both ? format("%.2f", row.cublas.seconds / row.ours.seconds) : "-";
          table.add({row.scalar, row.shape, row.ops, row.math, row.config, rate(row, row.ours), row.cublas_name,
                     rate(row, row.cublas), ratio, error_cell(row.ours), error_cell(row.cublas), row_status});
          if (!csv) continue;
          std::string note = row.ours.failure.empty() ? row.cublas.failure : row.ours.failure;
          for (char& ch : note)
            if (ch == ',' || ch == '\n') ch = ';';
          csv->add({info.date, info.device, info.commit, row.scalar, row.shape, row.ops, row.math, row.config,
                    row.cublas_name, rate(row, row.ours), rate(row, row.cublas), ratio,
                    row.ours.seconds > 0 ? format("%.6g", row.ours.seconds) : "",
                    row.cublas.seconds > 0 ? format("%.6g", row.cublas.seconds) : "", error_cell(row.ours),
                    error_cell(row.cublas), complex ? "zgemm-fp64" : "dgemm-fp64",
                    std::to_string(settings.repeats), row_status, note});
        }
      }
    }
  }
  std::printf("\nours = egpu::kernels::gemm_tiled; ours/cuBLAS = cuBLAS seconds / ours seconds (> 1: ours faster);\n"
              "err = max|C - ref| / max|ref| vs fp64 cuBLAS (pedantic) on the same operands\n\n");
  table.print(stdout, Table::Style::markdown);
  if (csv) std::printf("\nCSV: %s\n", csv->path().c_str());
  if (!context_lost.empty())
    std::printf("\nCUDA CONTEXT LOST in %s: the cases after it were not run\n", context_lost.c_str());
  all_ok = all_ok && context_lost.empty();
  if (!all_ok) std::printf("\nSOME RESULTS ARE WRONG OR FAILED (see the status column)\n");
  return all_ok ? 0 : 1;
}

}  // namespace egpu_bench

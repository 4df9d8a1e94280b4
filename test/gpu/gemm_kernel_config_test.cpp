// The own GEMM kernel family called directly (egpu::kernels::gemm_tiled on
// device memory), every configuration selectable_configs<T>(math) lists run
// explicitly plus the automatic choice, for float (math exact, tf32,
// tf32x3), double, complex<float> and complex<double> (exact): every layout
// of A and B, conjugation of either side, edge shapes (sizes below a tile,
// not multiples of 8..128, zero sizes, k = 0 with beta), skinny long-k
// shapes, padded and odd leading dimensions, base pointers one element
// past an aligned address, beta_is_zero with C poisoned with NaN and beta
// != 0 with C read.
//
// Each result is compared per element with an Eigen reference in double
// (complex<double>), against
//   bound_ij = f * (coef * |alpha| * ||a_i.|| ||b_.j|| + 2 eps(T) |beta| |c0_ij|),
// f = 1 real, 2 complex, ||a_i.|| and ||b_.j|| the 2-norms of row i of op(A)
// and column j of op(B) (>= sum_p |a_ip| |b_pj|, the classical bound's
// scale); passes at |C_ij - ref_ij| <= bound_ij. coef:
//   exact   eps(T) * (k + 2)                          (as bench/gemm_probe.cu)
//   tf32    2 * 2^-10 + 2 * eps(float) * (k + 2)
//           each operand rounded to 10 mantissa bits (at most 2^-10 relative,
//           truncation included) puts 2 * 2^-10 on each product; fp32
//           accumulation on tensor cores, whose rounding is not specified as
//           round-to-nearest, gets twice the exact term
//   tf32x3  8 * 2^-20 + 2 * eps(float) * (k + 2)
//           the dropped small*small product and the rounding of the small
//           parts leave about 3 * 2^-20 per product; three products per term
//           accumulate in fp32 (fp32-level: the accumulation term dominates
//           from k of about 30 on)
// Elements of C outside the m x n block (padding rows up to ldc, the
// element before the base pointer, guard elements after the end) must keep
// their bits. A and B padding holds NaN: reading it into a sum shows.
//
// Cases with small shapes run each (math, configuration) on its own data;
// the long-k and many-tile cases run every one on the same data, against one
// reference. Which combinations run is fixed (its own generator, fixed
// seed); the data are fresh each run (egpu_test::rng(), seed printed,
// EGPU_TEST_SEED replays). EGPU_TEST_SCALE < 1 keeps each case that brings
// a (math, configuration) not run yet in its test, and that fraction of the
// others (0.05 under compute-sanitizer); > 1 adds random edge shapes.
// Skipped (reported as such by CTest) without a usable GPU.
#define BOOST_TEST_MODULE gemm_kernel_config
#include <boost/mpl/list.hpp>
#include <boost/test/unit_test.hpp>

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/gemm/device/gemm_complex_as_real.hpp"
#include "kernels/gemm/gemm_args.hpp"
#include "kernels/gemm/gemm_mma_config.hpp"
#include "kernels/gemm/gemm_tiled_choice.hpp"
#include "support/test_support.hpp"

using namespace egpu_test;
namespace kern = egpu::kernels;
using kern::GemmConfig;
using kern::Layout;
using kern::MathMode;
using Scalars = boost::mpl::list<float, double, std::complex<float>, std::complex<double>>;

namespace {

// ---- scalars ------------------------------------------------------------

template <class S> struct kernel_scalar { using type = S; };
template <> struct kernel_scalar<std::complex<float>> { using type = kern::cfloat; };
template <> struct kernel_scalar<std::complex<double>> { using type = kern::cdouble; };
template <class S> using kernel_t = typename kernel_scalar<S>::type;

template <class S> kernel_t<S> to_kernel(S v) {
  if constexpr (is_complex_v<S>) return {v.real(), v.imag()};
  else return v;
}

const char* math_name(MathMode m) {
  return m == MathMode::tf32 ? "tf32" : m == MathMode::tf32x3 ? "tf32x3" : "exact";
}

template <class S> std::vector<MathMode> math_modes() {
  if constexpr (std::is_same_v<S, float>) return {MathMode::exact, MathMode::tf32, MathMode::tf32x3};
  else return {MathMode::exact};
}

// coef of the bound (see the top of the file).
template <class S> double bound_coef(MathMode math, Index k) {
  const double eps = static_cast<double>(std::numeric_limits<real_t<S>>::epsilon());
  const double kk = static_cast<double>(k + 2);
  if (math == MathMode::tf32) return 2.0 * std::ldexp(1.0, -10) + 2.0 * eps * kk;
  if (math == MathMode::tf32x3) return 8.0 * std::ldexp(1.0, -20) + 2.0 * eps * kk;
  return eps * kk;
}

// ---- cases --------------------------------------------------------------

// What the kernel is asked: shape, layouts, strides, beta mode.
struct Case {
  Index m = 0, n = 0, k = 0;
  Layout a_layout = Layout::col_major, b_layout = Layout::col_major;
  bool conj_a = false, conj_b = false;
  Index lda_pad = 0, ldb_pad = 0, ldc_pad = 0;  // leading dimension beyond the minimum
  Index offset = 0;                             // elements from the allocation to each base pointer
  bool beta_is_zero = true;
  bool real_beta = false;  // complex scalars: beta on the real axis
};

// How the kernel computes it.
struct Variant {
  MathMode math = MathMode::exact;
  GemmConfig config = GemmConfig::automatic;
  bool operator==(const Variant& o) const { return math == o.math && config == o.config; }
};

// One case on one set of data, run under each variant against one reference.
struct Job {
  Case c;
  std::vector<Variant> variants;
};

std::string describe(const Case& c, const Variant& v) {
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "math %s config %s m=%lld n=%lld k=%lld A %s%s B %s%s pads lda+%lld ldb+%lld ldc+%lld offset %lld %s",
                math_name(v.math), kern::config_name(v.config), static_cast<long long>(c.m),
                static_cast<long long>(c.n), static_cast<long long>(c.k),
                c.a_layout == Layout::col_major ? "col" : "row", c.conj_a ? "+conj" : "",
                c.b_layout == Layout::col_major ? "col" : "row", c.conj_b ? "+conj" : "",
                static_cast<long long>(c.lda_pad), static_cast<long long>(c.ldb_pad),
                static_cast<long long>(c.ldc_pad), static_cast<long long>(c.offset),
                c.beta_is_zero ? "beta_is_zero (C = NaN)" : "beta != 0");
  return buf;
}

// Every math mode of S with the automatic choice and each configuration it
// can return.
template <class S> std::vector<Variant> all_variants() {
  std::vector<Variant> all;
  for (MathMode math : math_modes<S>()) {
    all.push_back({math, GemmConfig::automatic});
    for (GemmConfig c : kern::selectable_configs<kernel_t<S>>(math))
      if (std::find(all.begin(), all.end(), Variant{math, c}) == all.end()) all.push_back({math, c});
  }
  return all;
}

// Chooses the combinations: fixed seed, so every run covers the same ones.
std::mt19937_64& picker() {
  static std::mt19937_64 gen(0x6b65726e656c31ull);
  return gen;
}
Index pick(Index lo, Index hi) { return std::uniform_int_distribution<Index>(lo, hi)(picker()); }
template <class V> auto pick_from(const V& values) {
  return values[static_cast<std::size_t>(pick(0, Index(values.size()) - 1))];
}

const std::vector<Index> kEdgeSizes = {1, 7, 31, 33, 65, 127, 129, 257, 300};

// Random layout, conjugation (complex), padding, offset and beta mode.
template <class S> Case random_case(Index m, Index n, Index k) {
  static const std::vector<Index> pads = {0, 0, 1, 3, 4, 8, 13};
  Case c;
  c.m = m;
  c.n = n;
  c.k = k;
  c.a_layout = pick(0, 1) ? Layout::row_major : Layout::col_major;
  c.b_layout = pick(0, 1) ? Layout::row_major : Layout::col_major;
  c.conj_a = is_complex_v<S> && pick(0, 1);
  c.conj_b = is_complex_v<S> && pick(0, 1);
  c.lda_pad = pick_from(pads);
  c.ldb_pad = pick_from(pads);
  c.ldc_pad = pick_from(pads);
  c.offset = pick(0, 2) == 0 ? 1 : 0;
  c.beta_is_zero = pick(0, 1) == 0;
  return c;
}

// Under EGPU_TEST_SCALE < 1: every job that brings a variant not run yet,
// and that fraction of the others, the same ones every run.
std::vector<Job> thin_out(const std::vector<Job>& jobs) {
  const double scale = test_scale();
  if (scale >= 1) return jobs;
  std::vector<Job> kept;
  std::vector<Variant> seen;
  for (const Job& job : jobs) {
    bool brings_new = false;
    for (const Variant& v : job.variants)
      if (std::find(seen.begin(), seen.end(), v) == seen.end()) {
        seen.push_back(v);
        brings_new = true;
      }
    if (brings_new || std::bernoulli_distribution(scale)(picker())) kept.push_back(job);
  }
  return kept;
}

// ---- device memory --------------------------------------------------------

void cuda_check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    (void)cudaGetLastError();
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
  }
}

struct DeviceBuffer {
  void* p = nullptr;
  explicit DeviceBuffer(std::size_t bytes) {
    cuda_check(cudaMalloc(&p, std::max<std::size_t>(bytes, 1)), "cudaMalloc");
  }
  ~DeviceBuffer() { cudaFree(p); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

struct Stream {
  cudaStream_t s = nullptr;
  Stream() { cuda_check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate"); }
  ~Stream() { cudaStreamDestroy(s); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
};

// A column-major rows x cols block inside a host buffer: `offset` elements
// of lead-in, leading dimension ld, `kGuard` elements after the last column.
// Everything outside the block is NaN.
constexpr Index kGuard = 3;

template <class S> struct Operand {
  Index rows, cols, ld, offset;
  std::vector<S> host;
  Operand(Index r, Index c, Index pad, Index off) : rows(r), cols(c), ld(std::max<Index>(r, 1) + pad), offset(off) {
    host.assign(static_cast<std::size_t>(offset + ld * cols + kGuard), nan_value<S>());
  }
  S& at(Index i, Index j) { return host[static_cast<std::size_t>(offset + i + j * ld)]; }
  bool inside(std::size_t index) const {
    const Index q = static_cast<Index>(index) - offset;
    return q >= 0 && q < ld * cols && q % ld < rows;
  }
};

// ---- one job ---------------------------------------------------------------

struct Outcome {
  bool ok = false;
  double ratio = 0;  // worst |C - ref| / bound
  std::string text;
};

// One line per (scalar, math, configuration) at the end of the run.
struct PrintSummary {
  ~PrintSummary() {
    if (tallies().empty()) return;
    std::printf("gemm_kernel_config summary (worst |C - ref| / bound, limit 1):\n");
    for (const auto& [name, t] : tallies())
      std::printf("  %-40s %5ld cases, worst %.3g\n", name.c_str(), t.cases, t.worst);
  }
};
BOOST_TEST_GLOBAL_FIXTURE(PrintSummary);

// Host operands, the double reference and the per-element scale of the
// bound: sum_p |a_ip| |b_pj| <= ||row i of op(A)|| ||column j of op(B)||
// (Cauchy-Schwarz: O((m + n) k) instead of a second product, at most about
// 10% looser on this data).
template <class S> struct Problem {
  using W = wider_t<S>;
  using Mat = Eigen::Matrix<W, Eigen::Dynamic, Eigen::Dynamic>;
  Case c;
  Operand<S> a, b, c0;
  S alpha, beta;
  Mat ref;
  Eigen::VectorXd a_rows, b_cols;  // 2-norms of op(A)'s rows, op(B)'s columns

  explicit Problem(const Case& cs)
      : c(cs),
        a(cs.a_layout == Layout::col_major ? cs.m : cs.k, cs.a_layout == Layout::col_major ? cs.k : cs.m,
          cs.lda_pad, cs.offset),
        b(cs.b_layout == Layout::col_major ? cs.k : cs.n, cs.b_layout == Layout::col_major ? cs.n : cs.k,
          cs.ldb_pad, cs.offset),
        c0(cs.m, cs.n, cs.ldc_pad, cs.offset) {
    for (Operand<S>* x : {&a, &b})
      for (Index j = 0; j < x->cols; ++j)
        for (Index i = 0; i < x->rows; ++i) x->at(i, j) = random_scalar<S>();
    if (!c.beta_is_zero)
      for (Index j = 0; j < c0.cols; ++j)
        for (Index i = 0; i < c0.rows; ++i) c0.at(i, j) = random_scalar<S>();
    alpha = random_scalar<S>();
    beta = c.beta_is_zero ? S(0) : random_scalar<S>();
    if constexpr (is_complex_v<S>)
      if (c.real_beta) beta = S(beta.real(), 0);

    const bool a_col = c.a_layout == Layout::col_major, b_col = c.b_layout == Layout::col_major;
    auto conj_if = [](S v, bool conj) {
      if constexpr (is_complex_v<S>) return conj ? std::conj(v) : v;
      else return v;
    };
    Mat op_a(c.m, c.k), op_b(c.k, c.n);
    for (Index p = 0; p < c.k; ++p) {
      for (Index i = 0; i < c.m; ++i) op_a(i, p) = W(conj_if(a_col ? a.at(i, p) : a.at(p, i), c.conj_a));
      for (Index j = 0; j < c.n; ++j) op_b(p, j) = W(conj_if(b_col ? b.at(p, j) : b.at(j, p), c.conj_b));
    }
    ref = W(alpha) * (op_a * op_b);
    if (!c.beta_is_zero)
      for (Index j = 0; j < c.n; ++j)
        for (Index i = 0; i < c.m; ++i) ref(i, j) += W(beta) * W(c0.at(i, j));
    a_rows = op_a.rowwise().norm();
    b_cols = op_b.colwise().norm().transpose();
  }
};

// C under one variant, downloaded whole (padding and guards included).
template <class S> std::vector<S> run_kernel(const Problem<S>& pr, const Variant& v) {
  using K = kernel_t<S>;
  const Case& c = pr.c;
  Stream stream;
  DeviceBuffer da(pr.a.host.size() * sizeof(S)), db(pr.b.host.size() * sizeof(S)), dc(pr.c0.host.size() * sizeof(S));
  cuda_check(cudaMemcpy(da.p, pr.a.host.data(), pr.a.host.size() * sizeof(S), cudaMemcpyHostToDevice), "upload A");
  cuda_check(cudaMemcpy(db.p, pr.b.host.data(), pr.b.host.size() * sizeof(S), cudaMemcpyHostToDevice), "upload B");
  cuda_check(cudaMemcpy(dc.p, pr.c0.host.data(), pr.c0.host.size() * sizeof(S), cudaMemcpyHostToDevice), "upload C");
  // A cudaMemcpy from pageable memory may return before its DMA has landed,
  // and the kernel's stream does not wait for the legacy stream.
  cuda_check(cudaDeviceSynchronize(), "uploads");
  kern::GemmArgs<K> args;
  args.m = c.m;
  args.n = c.n;
  args.k = c.k;
  args.a = static_cast<const K*>(da.p) + c.offset;
  args.lda = pr.a.ld;
  args.a_layout = c.a_layout;
  args.conj_a = c.conj_a;
  args.b = static_cast<const K*>(db.p) + c.offset;
  args.ldb = pr.b.ld;
  args.b_layout = c.b_layout;
  args.conj_b = c.conj_b;
  args.c = static_cast<K*>(dc.p) + c.offset;
  args.ldc = pr.c0.ld;
  args.alpha = to_kernel(pr.alpha);
  args.beta = to_kernel(pr.beta);
  args.beta_is_zero = c.beta_is_zero;
  args.math = v.math;
  kern::gemm_tiled<K>(args, static_cast<void*>(stream.s), v.config);
  cuda_check(cudaGetLastError(), "launch");
  cuda_check(cudaStreamSynchronize(stream.s), "kernel");
  std::vector<S> result(pr.c0.host.size());
  cuda_check(cudaMemcpy(result.data(), dc.p, result.size() * sizeof(S), cudaMemcpyDeviceToHost), "download C");
  return result;
}

// Per-element bound inside the m x n block; bits unchanged outside it.
template <class S> Outcome check(const Problem<S>& pr, const Variant& v, const std::vector<S>& result) {
  using W = wider_t<S>;
  const Case& c = pr.c;
  Outcome out;
  const double f = is_complex_v<S> ? 2.0 : 1.0;
  const double coef = bound_coef<S>(v.math, c.k);
  const double eps = static_cast<double>(std::numeric_limits<real_t<S>>::epsilon());
  const double alpha_abs = std::abs(W(pr.alpha)), beta_abs = std::abs(W(pr.beta));
  Index worst_i = -1, worst_j = -1;
  for (Index j = 0; j < c.n; ++j)
    for (Index i = 0; i < c.m; ++i) {
      const std::size_t index = static_cast<std::size_t>(c.offset + i + j * pr.c0.ld);
      const double err = std::abs(W(result[index]) - pr.ref(i, j));
      const double c0_abs = c.beta_is_zero ? 0.0 : std::abs(W(pr.c0.host[index]));
      const double bound = f * (coef * alpha_abs * pr.a_rows(i) * pr.b_cols(j) + 2.0 * eps * beta_abs * c0_abs) +
                           std::numeric_limits<double>::min();
      const double ratio = std::isnan(err) ? std::numeric_limits<double>::infinity() : err / bound;
      if (ratio > out.ratio || worst_i < 0) {
        out.ratio = std::max(out.ratio, ratio);
        worst_i = i;
        worst_j = j;
      }
    }
  std::size_t outside_changed = 0, first_changed = 0;
  for (std::size_t t = 0; t < result.size(); ++t)
    if (!pr.c0.inside(t) && std::memcmp(&result[t], &pr.c0.host[t], sizeof(S)) != 0 && outside_changed++ == 0)
      first_changed = t;
  out.ok = out.ratio <= 1.0 && outside_changed == 0;
  if (!out.ok) {
    char buf[256];
    std::snprintf(buf, sizeof buf, ": worst |C - ref| / bound %.3g at (%lld, %lld); %zu elements outside m x n changed",
                  out.ratio, static_cast<long long>(worst_i), static_cast<long long>(worst_j), outside_changed);
    out.text = describe(c, v) + buf;
    if (outside_changed) out.text += " (first at buffer index " + std::to_string(first_changed) + ")";
  }
  return out;
}

// The case whose error left the CUDA context unusable (an illegal address,
// a trap): every later CUDA call of the process fails with that error, so
// the cases after it are not run and each later test reports it once.
std::string& context_lost() {
  static std::string first;
  return first;
}

template <class S> void run_jobs(const std::vector<Job>& jobs) {
  if (!context_lost().empty()) {
    BOOST_ERROR("not run: the CUDA context was lost earlier, in " << context_lost());
    return;
  }
  for (const Job& job : thin_out(jobs)) {
    const Problem<S> problem(job.c);
    for (const Variant& v : job.variants) {
      Outcome o;
      try {
        o = check(problem, v, run_kernel(problem, v));
      } catch (const std::exception& e) {
        o.text = describe(job.c, v) + ": " + e.what();
        if (cudaDeviceSynchronize() != cudaSuccess) {
          context_lost() = std::string(scalar_name<S>()) + " " + o.text;
          BOOST_ERROR("CUDA context lost (later cases not run; compute-sanitizer shows where): " << context_lost());
          return;
        }
      }
      tallies()[std::string(scalar_name<S>()) + " " + math_name(v.math) + " " + kern::config_name(v.config)].add(o.ratio);
      BOOST_TEST(o.ok, std::string(scalar_name<S>()) + " " + o.text);
    }
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(gemm_kernel_config, *boost::unit_test::precondition(gpu_available))

// Every layout of A and B and every conjugation, on shapes off every tile
// size, for each variant on its own data.
BOOST_AUTO_TEST_CASE_TEMPLATE(layouts_and_conjugation, S, Scalars) {
  std::vector<Job> jobs;
  for (const Variant& v : all_variants<S>())
    for (int layouts = 0; layouts < 4; ++layouts)
      for (int conj = 0; conj < (is_complex_v<S> ? 4 : 1); ++conj) {
        Case c = random_case<S>(pick_from(kEdgeSizes), pick_from(kEdgeSizes), pick_from(kEdgeSizes));
        c.a_layout = layouts & 1 ? Layout::row_major : Layout::col_major;
        c.b_layout = layouts & 2 ? Layout::row_major : Layout::col_major;
        c.conj_a = conj & 1;
        c.conj_b = conj & 2;
        jobs.push_back({c, {v}});
      }
  run_jobs<S>(jobs);
}

// Each edge size in each of m, n and k, plus random triples of them, for
// each variant on its own data.
BOOST_AUTO_TEST_CASE_TEMPLATE(edge_shapes, S, Scalars) {
  std::vector<Job> jobs;
  for (const Variant& v : all_variants<S>()) {
    std::vector<Index> ns = kEdgeSizes, ks = kEdgeSizes;
    std::shuffle(ns.begin(), ns.end(), picker());
    std::shuffle(ks.begin(), ks.end(), picker());
    for (std::size_t i = 0; i < kEdgeSizes.size(); ++i)
      jobs.push_back({random_case<S>(kEdgeSizes[i], ns[i], ks[i]), {v}});
    const int extra = test_scale() > 1 ? scaled_count(10) : 10;
    for (int i = 0; i < extra; ++i)
      jobs.push_back({random_case<S>(pick_from(kEdgeSizes), pick_from(kEdgeSizes), pick_from(kEdgeSizes)), {v}});
  }
  run_jobs<S>(jobs);
}

// m or n = 0 (nothing written), k = 0 (C = beta C, or 0 under beta_is_zero).
BOOST_AUTO_TEST_CASE_TEMPLATE(zero_sizes, S, Scalars) {
  const Index shapes[][3] = {{0, 0, 0}, {0, 33, 17}, {33, 0, 17}, {33, 17, 0}, {129, 65, 0}, {1, 1, 0}};
  std::vector<Job> jobs;
  for (const Variant& v : all_variants<S>())
    for (const auto& s : shapes)
      for (bool beta_is_zero : {true, false}) {
        Case c = random_case<S>(s[0], s[1], s[2]);
        c.beta_is_zero = beta_is_zero;
        jobs.push_back({c, {v}});
      }
  run_jobs<S>(jobs);
}

// Few output tiles over a long k (where a split-K path would run), with
// beta != 0 (C read and scaled once) and beta_is_zero (NaN C); every
// variant on the same data. 250x64 and 384x40 are tall enough for tf32x3's
// split-k to cut its large tile (split_on_large_tile), with a partial last
// tile along m and along n; 64x250 and 40x384 run it on the transposed
// product (split_transposed). The last three have both sides of C at least
// 128: float's split-k runs them on its medium tile (splits_on_medium_tile),
// 130 x 700 on the transposed product, with partial tiles.
BOOST_AUTO_TEST_CASE_TEMPLATE(skinny_long_k, S, Scalars) {
  const Index shapes[][3] = {{300, 17, 5000}, {17, 300, 5000}, {1, 1, 4097},   {64, 64, 8191},
                             {33, 129, 3000}, {7, 257, 2049}, {129, 1, 6000},  {2, 300, 1000},
                             {250, 64, 5000}, {384, 40, 3000}, {64, 250, 5000}, {40, 384, 3000},
                             {300, 130, 3000}, {130, 700, 1500}, {1000, 256, 2049}};
  if constexpr (std::is_same_v<S, float>) {  // the last four reach the paths they are here for
    BOOST_TEST(kern::split_on_large_tile(MathMode::tf32x3, 250, 64));
    BOOST_TEST(kern::split_on_large_tile(MathMode::tf32x3, 384, 40));
    BOOST_TEST(!kern::split_on_large_tile(MathMode::tf32x3, 64, 250));
    BOOST_TEST(!kern::split_on_large_tile(MathMode::tf32x3, 40, 384));
  }
  std::vector<Job> jobs;
  for (const auto& s : shapes)
    for (bool beta_is_zero : {true, false}) {
      Case c = random_case<S>(s[0], s[1], s[2]);
      c.beta_is_zero = beta_is_zero;
      jobs.push_back({c, all_variants<S>()});
    }
  run_jobs<S>(jobs);
}

// A float case with both operands' leading dimensions on the 16-byte grid
// (a multiple of 4, at random one vector more) and aligned bases: the
// paths of float's large tile that need the grid.
namespace {
Case grid_case(Index m, Index n, Index k, Layout a_layout, Layout b_layout, Index ldc_pad, bool beta_is_zero) {
  Case c = random_case<float>(m, n, k);
  c.a_layout = a_layout;
  c.b_layout = b_layout;
  const Index a_rows = a_layout == Layout::col_major ? m : k;
  const Index b_rows = b_layout == Layout::row_major ? n : k;
  c.lda_pad = (4 - a_rows % 4) % 4 + 4 * pick(0, 1);
  c.ldb_pad = (4 - b_rows % 4) % 4 + 4 * pick(0, 1);
  c.ldc_pad = ldc_pad;
  c.offset = 0;
  c.beta_is_zero = beta_is_zero;
  return c;
}
}  // namespace

// NN products deep in k with both operands on the 16-byte grid: float's
// large tile runs them transposed (C^T = B^T A^T, C stored row by row, see
// RunTransposed); partial tiles along both sides, aligned and odd ldc,
// beta != 0 and beta_is_zero. The large configuration only: these shapes
// are too small for the automatic choice to take it. float only: no other
// scalar has the path, and the sanitizers' time is better spent elsewhere.
BOOST_AUTO_TEST_CASE(nn_long_k_float) {
  using S = float;
  const Index shapes[][4] = {{300, 257, 4096, 0}, {129, 383, 4100, 1}, {1, 129, 4096, 3}, {257, 1, 5000, 4}};
  std::vector<Job> jobs;
  for (const auto& s : shapes)
    for (bool beta_is_zero : {true, false})
      jobs.push_back({grid_case(s[0], s[1], s[2], Layout::col_major, Layout::col_major, s[3], beta_is_zero),
                      {{MathMode::exact, GemmConfig::large}}});
  run_jobs<S>(jobs);
}

// TN products from m = 4096 and k = 1024 with op(A) on the 16-byte grid: float's
// large tile runs them on the TT layouts after copying op(B) transposed
// (CopyBTransposed, device/gemm_operand_transpose.cuh): partial tiles on
// both sides, n = 1, op(B) with odd leading dimensions (the copy puts it on
// the grid), aligned and odd ldc, beta != 0 and beta_is_zero. The large
// configuration only, as nn_long_k_float.
BOOST_AUTO_TEST_CASE(tn_on_b_copy_float) {
  using S = float;
  const Index shapes[][4] = {{4096, 257, 1024, 0}, {4101, 33, 4100, 1}, {4096, 1, 2048, 3}, {4227, 130, 1029, 4}};
  std::vector<Job> jobs;
  for (const auto& s : shapes)
    for (bool beta_is_zero : {true, false}) {
      Case c = grid_case(s[0], s[1], s[2], Layout::row_major, Layout::col_major, s[3], beta_is_zero);
      c.ldb_pad = pick(0, 2);  // op(B) anywhere: the copy puts it on the grid
      kern::GemmArgs<S> g;  // the rule, on these leading dimensions (bases are aligned)
      g.m = s[0];
      g.n = s[1];
      g.k = s[2];
      g.a_layout = Layout::row_major;
      g.lda = s[2] + c.lda_pad;
      const bool on_copy = kern::device::tn_runs_on_b_copy<S, kern::LargeTag>(g);
      BOOST_TEST(on_copy);
      jobs.push_back({c, {{MathMode::exact, GemmConfig::large}}});
    }
  run_jobs<S>(jobs);
}

// Products with an x-contiguous operand on the 16-byte grid (NN, NT, TT):
// float's tiles copy x-contiguous operands into shared memory with cp.async
// (ASYNC_XC, block/async_xc_tile_loader.cuh; which tile runs which layout
// is LayoutTile's), checked at the matrix edges by source size. Partial
// tiles on both sides with m and n off the vector width (a group of four
// copied in part), k below and off the stage depth, m = 1, n = 1 and
// skinny shapes, aligned and odd ldc, both beta modes; the large, medium
// and split_k configurations on the same data. float only, as
// nn_long_k_float (which runs the transposed NN run's tile, async too).
template <class Tag, bool A_XC, bool B_XC>
constexpr bool async_on_layout = kern::TileShape<float, typename kern::LayoutTile<float, Tag, A_XC, B_XC>::type>::async_xc;

BOOST_AUTO_TEST_CASE(x_contiguous_async_float) {
  using S = float;
  static_assert(async_on_layout<kern::LargeTag, true, false> && async_on_layout<kern::LargeTag, true, true> &&
                    async_on_layout<kern::LargeTag, false, true> && async_on_layout<kern::MediumTag, true, false> &&
                    async_on_layout<kern::MediumTag, true, true> && async_on_layout<kern::MediumTag, false, true> &&
                    async_on_layout<kern::SkinnyTag, true, false> && async_on_layout<kern::SkinnyTag, true, true> &&
                    kern::TileShape<S, kern::RunTransposed<S, kern::LargeTag, true, false>::tile>::async_xc,
                "the layouts tested take the async copies");
  const Index shapes[][4] = {{301, 259, 37, 0}, {129, 383, 8, 1}, {1, 130, 100, 3},   {258, 1, 9, 0},
                             {128, 256, 16, 4}, {7, 262, 3, 1},   {517, 33, 700, 0}, {1000, 64, 301, 1}};
  const std::vector<Variant> variants = {
      {MathMode::exact, GemmConfig::large}, {MathMode::exact, GemmConfig::medium}, {MathMode::exact, GemmConfig::split_k}};
  const Layout layouts[][2] = {{Layout::col_major, Layout::col_major},
                               {Layout::col_major, Layout::row_major},
                               {Layout::row_major, Layout::row_major}};
  std::vector<Job> jobs;
  for (const auto& s : shapes)
    for (const auto& l : layouts)
      for (bool beta_is_zero : {true, false})
        jobs.push_back({grid_case(s[0], s[1], s[2], l[0], l[1], s[3], beta_is_zero), variants});
  run_jobs<S>(jobs);
}

// Float tensor-core products with m and n from operand_copy_min_side
// and an operand off the 16-byte grid, which gemm_mma copies onto the
// grid first (device/gemm_operand_copy.cuh): A and B off it, A only, B only
// (odd leading dimensions, or every base one element off), each layout,
// both beta modes; tf32 and tf32x3 on the automatic choice, tensor_large and
// tensor_small, every variant on the same data.
BOOST_AUTO_TEST_CASE(operands_off_grid_float) {
  using S = float;
  std::vector<Variant> variants;
  for (MathMode math : {MathMode::tf32, MathMode::tf32x3})
    for (GemmConfig config : {GemmConfig::automatic, GemmConfig::tensor_large, GemmConfig::tensor_small})
      variants.push_back({math, config});
  const Index side = kern::operand_copy_min_side;
  const Index shapes[][3] = {{side + 1, side + 2, 37}, {side, side + 3, 20}, {side + 2, side, 9}};
  auto on_grid = [](Index rows) { return (4 - rows % 4) % 4; };  // pads giving ld % 4 == 0
  auto off_grid = [](Index rows) { return rows % 2 == 0 ? Index(1) : Index(0); };  // odd ld
  std::vector<Job> jobs;
  for (int layouts = 0; layouts < 4; ++layouts)
    for (int off = 0; off < 3; ++off) {  // 0: both off the grid, 1: A only, 2: B only
      const auto& s = shapes[(layouts + off) % 3];
      Case c = random_case<S>(s[0], s[1], s[2]);
      c.a_layout = layouts & 1 ? Layout::row_major : Layout::col_major;
      c.b_layout = layouts & 2 ? Layout::row_major : Layout::col_major;
      const Index a_rows = c.a_layout == Layout::row_major ? c.k : c.m;
      const Index b_rows = c.b_layout == Layout::row_major ? c.n : c.k;
      c.offset = off == 0 ? 1 : 0;
      c.lda_pad = off == 2 ? on_grid(a_rows) : off_grid(a_rows);
      c.ldb_pad = off == 1 ? on_grid(b_rows) : off_grid(b_rows);
      jobs.push_back({c, variants});
    }
  run_jobs<S>(jobs);
}

// double's small tile runs products with k up to its chain_max_k as chained
// tiles (kernel/gemm_mma_kernel.cuh: a grid of the resident blocks, each
// issuing its next tile's prologue before its C store), and the automatic
// choice takes it there: more tiles than any GPU holds blocks of at once,
// every layout, both beta modes, k on both sides of the bound;
// tensor_small and the automatic choice on the same data.
BOOST_AUTO_TEST_CASE(chained_tiles_double) {
  using S = double;
  constexpr Index bound = kern::MmaTileConfig<S, kern::TensorSmallTag, MathMode::exact>::chain_max_k;
  static_assert(bound > 0, "the small tile chains");
  const std::vector<Index> ks = {1, 16, 61, bound, bound + 1};
  std::vector<Job> jobs;
  for (int layouts = 0; layouts < 4; ++layouts)
    for (bool beta_is_zero : {true, false}) {
      Case c = random_case<S>(3000 + pick(0, 200), 2900 + pick(0, 200), pick_from(ks));
      c.a_layout = layouts & 1 ? Layout::row_major : Layout::col_major;
      c.b_layout = layouts & 2 ? Layout::row_major : Layout::col_major;
      c.beta_is_zero = beta_is_zero;
      jobs.push_back({c, {{MathMode::exact, GemmConfig::tensor_small}, {MathMode::exact, GemmConfig::automatic}}});
    }
  run_jobs<S>(jobs);
}

// complex<double> products with n from 2048 and a real or unread beta,
// which the automatic choice runs as one real fp64 product
// (device/gemm_complex_as_real.hpp: A expanded, op(B) copied unless it is
// B itself, C read as real): every layout and conjugation, beta zero, real
// and complex (the last on the complex kernels), m and k from 1.
BOOST_AUTO_TEST_CASE(complex_double_as_real) {
  using S = std::complex<double>;
  const Index shapes[][3] = {{257, 2100, 77}, {1, 2048, 300}, {300, 2049, 1}, {129, 2500, 513}};
  std::vector<Job> jobs;
  int next = 0;
  for (int layouts = 0; layouts < 4; ++layouts)
    for (int conj = 0; conj < 4; ++conj, ++next) {
      const auto& sh = shapes[next % 4];
      Case c = random_case<S>(sh[0], sh[1], sh[2]);
      c.a_layout = layouts & 1 ? Layout::row_major : Layout::col_major;
      c.b_layout = layouts & 2 ? Layout::row_major : Layout::col_major;
      c.conj_a = conj & 1;
      c.conj_b = conj & 2;
      c.beta_is_zero = next % 3 == 0;
      c.real_beta = next % 3 == 1;
      kern::GemmArgs<kern::cdouble> shape;  // the path the automatic choice takes
      shape.m = c.m;
      shape.n = c.n;
      shape.k = c.k;
      shape.beta_is_zero = c.beta_is_zero;
      shape.beta = kern::cdouble{1.0, c.beta_is_zero || c.real_beta ? 0.0 : 1.0};
      BOOST_TEST(kern::device::runs_complex_as_real(shape) == (c.beta_is_zero || c.real_beta));
      jobs.push_back({c, {{MathMode::exact, GemmConfig::automatic}}});
    }
  run_jobs<S>(jobs);
}

// Enough output tiles that the automatic choice takes the large
// configurations, with interior (unchecked) tiles: aligned leading
// dimensions (vector loads) and odd ones with an offset base (scalar
// loads); every variant on the same data.
BOOST_AUTO_TEST_CASE_TEMPLATE(many_tiles, S, Scalars) {
  std::vector<Job> jobs;
  for (bool aligned : {true, false}) {
    Case c = random_case<S>(1536 + (aligned ? 0 : 3), 1536 + (aligned ? 0 : 1), 32 + (aligned ? 0 : 5));
    c.lda_pad = c.ldb_pad = c.ldc_pad = aligned ? 0 : 1;
    c.offset = aligned ? 0 : 1;
    jobs.push_back({c, all_variants<S>()});
  }
  run_jobs<S>(jobs);
}

BOOST_AUTO_TEST_SUITE_END()

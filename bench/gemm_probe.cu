// gemm_probe: checks egpu::kernels::gemm_tiled against a float64 reference
// kernel and cuBLAS on many random shapes, then times it against cuBLAS.
//
// Build (from the repository root), configured with -DEGPU_BUILD_TOOLS=ON:
//   cmake --build <build> --target egpu-gemm-probe
// It links the library's kernels from libegpu and compiles its own tiles for
// EGPU_TOOLS_CUDA_ARCHITECTURES (default 90). Below, build-probe/gemm_probe
// stands for <build>/bench/egpu-gemm-probe.
// Run:
//   ./build-probe/gemm_probe           correctness (all scalars, layouts, conj, edge
//                                      shapes, lds, alignment, beta) + timing
//   ./build-probe/gemm_probe --quick   small correctness pass only (for compute-sanitizer)
//   ./build-probe/gemm_probe --time    timing only
//   ./build-probe/gemm_probe --tensor  tensor-core timing and float accuracy only
//   ./build-probe/gemm_probe --check   the full checks only (no timing)
//   ./build-probe/gemm_probe --check --only double   the full checks of one scalar
//   ./build-probe/gemm_probe --cz-exp  complex<double> skinny candidates vs cuBLAS ZGEMM
//   ./build-probe/gemm_probe --simt    split-k checks + SIMT and awkward-shape timings
//   ./build-probe/gemm_probe --simt-quick  the split-k checks only, fewer cases
//   ./build-probe/gemm_probe --gaps    fp64 tile candidates, float odd and skinny shapes
//   ./build-probe/gemm_probe --nn      float NN timings (the transposed run)
//   ./build-probe/gemm_probe --tn      float TN timings (TT on a transposed copy of B)
//   ./build-probe/gemm_probe --nt      float tiles: cp.async operand copies against registers
//                                      (--nt-check: the checks only)
//   ./build-probe/gemm_probe --x3      tf32x3 tiles and operand copies: checks, timings vs SGEMM
//   ./build-probe/gemm_probe --gaps-profile  float medium tile and cuBLAS on 4095x4097x511 (for ncu)
// Exits nonzero on any correctness failure.
//
// Error measure, per element: |C - ref| / bound with
//   bound = eps(T) * f * ((k + 2) * |alpha| * sum_p |a_ip| |b_pj| + 2 |beta| |c_ij|),
// f = 1 (real) or 2 (complex). Passes at <= 1 (typical values are ~1e-3).
// Against cuBLAS (pedantic math, no TF32) the same bound with a factor 2.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "kernels/gemm/device/gemm_tiled_launch.cuh"
#include "kernels/gemm/device/gemm_mma_launch.cuh"
#include "kernels/gemm/device/gemm_mma.hpp"
#include "kernels/gemm/device/gemm_operand_copy.cuh"
#include "kernels/gemm/gemm_args.hpp"

using namespace egpu::kernels;
using i64 = std::int64_t;

#define CK(x) check_cuda((x), #x, __LINE__)
static void check_cuda(cudaError_t e, const char* what, int line) {
  if (e != cudaSuccess) {
    std::printf("CUDA error %s at line %d: %s\n", cudaGetErrorString(e), line, what);
    std::exit(2);
  }
}
#define CB(x) check_cublas((x), #x, __LINE__)
static void check_cublas(cublasStatus_t s, const char* what, int line) {
  if (s != CUBLAS_STATUS_SUCCESS) {
    std::printf("cuBLAS error %d at line %d: %s\n", int(s), line, what);
    std::exit(2);
  }
}

// ---- scalar traits ---------------------------------------------------------
struct C64 { double re, im; };
template <class T> struct Tr;
template <> struct Tr<float> {
  static constexpr const char* name = "float"; static constexpr int f = 1;
  static double eps() { return std::numeric_limits<float>::epsilon(); }
};
template <> struct Tr<double> {
  static constexpr const char* name = "double"; static constexpr int f = 1;
  static double eps() { return std::numeric_limits<double>::epsilon(); }
};
template <> struct Tr<cfloat> {
  static constexpr const char* name = "cfloat"; static constexpr int f = 2;
  static double eps() { return std::numeric_limits<float>::epsilon(); }
};
template <> struct Tr<cdouble> {
  static constexpr const char* name = "cdouble"; static constexpr int f = 2;
  static double eps() { return std::numeric_limits<double>::epsilon(); }
};
__host__ __device__ inline C64 to64(float x) { return {x, 0}; }
__host__ __device__ inline C64 to64(double x) { return {x, 0}; }
__host__ __device__ inline C64 to64(cfloat x) { return {x.re, x.im}; }
__host__ __device__ inline C64 to64(cdouble x) { return {x.re, x.im}; }
template <class T> T from64(C64 v);
template <> float from64<float>(C64 v) { return float(v.re); }
template <> double from64<double>(C64 v) { return v.re; }
template <> cfloat from64<cfloat>(C64 v) { return {float(v.re), float(v.im)}; }
template <> cdouble from64<cdouble>(C64 v) { return {v.re, v.im}; }
__host__ __device__ inline double abs64(C64 v) { return std::sqrt(v.re * v.re + v.im * v.im); }
__host__ __device__ inline C64 mul64(C64 a, C64 b) {
  return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
}

// ---- device helpers ----------------------------------------------------------
__device__ inline double hash_uniform(std::uint64_t x) {  // splitmix64 -> [-1, 1)
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  x ^= x >> 31;
  return double(x >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}
// Fills the rows x cols column-major matrix at p (leading dim ld) with random
// values; padding is left as it is (the caller poisons it with NaN).
template <class T>
__global__ void fill_kernel(T* p, i64 rows, i64 cols, i64 ld, std::uint64_t seed) {
  for (i64 t = blockIdx.x * i64(blockDim.x) + threadIdx.x; t < rows * cols;
       t += i64(gridDim.x) * blockDim.x) {
    const i64 r = t % rows, c = t / rows;
    const double u = hash_uniform(seed * 0x100000001b3ull + 2 * t);
    const double v = hash_uniform(seed * 0x100000001b3ull + 2 * t + 1);
    if constexpr (is_complex<T>::value)
      p[r + c * ld] = T{decltype(T::re)(u), decltype(T::re)(v)};
    else
      p[r + c * ld] = T(u);
  }
}

template <class T>
__device__ inline C64 load_op(const T* p, i64 ld, bool row_major, bool conj, i64 r, i64 c) {
  C64 v = to64(row_major ? p[r * ld + c] : p[r + c * ld]);
  if (conj) v.im = -v.im;
  return v;
}
// Float64 reference: out[4 * (i + j * m)] = {re, im, sum |a||b|, |c0|}.
template <class T>
__global__ void ref_kernel(GemmArgs<T> g, const T* c0, double* out) {
  for (i64 t = blockIdx.x * i64(blockDim.x) + threadIdx.x; t < g.m * g.n;
       t += i64(gridDim.x) * blockDim.x) {
    const i64 i = t % g.m, j = t / g.m;
    C64 s{0, 0};
    double as = 0;
    for (i64 p = 0; p < g.k; ++p) {
      const C64 a = load_op(g.a, g.lda, g.a_layout == Layout::row_major, g.conj_a, i, p);
      const C64 b = load_op(g.b, g.ldb, g.b_layout == Layout::row_major, g.conj_b, p, j);
      const C64 ab = mul64(a, b);
      s.re += ab.re;
      s.im += ab.im;
      as += abs64(a) * abs64(b);
    }
    C64 r = mul64(to64(g.alpha), s);
    double ac = 0;
    if (!g.beta_is_zero) {
      const C64 c = to64(c0[i + j * g.ldc]);
      const C64 bc = mul64(to64(g.beta), c);
      r.re += bc.re;
      r.im += bc.im;
      ac = abs64(c);
    }
    out[4 * t] = r.re;
    out[4 * t + 1] = r.im;
    out[4 * t + 2] = as;
    out[4 * t + 3] = ac;
  }
}

// ---- cuBLAS ------------------------------------------------------------------
cublasStatus_t cublas_gemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                           int n, int k, const float* al, const float* a, int lda, const float* b,
                           int ldb, const float* be, float* c, int ldc) {
  return cublasSgemm(h, ta, tb, m, n, k, al, a, lda, b, ldb, be, c, ldc);
}
cublasStatus_t cublas_gemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                           int n, int k, const double* al, const double* a, int lda,
                           const double* b, int ldb, const double* be, double* c, int ldc) {
  return cublasDgemm(h, ta, tb, m, n, k, al, a, lda, b, ldb, be, c, ldc);
}
cublasStatus_t cublas_gemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                           int n, int k, const cfloat* al, const cfloat* a, int lda,
                           const cfloat* b, int ldb, const cfloat* be, cfloat* c, int ldc) {
  auto P = [](auto* x) { return reinterpret_cast<cuComplex*>(const_cast<cfloat*>(x)); };
  return cublasCgemm(h, ta, tb, m, n, k, P(al), P(a), lda, P(b), ldb, P(be), P(c), ldc);
}
cublasStatus_t cublas_gemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                           int n, int k, const cdouble* al, const cdouble* a, int lda,
                           const cdouble* b, int ldb, const cdouble* be, cdouble* c, int ldc) {
  auto P = [](auto* x) { return reinterpret_cast<cuDoubleComplex*>(const_cast<cdouble*>(x)); };
  return cublasZgemm(h, ta, tb, m, n, k, P(al), P(a), lda, P(b), ldb, P(be), P(c), ldc);
}
// op(A) of our interface as a cuBLAS operation; false where cuBLAS has none
// (conj without transpose).
bool cublas_op(Layout l, bool conj, cublasOperation_t* op) {
  if (l == Layout::col_major) {
    *op = CUBLAS_OP_N;
    return !conj;
  }
  *op = conj ? CUBLAS_OP_C : CUBLAS_OP_T;
  return true;
}

// ---- one correctness case -------------------------------------------------------
struct Case {
  i64 m, n, k, lda_extra, ldb_extra, ldc_extra;
  Layout la, lb;
  bool ca, cb, unaligned, beta_zero;
  GemmConfig cfg;
  i64 lda_force = 0, ldc_force = 0;  // huge lds (64-bit offsets)
  MathMode math = MathMode::exact;
};

// The arithmetic a float case really runs: the tensor configurations (and
// automatic, which picks them for tf32 / tf32x3) run TF32 for tf32 and the
// split tf32x3 products otherwise; the SIMT ones always run exact.
template <class T>
MathMode effective_math(const Case& c) {
  if (!std::is_same_v<T, float>) return MathMode::exact;
  const bool tensor = c.cfg == GemmConfig::tensor_large || c.cfg == GemmConfig::tensor_small ||
                      (c.cfg == GemmConfig::split_k && c.math != MathMode::exact);
  if (c.cfg == GemmConfig::automatic || c.cfg == GemmConfig::split_k) return c.math;
  if (!tensor) return MathMode::exact;
  return c.math == MathMode::tf32 ? MathMode::tf32 : MathMode::tf32x3;
}
// Factor on the bound eps(T) (k + 2) sum |a||b| for the tensor-core float
// modes: tf32 adds 2^-10 sum |a||b| (both operands rounded to 11 bits); tf32x3
// adds 2^-20 sum |a||b| (the dropped small*small term and the rounding of the
// small parts, ~3 * 2^-22, which exceed (k + 2) eps only for tiny k).
double math_scale(MathMode m, i64 k) {
  if (m == MathMode::tf32) return 1.0 + 16384.0 / double(k + 2);
  if (m == MathMode::tf32x3) return 1.0 + 8.0 / double(k + 2);
  return 1.0;
}
struct Stats {
  double worst_ref = 0, worst_cublas = 0;
  int cases = 0, cublas_cases = 0, failures = 0;
};
static cublasHandle_t g_handle;
static std::mt19937_64 g_rng(12345);

template <class T>
T* alloc_matrix(i64 rows, i64 cols, i64 ld, bool off, i64* count) {
  const i64 n = (rows > 0 && cols > 0 ? ld * (cols - 1) + rows : 1) + 1;
  T* p = nullptr;
  CK(cudaMalloc(&p, n * sizeof(T)));
  CK(cudaMemset(p, 0xff, n * sizeof(T)));  // NaN everywhere: padding reads would show
  *count = n;
  return p + (off ? 1 : 0);
}
template <class T>
void fill(T* p, i64 rows, i64 cols, i64 ld) {
  if (rows <= 0 || cols <= 0) return;
  fill_kernel<<<1024, 256>>>(p, rows, cols, ld, g_rng());
  CK(cudaGetLastError());
}
template <class T> T rand_scalar(bool one) {
  std::uniform_real_distribution<double> u(-1.5, 1.5);
  return one ? from64<T>({1.0, 0.0}) : from64<T>({u(g_rng), u(g_rng)});
}

// When set, run_case runs this instead of gemm_tiled (SIMT variants, see
// check_variant).
template <class T>
void (*case_launch)(const GemmArgs<T>&) = nullptr;

template <class T>
bool run_case(const Case& c, Stats& st, bool use_cublas) {
  const bool ra = c.la == Layout::row_major, rb = c.lb == Layout::row_major;
  // Stored (col-major) shapes of the buffers.
  const i64 a_rows = ra ? c.k : c.m, a_cols = ra ? c.m : c.k;
  const i64 b_rows = rb ? c.n : c.k, b_cols = rb ? c.k : c.n;
  GemmArgs<T> g;
  g.m = c.m; g.n = c.n; g.k = c.k;
  g.lda = c.lda_force ? c.lda_force : std::max<i64>(1, a_rows) + c.lda_extra;
  g.ldb = std::max<i64>(1, b_rows) + c.ldb_extra;
  g.ldc = c.ldc_force ? c.ldc_force : std::max<i64>(1, c.m) + c.ldc_extra;
  g.a_layout = c.la; g.b_layout = c.lb;
  g.conj_a = c.ca; g.conj_b = c.cb;
  g.math = c.math;
  const double mscale = math_scale(effective_math<T>(c), c.k);
  g.alpha = rand_scalar<T>(g_rng() % 3 == 0);
  g.beta_is_zero = c.beta_zero;
  g.beta = c.beta_zero ? from64<T>({0, 0}) : rand_scalar<T>(false);
  i64 na, nb, nc;
  T* a = alloc_matrix<T>(a_rows, a_cols, g.lda, c.unaligned, &na);
  T* b = alloc_matrix<T>(b_rows, b_cols, g.ldb, c.unaligned, &nb);
  T* cc = alloc_matrix<T>(c.m, c.n, g.ldc, c.unaligned, &nc);
  fill(a, a_rows, a_cols, g.lda);
  fill(b, b_rows, b_cols, g.ldb);
  if (!c.beta_zero) fill(cc, c.m, c.n, g.ldc);  // else C stays NaN
  g.a = a; g.b = b; g.c = cc;
  const i64 mn = c.m * c.n;
  // Keep C0 for the reference and for cuBLAS.
  T* c0 = nullptr;
  CK(cudaMalloc(&c0, nc * sizeof(T)));
  CK(cudaMemcpy(c0, cc - (c.unaligned ? 1 : 0), nc * sizeof(T), cudaMemcpyDeviceToDevice));
  T* c0p = c0 + (c.unaligned ? 1 : 0);
  double* ref = nullptr;
  CK(cudaMalloc(&ref, std::max<i64>(1, mn) * 4 * sizeof(double)));
  if (mn > 0) {
    ref_kernel<<<1024, 256>>>(g, c0p, ref);
    CK(cudaGetLastError());
  }
  if (case_launch<T>)
    case_launch<T>(g);  // an experimental launch in place of the library's
  else
    gemm_tiled(g, nullptr, c.cfg);
  CK(cudaDeviceSynchronize());

  std::vector<T> hc(std::max<i64>(1, mn)), hb(std::max<i64>(1, mn));
  std::vector<double> hr(std::max<i64>(1, mn) * 4);
  if (mn > 0) {
    CK(cudaMemcpy2D(hc.data(), c.m * sizeof(T), cc, g.ldc * sizeof(T), c.m * sizeof(T), c.n,
                    cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(hr.data(), ref, mn * 4 * sizeof(double), cudaMemcpyDeviceToHost));
  }
  const double al = abs64(to64(g.alpha)), be = abs64(to64(g.beta));
  auto ratio = [&](i64 t, C64 v, C64 r, double scale) {
    const double bound = Tr<T>::eps() * Tr<T>::f * scale *
                         (double(c.k + 2) * al * hr[4 * t + 2] + 2 * be * hr[4 * t + 3]);
    const double err = abs64({v.re - r.re, v.im - r.im});
    if (!(err == err)) return std::numeric_limits<double>::infinity();  // NaN never passes
    return err == 0 ? 0.0 : err / (bound > 0 ? bound : 1e-300);
  };
  double worst = 0;
  for (i64 t = 0; t < mn; ++t)
    worst = std::max(worst, ratio(t, to64(hc[t]), C64{hr[4 * t], hr[4 * t + 1]}, mscale));
  // Padding rows of C (between m and ldc) must be untouched.
  bool pad_ok = true;
  if (c.ldc_extra > 0 && mn > 0 && !c.ldc_force) {
    std::vector<unsigned char> full(nc * sizeof(T));
    CK(cudaMemcpy(full.data(), cc - (c.unaligned ? 1 : 0), nc * sizeof(T),
                  cudaMemcpyDeviceToHost));
    const i64 base = c.unaligned ? 1 : 0;
    for (i64 j = 0; j + 1 < c.n && pad_ok; ++j)
      for (i64 i = c.m; i < g.ldc; ++i) {
        const unsigned char* e = &full[(base + i + j * g.ldc) * sizeof(T)];
        for (size_t q = 0; q < sizeof(T); ++q) pad_ok &= e[q] == 0xff;
      }
  }
  double worst_cb = 0;
  cublasOperation_t ta, tb;
  const bool cb_ok = use_cublas && mn > 0 && cublas_op(c.la, c.ca, &ta) &&
                     cublas_op(c.lb, c.cb, &tb) && !c.lda_force && !c.ldc_force &&
                     c.m < (1 << 30) && c.n < (1 << 30);
  if (cb_ok) {
    CB(cublas_gemm(g_handle, ta, tb, int(c.m), int(c.n), int(c.k), &g.alpha, a, int(g.lda), b,
                   int(g.ldb), &g.beta, c0p, int(g.ldc)));
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy2D(hb.data(), c.m * sizeof(T), c0p, g.ldc * sizeof(T), c.m * sizeof(T), c.n,
                    cudaMemcpyDeviceToHost));
    for (i64 t = 0; t < mn; ++t)
      worst_cb = std::max(worst_cb, ratio(t, to64(hc[t]), to64(hb[t]), 2 * mscale));
    st.cublas_cases++;
  }
  CK(cudaFree(a - (c.unaligned ? 1 : 0)));
  CK(cudaFree(b - (c.unaligned ? 1 : 0)));
  CK(cudaFree(cc - (c.unaligned ? 1 : 0)));
  CK(cudaFree(c0));
  CK(cudaFree(ref));
  st.cases++;
  st.worst_ref = std::max(st.worst_ref, worst);
  st.worst_cublas = std::max(st.worst_cublas, worst_cb);
  const bool ok = worst <= 1 && worst_cb <= 1 && pad_ok;
  if (!ok) {
    st.failures++;
    std::printf("FAIL %s m=%lld n=%lld k=%lld lda=%lld ldb=%lld ldc=%lld la=%c lb=%c conj=%d%d "
                "unaligned=%d beta0=%d cfg=%s math=%d: ref ratio %.3g cublas ratio %.3g pad %s\n",
                Tr<T>::name, (long long)c.m, (long long)c.n, (long long)c.k, (long long)g.lda,
                (long long)g.ldb, (long long)g.ldc, ra ? 'R' : 'C', rb ? 'R' : 'C', c.ca, c.cb,
                c.unaligned, c.beta_zero, config_name(c.cfg), int(c.math), worst, worst_cb,
                pad_ok ? "ok" : "WRITTEN");
  }
  return ok;
}

// Cases over every op(A) / op(B) layout and conj pair, `reps` each: f(c, r)
// completes a Case whose layouts, conj flags and ld extras (drawn from
// `extras`) are set, and runs it.
template <class T, class F>
void for_layouts_and_conj(int reps, const i64 (&extras)[4], F&& f) {
  const int nconj = is_complex<T>::value ? 2 : 1;
  for (int la = 0; la < 2; ++la)
    for (int lb = 0; lb < 2; ++lb)
      for (int ca = 0; ca < nconj; ++ca)
        for (int cb = 0; cb < nconj; ++cb)
          for (int r = 0; r < reps; ++r) {
            Case c{};
            c.lda_extra = extras[g_rng() % 4];
            c.ldb_extra = extras[g_rng() % 4];
            c.ldc_extra = extras[g_rng() % 4];
            c.la = la ? Layout::row_major : Layout::col_major;
            c.lb = lb ? Layout::row_major : Layout::col_major;
            c.ca = ca; c.cb = cb;
            f(c, r);
          }
}

template <class T>
Stats check_scalar(bool quick) {
  Stats st;
  const std::vector<i64> sizes_full = {0, 1, 2, 3, 7, 31, 33, 63, 65, 127, 129, 255, 257, 500, 1000};
  const std::vector<i64> sizes_quick = {0, 1, 3, 7, 31, 33, 65, 129};
  const auto& sizes = quick ? sizes_quick : sizes_full;
  const i64 extras[] = {0, 1, 3, 7};
  auto pick = [&](const auto& v) { return v[g_rng() % v.size()]; };
  for_layouts_and_conj<T>(quick ? 2 : 10, extras, [&](Case& c, int r) {
    c.m = pick(sizes); c.n = pick(sizes); c.k = pick(sizes);
    if (r == 0) { c.m = 129; c.n = 65; c.k = 257; }  // every combination hits edges
    c.unaligned = g_rng() % 3 == 0;
    c.beta_zero = g_rng() % 2 == 0;
    c.cfg = GemmConfig(g_rng() % 6);  // automatic .. split_k
    if (std::is_same_v<T, float>) c.math = MathMode(g_rng() % 3);
    run_case<T>(c, st, !quick);
  });
  if (!quick) {
    // Aligned, vector-friendly interior shapes through every configuration
    // (and every math mode of float).
    const int nmath = std::is_same_v<T, float> ? 3 : 1;
    for (int cfg = 1; cfg <= 5; ++cfg)
      for (int mm = 0; mm < nmath; ++mm)
        for (int la = 0; la < 2; ++la)
          for (int lb = 0; lb < 2; ++lb) {
            Case c{256, 384, 128, 0, 0, 0, la ? Layout::row_major : Layout::col_major,
                   lb ? Layout::row_major : Layout::col_major, false, false, false, true,
                   GemmConfig(cfg)};
            c.math = MathMode(mm);
            run_case<T>(c, st, true);
          }
    // More column tiles than gridDim.y allows (65535), both configurations.
    for (int cfg = 1; cfg <= 2; ++cfg) {
      const i64 bn = cfg == 1 ? TileShape<T, LargeTag>::bn : TileShape<T, SmallTag>::bn;
      Case c{3, 65535 * bn + 77, 5, 0, 1, 0, Layout::col_major, Layout::row_major, false,
             is_complex<T>::value, true, false, GemmConfig(cfg)};
      run_case<T>(c, st, true);
    }
    // The tensor configurations walk tiles on a 1-D grid: many column tiles.
    if constexpr (!std::is_same_v<T, cfloat>) {
      Case c{3, 65535 * 128 + 77, 5, 0, 1, 0, Layout::col_major, Layout::row_major, false,
             is_complex<T>::value, true, false, GemmConfig::tensor_large};
      c.math = MathMode::tf32x3;
      run_case<T>(c, st, true);
    }
  }
  return st;
}

// Offsets above 2^31 elements: ldc and lda (A row-major) of 2^30 + 1 with
// m = n = 3 (8.6 GB buffers of float).
bool check_huge() {
  Stats st;
  Case c{3, 3, 17, 0, 0, 0, Layout::row_major, Layout::col_major, false, false, false, false,
         GemmConfig::automatic};
  c.lda_force = (i64(1) << 30) + 1;
  c.ldc_force = (i64(1) << 30) + 1;
  run_case<float>(c, st, false);
  std::printf("huge-ld float (offsets > 2^31 elements): %s, ratio %.3g\n",
              st.failures ? "FAIL" : "ok", st.worst_ref);
  return st.failures == 0;
}

// ---- timing --------------------------------------------------------------------
template <class T, class F>
double median_ms(F&& f, int reps) {
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  f();
  f();  // warm-up
  CK(cudaDeviceSynchronize());
  std::vector<float> ms;
  for (int r = 0; r < reps; ++r) {
    CK(cudaEventRecord(e0));
    f();
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float t;
    CK(cudaEventElapsedTime(&t, e0, e1));
    ms.push_back(t);
  }
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

// One cuBLAS call of the plain product g (ops from the layouts, no conj), in
// the handle's current math mode; g must outlive the function.
template <class T>
std::function<void()> cublas_call(const GemmArgs<T>& g) {
  return [&g] {
    cublasOperation_t ta, tb;
    cublas_op(g.a_layout, false, &ta);
    cublas_op(g.b_layout, false, &tb);
    CB(cublas_gemm(g_handle, ta, tb, int(g.m), int(g.n), int(g.k), &g.alpha, g.a, int(g.lda), g.b,
                   int(g.ldb), &g.beta, g.c, int(g.ldc)));
  };
}

// cuBLAS's time for g with default math (no TF32), median of reps; leaves
// its C in g.c.
template <class T>
double cublas_default_ms(const GemmArgs<T>& g, int reps = 7) {
  CB(cublasSetMathMode(g_handle, CUBLAS_DEFAULT_MATH));
  const double ms = median_ms<T>(cublas_call(g), reps);
  CB(cublasSetMathMode(g_handle, CUBLAS_PEDANTIC_MATH));
  return ms;
}

// Experimental tile shapes timed beside the library's (not part of it).
struct ExpTag1 {};
struct ExpTag2 {};
namespace egpu::kernels {
template <> struct TileConfig<float, ExpTag1> : TileDims<128, 128, 8, 8, 8, 1> {};
template <> struct TileConfig<double, ExpTag1> : TileDims<128, 64, 8, 8, 4, 1> {};
template <> struct TileConfig<double, ExpTag2> : TileDims<64, 64, 8, 4, 4, 2> {};
template <> struct TileConfig<float, ExpTag2> : TileDims<128, 128, 16, 8, 8, 2> {};
}  // namespace egpu::kernels

// An m x n x k product on random device operands (op(A) in layout la, op(B)
// in lb, C column-major, tight leading dimensions, alpha = 1, beta = 0), for
// the timing passes.
template <class T>
struct DeviceProblem {
  T *a = nullptr, *b = nullptr, *c = nullptr;
  GemmArgs<T> g;
  double flops;
  // pad: extra elements on lda, ldb, ldc beyond the tight ones.
  DeviceProblem(i64 m, i64 n, i64 k, Layout la = Layout::col_major, Layout lb = Layout::col_major,
                std::array<i64, 3> pad = {})
      : flops((is_complex<T>::value ? 8.0 : 2.0) * double(m) * n * k) {
    const bool ra = la == Layout::row_major, rb = lb == Layout::row_major;
    const i64 a_rows = ra ? k : m, a_cols = ra ? m : k, b_rows = rb ? n : k, b_cols = rb ? k : n;
    const i64 lda = a_rows + pad[0], ldb = b_rows + pad[1], ldc = m + pad[2];
    CK(cudaMalloc(&a, lda * a_cols * sizeof(T)));
    CK(cudaMalloc(&b, ldb * b_cols * sizeof(T)));
    CK(cudaMalloc(&c, ldc * n * sizeof(T)));
    fill(a, a_rows, a_cols, lda);
    fill(b, b_rows, b_cols, ldb);
    fill(c, m, n, ldc);
    g.m = m; g.n = n; g.k = k;
    g.a = a; g.b = b; g.c = c;
    g.lda = lda; g.ldb = ldb; g.ldc = ldc;
    g.a_layout = la; g.b_layout = lb;
    g.alpha = from64<T>({1, 0});
    g.beta = from64<T>({0, 0});
    g.beta_is_zero = true;
  }
  explicit DeviceProblem(i64 N) : DeviceProblem(N, N, N) {}
  ~DeviceProblem() {
    CK(cudaFree(a));
    CK(cudaFree(b));
    CK(cudaFree(c));
  }
  DeviceProblem(const DeviceProblem&) = delete;
  DeviceProblem& operator=(const DeviceProblem&) = delete;
};

template <class T>
void time_scalar(i64 N, bool variants) {
  DeviceProblem<T> sq(N);
  const double flops = sq.flops;
  T *const a = sq.a, *const b = sq.b, *const c = sq.c;
  GemmArgs<T>& g = sq.g;
  const int reps = 7;
  const double ours = median_ms<T>([&] { gemm_tiled(g, nullptr); }, reps);
  const double cub = cublas_default_ms(g, reps);
  std::printf("TIME %-7s N=%5lld NN  ours %7.2f TFLOP/s (%8.3f ms)  cuBLAS %7.2f TFLOP/s  ratio %.2f\n",
              Tr<T>::name, (long long)N, flops / ours * 1e-9, ours, flops / cub * 1e-9, cub / ours);
  if (variants) {
    for (int lay = 1; lay < 4; ++lay) {  // other layouts, library configuration
      GemmArgs<T> h = g;
      h.a_layout = lay & 1 ? Layout::row_major : Layout::col_major;
      h.b_layout = lay & 2 ? Layout::row_major : Layout::col_major;
      const double t = median_ms<T>([&] { gemm_tiled(h, nullptr); }, 5);
      std::printf("TIME %-7s N=%5lld %c%c  ours %7.2f TFLOP/s\n", Tr<T>::name, (long long)N,
                  lay & 1 ? 'T' : 'N', lay & 2 ? 'T' : 'N', flops / t * 1e-9);
    }
    GemmArgs<T> u = g;  // odd ld, unaligned: the scalar global-load path
    u.a = a + 1; u.b = b + 1; u.m = u.n = u.k = N - 1;
    const double t = median_ms<T>([&] { gemm_tiled(u, nullptr); }, 5);
    std::printf("TIME %-7s N=%5lld NN unaligned (scalar loads) ours %7.2f TFLOP/s\n", Tr<T>::name,
                (long long)N - 1, 2.0 * (is_complex<T>::value ? 4 : 1) * double(N - 1) * (N - 1) * (N - 1) / t * 1e-9);
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      const double t1 = median_ms<T>([&] { device::launch_tiled<T, ExpTag1>(g, nullptr); }, 5);
      const double t2 = median_ms<T>([&] { device::launch_tiled<T, ExpTag2>(g, nullptr); }, 5);
      std::printf("TIME %-7s N=%5lld NN  exp1 %7.2f  exp2 %7.2f TFLOP/s\n", Tr<T>::name,
                  (long long)N, flops / t1 * 1e-9, flops / t2 * 1e-9);
    }
  }
}

// ---- tensor-core configurations: shapes, layouts, math modes ----------------------
// One timed product of ours (automatic choice, or `cfg`) against cuBLAS on the same
// operands (cuBLAS in its default math: exact SGEMM, DMMA DGEMM/ZGEMM).
template <class T>
void time_shape(i64 m, i64 n, i64 k, Layout la, Layout lb, MathMode math, const char* label,
                GemmConfig cfg = GemmConfig::automatic) {
  DeviceProblem<T> pr(m, n, k, la, lb);
  const double flops = pr.flops;
  const bool ra = la == Layout::row_major, rb = lb == Layout::row_major;
  GemmArgs<T>& g = pr.g;
  g.math = math;
  const double ours = median_ms<T>([&] { gemm_tiled(g, nullptr, cfg); }, 7);
  const double cub = cublas_default_ms(g);
  const char* mname = math == MathMode::tf32 ? "tf32" : math == MathMode::tf32x3 ? "tf32x3" : "exact";
  std::printf("TTIME %-7s %-6s %5lldx%5lldx%5lld %c%c %-10s ours %7.2f TFLOP/s  cuBLAS %7.2f  ratio %.2f\n",
              Tr<T>::name, mname, (long long)m, (long long)n, (long long)k, ra ? 'T' : 'N',
              rb ? 'T' : 'N', label, flops / ours * 1e-9, flops / cub * 1e-9, cub / ours);
}

// Max |C - ref| over C for ours in `math` and for cuBLAS SGEMM (exact fp32), against the
// float64 reference, on the same N x N x N product.
void float_accuracy(i64 N) {
  float *a, *b, *c;
  CK(cudaMalloc(&a, N * N * sizeof(float)));
  CK(cudaMalloc(&b, N * N * sizeof(float)));
  CK(cudaMalloc(&c, N * N * sizeof(float)));
  fill(a, N, N, N);
  fill(b, N, N, N);
  double* ref;
  CK(cudaMalloc(&ref, N * N * 4 * sizeof(double)));
  GemmArgs<float> g;
  g.m = g.n = g.k = N;
  g.a = a; g.b = b; g.c = c;
  g.lda = g.ldb = g.ldc = N;
  g.alpha = 1.f;
  g.beta = 0.f;
  ref_kernel<<<1024, 256>>>(g, c, ref);
  CK(cudaGetLastError());
  std::vector<double> hr(N * N * 4);
  std::vector<float> hc(N * N);
  CK(cudaMemcpy(hr.data(), ref, hr.size() * sizeof(double), cudaMemcpyDeviceToHost));
  auto max_err = [&] {
    CK(cudaMemcpy(hc.data(), c, hc.size() * sizeof(float), cudaMemcpyDeviceToHost));
    double e = 0, s = 0;
    for (i64 t = 0; t < N * N; ++t) {
      e = std::max(e, std::fabs(double(hc[t]) - hr[4 * t]));
      s = std::max(s, hr[4 * t + 2]);
    }
    return std::make_pair(e, s);
  };
  CB(cublasSetMathMode(g_handle, CUBLAS_DEFAULT_MATH));
  CB(cublasSgemm(g_handle, CUBLAS_OP_N, CUBLAS_OP_N, int(N), int(N), int(N), &g.alpha, a, int(N),
                 b, int(N), &g.beta, c, int(N)));
  CB(cublasSetMathMode(g_handle, CUBLAS_PEDANTIC_MATH));
  const auto cub = max_err();
  for (MathMode m : {MathMode::exact, MathMode::tf32, MathMode::tf32x3}) {
    g.math = m;
    gemm_tiled(g, nullptr);
    const auto ours = max_err();
    std::printf("ACCURACY float N=%lld math=%d  max|err| ours %.3e  cuBLAS SGEMM %.3e  ratio %.2f"
                "  (max sum|a||b| %.1f)\n",
                (long long)N, int(m), ours.first, cub.first, ours.first / cub.first, ours.second);
  }
  CK(cudaFree(a));
  CK(cudaFree(b));
  CK(cudaFree(c));
  CK(cudaFree(ref));
}

// Experimental tensor-core shapes timed beside the library's (not part of it).
struct MmaExp1 {};
struct MmaExp2 {};
struct MmaExp3 {};
namespace egpu::kernels {
// fp64: DMMA m16n8k16; bk 32 with k16; 4 stages with k16.
template <MathMode M> struct MmaTileConfig<double, MmaExp1, M> : MmaDims<128, 128, 16, 64, 32, 3, 1, 16> {};
template <MathMode M> struct MmaTileConfig<double, MmaExp2, M> : MmaDims<128, 128, 32, 64, 32, 3, 1, 16> {};
template <MathMode M> struct MmaTileConfig<double, MmaExp3, M> : MmaDims<128, 128, 16, 64, 32, 4, 1, 16> {};
// complex<double> skinny candidates (--cz-exp): 64x32 of 32x16 warps, 3 blocks; 64x64x16 of
// 32x32 warps, 3 stages, 2 blocks; 32x64 of 16x32 warps, 3 blocks.
template <MathMode M> struct MmaTileConfig<cdouble, MmaExp1, M> : MmaDims<64, 32, 8, 32, 16, 4, 3> {};
template <MathMode M> struct MmaTileConfig<cdouble, MmaExp2, M> : MmaDims<64, 64, 16, 32, 32, 3, 2> {};
template <MathMode M> struct MmaTileConfig<cdouble, MmaExp3, M> : MmaDims<32, 64, 8, 16, 32, 4, 3> {};
// float: one block per SM (no register cap); 64x64 warps; bk 16 with 4 stages.
template <MathMode M> struct MmaTileConfig<float, MmaExp1, M> : MmaDims<128, 128, 32, 64, 32, 3, 1> {};
template <MathMode M> struct MmaTileConfig<float, MmaExp2, M> : MmaDims<128, 128, 32, 64, 64, 3, 1> {};
template <MathMode M> struct MmaTileConfig<float, MmaExp3, M> : MmaDims<128, 128, 16, 64, 32, 4, 1> {};
}  // namespace egpu::kernels

template <class T, MathMode M>
void time_mma_exp(i64 N, Layout la, Layout lb) {
  DeviceProblem<T> sq(N);
  const double flops = sq.flops;
  GemmArgs<T>& g = sq.g;
  g.a_layout = la; g.b_layout = lb;
  g.math = M;
  const double t0 = median_ms<T>([&] { device::launch_mma<T, TensorLargeTag, M>(g, nullptr); }, 5);
  const double t1 = median_ms<T>([&] { device::launch_mma<T, MmaExp1, M>(g, nullptr); }, 5);
  const double t2 = median_ms<T>([&] { device::launch_mma<T, MmaExp2, M>(g, nullptr); }, 5);
  const double t3 = median_ms<T>([&] { device::launch_mma<T, MmaExp3, M>(g, nullptr); }, 5);
  std::printf("EXP %-7s math=%d N=%lld %c%c  large %7.2f  exp1 %7.2f  exp2 %7.2f  exp3 %7.2f TFLOP/s\n",
              Tr<T>::name, int(M), (long long)N, la == Layout::row_major ? 'T' : 'N',
              lb == Layout::row_major ? 'T' : 'N', flops / t0 * 1e-9, flops / t1 * 1e-9,
              flops / t2 * 1e-9, flops / t3 * 1e-9);
}

// --cz-exp: complex<double> skinny products (NN), automatic choice and candidate tiles with
// `count` k-slices (1: plain) against cuBLAS ZGEMM on the same operands; each result's max
// |C - C_cuBLAS| / max |C_cuBLAS| is printed beside it.
template <class Tag>
double cz_time(GemmArgs<cdouble>& g, int count) {
  using S = MmaShape<cdouble, Tag, MathMode::exact>;
  if (count < 2)
    return median_ms<cdouble>([&] { device::launch_mma<cdouble, Tag, MathMode::exact>(g, nullptr); }, 9);
  const i64 tiles = ((g.m + S::bm - 1) / S::bm) * ((g.n + S::bn - 1) / S::bn);
  const device::KSlices plan =
      device::plan_split_k(g.m, g.n, g.k, S::bm, S::bn, S::bk, int(count * tiles), 1);
  return median_ms<cdouble>([&] {
    device::gemm_split_k(g, plan, nullptr, [&](const GemmArgs<cdouble>& part, const device::KSlices& sl) {
      device::launch_mma<cdouble, Tag, MathMode::exact>(part, nullptr, sl);
    });
  }, 9);
}

void cz_shape(i64 m, i64 n, i64 k) {
  using Z = cdouble;
  DeviceProblem<Z> pr(m, n, k);
  const double flops = pr.flops;
  Z *const c = pr.c;
  GemmArgs<Z>& g = pr.g;
  std::vector<Z> ref(m * n), got(m * n);
  const double cub = cublas_default_ms(g, 9);
  CK(cudaMemcpy(ref.data(), c, m * n * sizeof(Z), cudaMemcpyDeviceToHost));
  double scale = 0;
  for (const Z& v : ref) scale = std::max(scale, abs64(to64(v)));
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  std::printf("CZEXP %5lldx%5lldx%5lld NN cuBLAS %7.2f TFLOP/s  auto=%s\n", (long long)m,
              (long long)n, (long long)k, flops / cub * 1e-9,
              config_name(device::choose_mma_config(g, sms)));
  auto line = [&](const char* name, double ms) {
    CK(cudaMemcpy(got.data(), c, m * n * sizeof(Z), cudaMemcpyDeviceToHost));
    double e = 0;
    for (i64 t = 0; t < m * n; ++t)
      e = std::max(e, abs64(C64{got[t].re - ref[t].re, got[t].im - ref[t].im}));
    std::printf("CZEXP %5lldx%5lldx%5lld %-22s ours %7.2f TFLOP/s  ratio %.3f  rel.diff %.2e\n",
                (long long)m, (long long)n, (long long)k, name, flops / ms * 1e-9, cub / ms,
                e / scale);
  };
  line("automatic", median_ms<Z>([&] { gemm_tiled(g, nullptr); }, 9));
  line("small 32x32 plain(old)", cz_time<TensorSmallTag>(g, 1));
  line("small 32x32 z3", cz_time<TensorSmallTag>(g, 3));
  line("large 64x64 z2", cz_time<TensorLargeTag>(g, 2));
  line("large 64x64 z4", cz_time<TensorLargeTag>(g, 4));
  line("exp1 64x32 z3", cz_time<MmaExp1>(g, 3));
  line("exp2 64x64x16 z2", cz_time<MmaExp2>(g, 2));
  line("exp3 32x64 z3", cz_time<MmaExp3>(g, 3));
  line("exp3 32x64 z2", cz_time<MmaExp3>(g, 2));
}

void time_tensor() {
  const Layout C = Layout::col_major, R = Layout::row_major;
  time_mma_exp<double, MathMode::exact>(4096, C, C);
  time_mma_exp<double, MathMode::exact>(4096, R, C);
  time_mma_exp<double, MathMode::exact>(8192, C, C);
  time_mma_exp<cdouble, MathMode::exact>(4096, C, C);
  time_mma_exp<float, MathMode::tf32>(4096, C, C);
  time_mma_exp<float, MathMode::tf32x3>(4096, C, C);
  time_mma_exp<float, MathMode::tf32x3>(8192, C, C);
  for (GemmConfig cfg : {GemmConfig::tensor_large, GemmConfig::tensor_small, GemmConfig::split_k}) {
    time_shape<double>(8192, 8192, 64, C, C, MathMode::exact, config_name(cfg), cfg);
    time_shape<double>(4095, 4097, 511, C, C, MathMode::exact, config_name(cfg), cfg);
  }
  for (i64 N : {4096, 8192}) {
    time_shape<double>(N, N, N, C, C, MathMode::exact, "square");
    time_shape<cdouble>(N, N, N, C, C, MathMode::exact, "square");
    time_shape<float>(N, N, N, C, C, MathMode::tf32x3, "square");
    time_shape<float>(N, N, N, C, C, MathMode::tf32, "square");
  }
  for (int lay = 1; lay < 4; ++lay) {
    time_shape<double>(4096, 4096, 4096, lay & 1 ? R : C, lay & 2 ? R : C, MathMode::exact, "layout");
    time_shape<cdouble>(4096, 4096, 4096, lay & 1 ? R : C, lay & 2 ? R : C, MathMode::exact, "layout");
    time_shape<float>(4096, 4096, 4096, lay & 1 ? R : C, lay & 2 ? R : C, MathMode::tf32x3, "layout");
  }
  time_shape<double>(4095, 4097, 511, C, C, MathMode::exact, "awkward");
  time_shape<double>(8192, 64, 8192, C, C, MathMode::exact, "skinny");
  time_shape<double>(64, 8192, 8192, C, C, MathMode::exact, "skinny");
  time_shape<double>(8192, 8192, 64, C, C, MathMode::exact, "flat-k");
  time_shape<double>(4096, 4096, 4096, C, C, MathMode::exact, "simt", GemmConfig::large);
  float_accuracy(2048);
}

// ---- SIMT version 2 and split-k -----------------------------------------------
// --simt: split_k correctness over skinny shapes (every layout, conj, ld,
// alignment, beta), then the SIMT timings: float / cfloat at 4096 and 8192,
// every op(A)/op(B) layout at 4096, the awkward shapes for every scalar,
// and experimental tile shapes. --simt-quick: the correctness part only,
// fewer cases (for compute-sanitizer).
template <class T>
Stats check_split_k(bool quick) {
  Stats st;
  const std::vector<i64> shorts = {1, 3, 31, 64, 65, 127, 200};
  const std::vector<i64> longs = {129, 300, 1000, 2049};
  const std::vector<i64> ks = quick ? std::vector<i64>{513, 700} : std::vector<i64>{512, 700, 1031, 4099};
  const i64 extras[] = {0, 1, 3, 4};
  auto pick = [&](const auto& v) { return v[g_rng() % v.size()]; };
  for_layouts_and_conj<T>(quick ? 1 : 4, extras, [&](Case& c, int r) {
    const bool tall = g_rng() % 2 == 0;  // short side along n, else along m
    c.m = tall ? pick(longs) : pick(shorts);
    c.n = tall ? pick(shorts) : pick(longs);
    c.k = pick(ks);
    c.unaligned = g_rng() % 3 == 0;
    c.beta_zero = g_rng() % 2 == 0;
    c.cfg = r % 2 ? GemmConfig::split_k : GemmConfig::automatic;
    run_case<T>(c, st, !quick);
  });
  // Exactly one slice per tile row and slices of unequal length.
  for (int t = 0; t < 2; ++t) {
    Case c{t ? 64 : 4096, t ? 4096 : 64, 8195, 0, 0, 0, Layout::col_major, Layout::col_major,
           false, false, false, t == 1, GemmConfig::split_k};
    if (!quick) run_case<T>(c, st, true);
  }
  return st;
}

template <class T>
double time_gemm(const GemmArgs<T>& g, GemmConfig cfg, int reps = 7) {
  return median_ms<T>([&] { gemm_tiled(g, nullptr, cfg); }, reps);
}
template <class T, class Tag>
double time_tag(const GemmArgs<T>& g, int reps = 7) {
  return median_ms<T>([&] { device::launch_tiled<T, Tag>(g, nullptr); }, reps);
}

// One shape against cuBLAS (default math): prints ours / cuBLAS TFLOP/s.
template <class T>
void time_simt_shape(i64 m, i64 n, i64 k, Layout la, Layout lb, bool unaligned, const char* label) {
  const double flops = (is_complex<T>::value ? 8.0 : 2.0) * double(m) * n * k;
  const bool ra = la == Layout::row_major, rb = lb == Layout::row_major;
  const i64 a_rows = ra ? k : m, a_cols = ra ? m : k, b_rows = rb ? n : k, b_cols = rb ? k : n;
  T *a, *b, *c;
  CK(cudaMalloc(&a, (a_rows * a_cols + 1) * sizeof(T)));
  CK(cudaMalloc(&b, (b_rows * b_cols + 1) * sizeof(T)));
  CK(cudaMalloc(&c, (m * n + 1) * sizeof(T)));
  const i64 off = unaligned ? 1 : 0;
  fill(a + off, a_rows, a_cols, a_rows);
  fill(b + off, b_rows, b_cols, b_rows);
  fill(c + off, m, n, m);
  GemmArgs<T> g;
  g.m = m; g.n = n; g.k = k;
  g.a = a + off; g.b = b + off; g.c = c + off;
  g.lda = a_rows; g.ldb = b_rows; g.ldc = m;
  g.a_layout = la; g.b_layout = lb;
  g.alpha = from64<T>({1, 0});
  g.beta = from64<T>({0, 0});
  g.beta_is_zero = true;
  const double ours = time_gemm(g, GemmConfig::automatic);
  const double cub = cublas_default_ms(g);
  std::printf("SIMT %-7s %-8s %5lldx%5lldx%5lld %c%c  ours %6.2f  cuBLAS %6.2f TFLOP/s  ratio %.2f",
              Tr<T>::name, label, (long long)m, (long long)n, (long long)k, ra ? 'T' : 'N',
              rb ? 'T' : 'N', flops / ours * 1e-9, flops / cub * 1e-9, cub / ours);
  if (std::min(m, n) <= 128) {  // the SIMT split-k configuration, explicitly
    const double sk = time_gemm(g, GemmConfig::split_k);
    std::printf("  | split_k %6.2f (ratio %.2f)", flops / sk * 1e-9, cub / sk);
  }
  std::printf("\n");
  CK(cudaFree(a));
  CK(cudaFree(b));
  CK(cudaFree(c));
}

// Experimental SIMT tile shapes timed beside the library's (not part of it).
// Float variants of the large 128x256x8 tile (one block per SM, paired
// update order, early hand-over, paired lanes, steady-state loop) that change
// one thing each (bench/NOTES-gemm.md, "SIMT version 3").
struct SimtExpNoSteady {};  // no steady-state loop
struct SimtExpRows {};      // rows-outer update order
struct SimtExpW4 {};        // 4x2 warps of 32x128
struct SimtExpLate {};      // hand-over after the last step
struct SimtExpWideM {};     // 256x128, 16x8 per thread, 4x2 warps of 64x64
struct SimtExpLanes {};     // complex<float>: the large tile with paired lanes
// The float skinny (split-k) tile before the library's 256x64x16 one.
struct SkinnyV2 {};
struct MediumNoSteady {};   // the float medium tile without the steady-state loop         // 256x64x8, two blocks per SM, rows-outer order, early hand-over
namespace egpu::kernels {
using O = UpdateOrder;
template <> struct TileConfig<float, SimtExpNoSteady> : TileDims<128, 256, 8, 8, 16, 1, 2, O::paired, true, true, false> {};
template <> struct TileConfig<float, SimtExpRows> : TileDims<128, 256, 8, 8, 16, 1, 2, O::rows_outer, true, true, true> {};
template <> struct TileConfig<float, SimtExpW4> : TileDims<128, 256, 8, 8, 16, 1, 4, O::paired, true, true, true> {};
template <> struct TileConfig<float, SimtExpLate> : TileDims<128, 256, 8, 8, 16, 1, 2, O::paired, false, true, true> {};
template <> struct TileConfig<float, SimtExpWideM> : TileDims<256, 128, 8, 16, 8, 1, 4, O::paired, true, true, true> {};
template <> struct TileConfig<float, SkinnyV2> : TileDims<256, 64, 8, 8, 8, 2, 4, O::rows_outer, true> {};
template <> struct TileConfig<float, MediumNoSteady> : TileDims<128, 128, 16, 8, 8, 1, 2, O::paired, true, true, false> {};
template <> struct TileConfig<cfloat, SimtExpLanes> : TileDims<128, 64, 8, 8, 4, 1, 2, O::rows_outer, false, true> {};
}  // namespace egpu::kernels

// Calls f(name, tag) for each float variant timed and checked by --simt.
template <class F>
void for_each_float_variant(F&& f) {
  f("nosteady", SimtExpNoSteady{});
  f("medium", MediumTag{});
  f("rows", SimtExpRows{});
  f("w4", SimtExpW4{});
  f("late", SimtExpLate{});
  f("widem", SimtExpWideM{});
}

// Correctness of one launcher of experimental tiles: edge shapes, every
// layout, conj, ld, alignment and beta, through run_case.
template <class T>
Stats check_launch(void (*launch)(const GemmArgs<T>&), bool quick, MathMode math = MathMode::exact) {
  Stats st;
  case_launch<T> = launch;
  const std::vector<i64> sizes = {1, 7, 33, 129, 255, 257, 300};
  const i64 extras[] = {0, 1, 3, 4};
  auto pick = [&](const auto& v) { return v[g_rng() % v.size()]; };
  for_layouts_and_conj<T>(quick ? 1 : 3, extras, [&](Case& c, int r) {
    c.m = pick(sizes); c.n = pick(sizes); c.k = pick(sizes);
    if (r == 0) { c.m = 257; c.n = 300; c.k = 129; }
    c.unaligned = r == 2;
    c.beta_zero = g_rng() % 2 == 0;
    c.math = math;
    c.cfg = math == MathMode::exact ? GemmConfig::large : GemmConfig::tensor_large;
    run_case<T>(c, st, false);
  });
  case_launch<T> = nullptr;
  return st;
}
// A SIMT tile shape.
template <class T, class Tag>
Stats check_variant(bool quick) {
  return check_launch<T>([](const GemmArgs<T>& g) {
    if (g.m > 0 && g.n > 0) device::launch_tiled<T, Tag>(g, nullptr);
  }, quick);
}
// A tensor-core tile shape (exact arithmetic).
template <class T, class Tag>
Stats check_mma_variant(bool quick) {
  return check_launch<T>([](const GemmArgs<T>& g) {
    if (g.m > 0 && g.n > 0) device::launch_mma<T, Tag, MathMode::exact>(g, nullptr);
  }, quick);
}

// Float variants against cuBLAS SGEMM (default math) and the library's large
// tile, on one square size and every layout, all in one process.
void time_simt_variants(i64 N) {
  for (int lay = 0; lay < 4; ++lay) {
    const Layout la = lay & 1 ? Layout::row_major : Layout::col_major;
    const Layout lb = lay & 2 ? Layout::row_major : Layout::col_major;
    DeviceProblem<float> sq(N, N, N, la, lb);
    GemmArgs<float>& g = sq.g;
    const double cub = cublas_default_ms(g);
    auto show = [&](const char* name, double ms) {
      std::printf("SIMTV float N=%5lld %c%c %-10s %6.2f TFLOP/s  vs cuBLAS %.3f\n", (long long)N,
                  lay & 1 ? 'T' : 'N', lay & 2 ? 'T' : 'N', name, sq.flops / ms * 1e-9, cub / ms);
    };
    show("cuBLAS", cub);
    show("large", time_tag<float, LargeTag>(g));
    for_each_float_variant([&](const char* name, auto tag) {
      show(name, time_tag<float, decltype(tag)>(g));
    });
    show("large", time_tag<float, LargeTag>(g));  // again: the spread between repeats
    if (N == 4096) {  // complex<float> large tile with and without paired lanes
      DeviceProblem<cfloat> cq(N, N, N, la, lb);
      const double t0 = time_tag<cfloat, LargeTag>(cq.g), t1 = time_tag<cfloat, SimtExpLanes>(cq.g);
      std::printf("SIMTC cfloat N=%5lld %c%c large %6.2f  lanes %6.2f TFLOP/s\n", (long long)N,
                  lay & 1 ? 'T' : 'N', lay & 2 ? 'T' : 'N', cq.flops / t0 * 1e-9, cq.flops / t1 * 1e-9);
    }
  }
}

// The float skinny tile against its version 2 and cuBLAS SGEMM (default
// math), through split-k, on the two skinny shapes.
void time_skinny_variants() {
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const std::array<std::array<i64, 2>, 2> shapes{{{8192, 64}, {64, 8192}}};
  for (const auto& mn : shapes) {
    DeviceProblem<float> sk(mn[0], mn[1], 8192);
    auto t = [&](auto tag) {
      using Tg = decltype(tag);
      return sk.flops / median_ms<float>([&] { device::launch_tiled_split_k<float, Tg>(sk.g, nullptr, sms); }, 7) * 1e-9;
    };
    const double cb = sk.flops / cublas_default_ms(sk.g) * 1e-9;
    const double au = sk.flops / time_gemm(sk.g, GemmConfig::automatic) * 1e-9;
    std::printf("SKINNY %lldx%lldx8192 cuBLAS %6.2f  automatic %.3f  lib %.3f  v2 %.3f  lib %.3f\n",
                (long long)mn[0], (long long)mn[1], cb, au / cb, t(SkinnyTag{}) / cb,
                t(SkinnyV2{}) / cb, t(SkinnyTag{}) / cb);
  }
}

template <class T>
void time_simt_scalar() {
  const Layout C = Layout::col_major, R = Layout::row_major;
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, cfloat>) {
    time_simt_shape<T>(4096, 4096, 4096, C, C, false, "square");
    time_simt_shape<T>(8192, 8192, 8192, C, C, false, "square");
  }
  time_simt_shape<T>(4096, 4096, 4096, R, C, false, "layout");
  time_simt_shape<T>(4096, 4096, 4096, C, R, false, "layout");
  time_simt_shape<T>(4096, 4096, 4096, R, R, false, "layout");
  time_simt_shape<T>(4095, 4097, 511, C, C, false, "odd");
  time_simt_shape<T>(8192, 64, 8192, C, C, false, "n=64");
  time_simt_shape<T>(64, 8192, 8192, C, C, false, "m=64");
  time_simt_shape<T>(8192, 8192, 64, C, C, false, "k=64");
}

// --simt-profile: one launch each of the library's float large tile, the
// same without the steady-state loop and cuBLAS SGEMM (default math), NN at
// 4096, after the fills (for ncu -k regex:gemm_tiled_kernel|gemm).
void simt_profile() {
  DeviceProblem<float> sq(4096);
  GemmArgs<float>& g = sq.g;
  CK(cudaDeviceSynchronize());
  device::launch_tiled<float, LargeTag>(g, nullptr);
  device::launch_tiled<float, SimtExpNoSteady>(g, nullptr);
  CB(cublasSetMathMode(g_handle, CUBLAS_DEFAULT_MATH));
  cublas_call(g)();
  CK(cudaDeviceSynchronize());
}

int simt_main(bool quick) {
  int failures = 0;
  auto report = [&](const char* name, const Stats& s) {
    std::printf("CHECK split_k %-20s cases %4d (cuBLAS-compared %4d)  max ratio vs ref %.3g, vs "
                "cuBLAS %.3g  failures %d\n",
                name, s.cases, s.cublas_cases, s.worst_ref, s.worst_cublas, s.failures);
    failures += s.failures;
  };
  report("float", check_split_k<float>(quick));
  report("double", check_split_k<double>(quick));
  report("cfloat", check_split_k<cfloat>(quick));
  report("cdouble", check_split_k<cdouble>(quick));
  for_each_float_variant([&](const char* name, auto tag) {
    report((std::string("float variant ") + name).c_str(), check_variant<float, decltype(tag)>(quick));
  });
  report("cfloat variant lanes", check_variant<cfloat, SimtExpLanes>(quick));
  report("float skinny v2", check_variant<float, SkinnyV2>(quick));
  if (!quick) {
    time_simt_variants(4096);
    time_simt_variants(8192);
    time_skinny_variants();
    time_simt_scalar<float>();
    time_simt_scalar<cfloat>();
    time_simt_scalar<double>();
    time_simt_scalar<cdouble>();
  }
  std::printf("%s (%d failures)\n", failures ? "SIMT CHECKS FAILED" : "SIMT CHECKS PASSED", failures);
  return failures ? 1 : 0;
}

// ---- the gaps to the targets (--gaps) ----------------------------------------------
// fp64 tiles beside the library's two (bench/NOTES-gemm.md, "fp64 fragment
// pipeline"): the large tile without the pipeline, and the two tiles of the
// version before it (DMMA m16n8k16, no pipeline).
struct DpStaged {};    // 128x64x16, 2x2 warps of 64x32, k8, 3 stages, 2 blocks, staged
struct DpV1Large {};   // 128x128x32, 2x4 warps of 64x32, k16, 3 stages, 1 block
struct DpV1Small {};   // 64x64x16, 2x2 warps of 32x32, k16, 3 stages, 3 blocks
namespace egpu::kernels {
template <MathMode M> struct MmaTileConfig<double, DpStaged, M> : MmaDims<128, 64, 16, 64, 32, 3, 2, 8> {};
template <MathMode M> struct MmaTileConfig<double, DpV1Large, M> : MmaDims<128, 128, 32, 64, 32, 3, 1, 16> {};
template <MathMode M> struct MmaTileConfig<double, DpV1Small, M> : MmaDims<64, 64, 16, 32, 32, 3, 3, 16> {};
}  // namespace egpu::kernels

// Calls f(name, tag) for each fp64 tile timed and checked by --gaps.
template <class F>
void for_each_dp_tile(F&& f) {
  f("large", TensorLargeTag{});
  f("small", TensorSmallTag{});
  f("large-staged", DpStaged{});
  f("v1-large", DpV1Large{});
  f("v1-small", DpV1Small{});
}

// Times each launcher once per round, `rounds` rounds in turn, so that a
// drift of the clocks (this GPU throttles under long fp64 runs) hits every
// launcher alike. Launcher 0 is the reference: prints, per launcher, the
// median time as TFLOP/s and the median over rounds of reference / own time.
void time_interleaved(const char* head, double flops,
                      const std::vector<std::pair<std::string, std::function<void()>>>& fs,
                      int rounds = 9) {
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  for (const auto& f : fs) { f.second(); f.second(); }  // warm-up
  CK(cudaDeviceSynchronize());
  std::vector<std::vector<double>> ms(fs.size());
  for (int r = 0; r < rounds; ++r)
    for (std::size_t i = 0; i < fs.size(); ++i) {
      CK(cudaEventRecord(e0));
      fs[i].second();
      CK(cudaEventRecord(e1));
      CK(cudaEventSynchronize(e1));
      float t;
      CK(cudaEventElapsedTime(&t, e0, e1));
      ms[i].push_back(t);
    }
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  for (std::size_t i = 0; i < fs.size(); ++i) {
    std::vector<double> ratio;
    for (int r = 0; r < rounds; ++r) ratio.push_back(ms[0][r] / ms[i][r]);
    std::printf("%s %-20s %6.2f TFLOP/s  vs %s %.3f  (rounds %.3f..%.3f)\n", head, fs[i].first.c_str(),
                flops / median(ms[i]) * 1e-9, fs[0].first.c_str(), median(ratio),
                *std::min_element(ratio.begin(), ratio.end()), *std::max_element(ratio.begin(), ratio.end()));
  }
}

// The cuBLAS entry of a timing list (the caller sets default math).
template <class T>
std::pair<std::string, std::function<void()>> cublas_launcher(const GemmArgs<T>& g) {
  return {"cuBLAS", cublas_call(g)};
}

// One fp64 shape: cuBLAS, the automatic choice and every tile of
// for_each_dp_tile, interleaved on the same operands.
void time_dp_shape(i64 m, i64 n, i64 k, Layout la, Layout lb) {
  DeviceProblem<double> pr(m, n, k, la, lb);
  GemmArgs<double>& g = pr.g;
  std::vector<std::pair<std::string, std::function<void()>>> fs{cublas_launcher(g)};
  fs.push_back({"automatic", [&g] { gemm_tiled(g, nullptr, GemmConfig::automatic); }});
  for_each_dp_tile([&](const char* name, auto tag) {
    using Tg = decltype(tag);
    fs.push_back({name, [&g] { device::launch_mma<double, Tg, MathMode::exact>(g, nullptr); }});
  });
  char head[96];
  std::snprintf(head, sizeof head, "DPGAP %5lldx%5lldx%5lld %c%c", (long long)m, (long long)n, (long long)k,
                la == Layout::row_major ? 'T' : 'N', lb == Layout::row_major ? 'T' : 'N');
  CB(cublasSetMathMode(g_handle, CUBLAS_DEFAULT_MATH));
  time_interleaved(head, pr.flops, fs);
  CB(cublasSetMathMode(g_handle, CUBLAS_PEDANTIC_MATH));
}

// The float shapes below 0.8 of SGEMM: 4095x4097x511 (scalar-load map)
// beside the aligned 4096x4096x512, and 4096^3 products with aligned bases
// and with bases off the 16-byte grid (scalar map on the large tile).
void time_float_odd() {
  CB(cublasSetMathMode(g_handle, CUBLAS_DEFAULT_MATH));
  // m, n, k and the padding of lda, ldb, ldc: the odd shape with tight
  // leading dimensions (scalar loads and stores), with only C's on a 16-byte
  // grid, with only A's and B's, and the aligned shape beside it.
  const std::array<std::array<i64, 6>, 4> shapes{{{4095, 4097, 511, 0, 0, 0},
                                                  {4095, 4097, 511, 0, 0, 1},
                                                  {4095, 4097, 511, 1, 1, 0},
                                                  {4096, 4096, 512, 0, 0, 0}}};
  for (const auto& s : shapes) {
    DeviceProblem<float> pr(s[0], s[1], s[2], Layout::col_major, Layout::col_major, {s[3], s[4], s[5]});
    GemmArgs<float>& g = pr.g;
    std::vector<std::pair<std::string, std::function<void()>>> fs{cublas_launcher(g)};
    fs.push_back({"automatic", [&g] { gemm_tiled(g, nullptr, GemmConfig::automatic); }});
    fs.push_back({"medium", [&g] { device::launch_tiled<float, MediumTag>(g, nullptr); }});
    fs.push_back({"medium-nosteady", [&g] { device::launch_tiled<float, MediumNoSteady>(g, nullptr); }});
    fs.push_back({"large", [&g] { device::launch_tiled<float, LargeTag>(g, nullptr); }});
    char head[96];
    std::snprintf(head, sizeof head, "FODD %5lldx%5lldx%5lld ld %lld/%lld/%lld", (long long)s[0], (long long)s[1],
                  (long long)s[2], (long long)pr.g.lda, (long long)pr.g.ldb, (long long)pr.g.ldc);
    time_interleaved(head, pr.flops, fs);
  }
  CB(cublasSetMathMode(g_handle, CUBLAS_PEDANTIC_MATH));
  const Layout C = Layout::col_major, R = Layout::row_major;
  time_simt_shape<float>(4096, 4096, 4096, C, C, true, "unaligned");
  for (int lay = 0; lay < 4; ++lay)
    time_simt_shape<float>(4096, 4096, 4096, lay & 1 ? R : C, lay & 2 ? R : C, false, "aligned");
}

int gaps_main() {
  int failures = 0;
  auto report = [&](const char* name, const Stats& s) {
    std::printf("CHECK %-28s cases %4d  max ratio vs ref %.3g  failures %d\n", name, s.cases,
                s.worst_ref, s.failures);
    failures += s.failures;
  };
  for_each_dp_tile([&](const char* name, auto tag) {
    report((std::string("double ") + name).c_str(), check_mma_variant<double, decltype(tag)>(false));
  });
  report("float medium-nosteady", check_variant<float, MediumNoSteady>(false));
  report("float skinny v2", check_variant<float, SkinnyV2>(false));
  const Layout C = Layout::col_major, R = Layout::row_major;
  time_float_odd();
  time_skinny_variants();
  for (int lay = 0; lay < 4; ++lay)
    time_dp_shape(4096, 4096, 4096, lay & 1 ? R : C, lay & 2 ? R : C);
  time_dp_shape(8192, 8192, 8192, C, C);
  time_dp_shape(8192, 8192, 64, C, C);
  time_dp_shape(4095, 4097, 511, C, C);
  std::printf("%s (%d failures)\n", failures ? "GAPS CHECKS FAILED" : "GAPS CHECKS PASSED", failures);
  return failures ? 1 : 0;
}

// ---- exact fp32 NN (--nn) ------------------------------------------------------------
// The library runs float NN products on the large tile as C^T = B^T A^T (TT
// on RunTransposed's schedule, C stored transposed; gemm_tile_config.hpp). NnPlain is the large tile under another name, so
// that its NN launch takes the tile's own NN schedule as before.
struct NnPlain {};
namespace egpu::kernels {
template <> struct TileConfig<float, NnPlain> : TileConfig<float, LargeTag> {};
}  // namespace egpu::kernels

// NN at 4096 and 8192: cuBLAS, the automatic choice (the transposed run) and
// the plain NN kernel; TT beside it.
void time_nn() {
  CB(cublasSetMathMode(g_handle, CUBLAS_DEFAULT_MATH));
  const Layout C = Layout::col_major, R = Layout::row_major;
  for (i64 N : {4096, 8192}) {
    DeviceProblem<float> pr(N, N, N, C, C);
    GemmArgs<float>& g = pr.g;
    std::vector<std::pair<std::string, std::function<void()>>> fs{cublas_launcher(g)};
    fs.push_back({"automatic", [&g] { gemm_tiled(g, nullptr, GemmConfig::automatic); }});
    fs.push_back({"nn-plain", [&g] { device::launch_tiled<float, NnPlain>(g, nullptr); }});
    char head[96];
    std::snprintf(head, sizeof head, "NN %5lld", (long long)N);
    time_interleaved(head, pr.flops, fs);
    DeviceProblem<float> tt(N, N, N, R, R);
    GemmArgs<float>& h = tt.g;
    std::vector<std::pair<std::string, std::function<void()>>> ft{cublas_launcher(h)};
    ft.push_back({"automatic", [&h] { gemm_tiled(h, nullptr, GemmConfig::automatic); }});
    std::snprintf(head, sizeof head, "TT %5lld", (long long)N);
    time_interleaved(head, tt.flops, ft);
  }
  CB(cublasSetMathMode(g_handle, CUBLAS_PEDANTIC_MATH));
}

// Checks the one tile only this mode launches (the library's own are --check's;
// its transposed NN run, k >= 4096, is gemm_kernel_config_test's nn_long_k_float).
int nn_main() {
  const Stats plain = check_variant<float, NnPlain>(false);
  std::printf("CHECK float nn-plain cases %d failures %d\n", plain.cases, plain.failures);
  time_nn();
  const int failures = plain.failures;
  std::printf("%s (%d failures)\n", failures ? "NN CHECKS FAILED" : "NN CHECKS PASSED", failures);
  return failures ? 1 : 0;
}

// ---- exact fp32 TN (--tn) ------------------------------------------------------------
// The library runs large float TN products on the TT layouts after copying
// op(B) transposed (CopyBTransposed in gemm_tile_config.hpp, from
// m = 4096 and k = 1024). Timed in turn: cuBLAS, the automatic choice, the plain TN
// kernel, the copy and TT kernel forced on every shape (to place the
// threshold), and the copy alone (its time against cuBLAS's product).
void time_tn() {
  CB(cublasSetMathMode(g_handle, CUBLAS_DEFAULT_MATH));
  const Layout C = Layout::col_major, R = Layout::row_major;
  const std::array<i64, 3> shapes[] = {{2048, 2048, 2048}, {4096, 4096, 1024}, {4096, 4096, 2048},
                                       {2048, 4096, 4096}, {4096, 4096, 4096}, {8192, 8192, 2048},
                                       {8192, 8192, 8192}};
  for (const auto& sh : shapes) {
    DeviceProblem<float> pr(sh[0], sh[1], sh[2], R, C);
    GemmArgs<float>& g = pr.g;
    std::vector<std::pair<std::string, std::function<void()>>> fs{cublas_launcher(g)};
    fs.push_back({"automatic", [&g] { gemm_tiled(g, nullptr, GemmConfig::automatic); }});
    fs.push_back({"tn-plain", [&g] { device::launch_tiled<float, LargeTag>(g, nullptr); }});
    auto copied = [](bool done) {  // the copy's memory could not be had: nothing was timed
      if (!done) throw std::runtime_error("--tn: no memory for the copy of op(B)");
    };
    fs.push_back({"b-copy+tt", [&g, copied] {
                    copied(device::with_b_copied_by_rows(g, nullptr, [](const GemmArgs<float>& h) {
                      device::launch_tiled<float, LargeTag>(h, nullptr);
                    }));
                  }});
    fs.push_back({"copy-only", [&g, copied] {
                    copied(device::with_b_copied_by_rows(g, nullptr, [](const GemmArgs<float>&) {}));
                  }});
    char head[96];
    std::snprintf(head, sizeof head, "TN %5lldx%5lldx%5lld", (long long)sh[0], (long long)sh[1],
                  (long long)sh[2]);
    time_interleaved(head, pr.flops, fs);
  }
  for (i64 N : {4096, 8192}) {
    DeviceProblem<float> tt(N, N, N, R, R);
    GemmArgs<float>& h = tt.g;
    std::vector<std::pair<std::string, std::function<void()>>> ft{cublas_launcher(h)};
    ft.push_back({"automatic", [&h] { gemm_tiled(h, nullptr, GemmConfig::automatic); }});
    char head[96];
    std::snprintf(head, sizeof head, "TT %5lld", (long long)N);
    time_interleaved(head, tt.flops, ft);
  }
  CB(cublasSetMathMode(g_handle, CUBLAS_PEDANTIC_MATH));
}

// ---- exact fp32 with cp.async for x-contiguous operands (--nt) ---------------------
// The library's float tiles copy their x-contiguous operands into shared
// memory by cp.async (TileDims' ASYNC_XC, block/async_xc_tile_loader.cuh;
// LayoutTile picks the schedule per layout, RunTransposed the transposed NN
// run's). Timed in turn against cuBLAS: the automatic choice, the same tile
// on the register path (the tiles before the async copies: RegLarge,
// RegMedium, RegSkinny, and SimtExpLate and SimtExpW4 for LargeLateTag and
// the former 4x2-warp TT tile) and other schedules of the large tile with
// the async copies (4x2 warps, early hand-over: AsyncW4; late:
// LargeW4LateTag); for deep NN, each TT schedule in the transposed run
// (NnVia) and the plain NN kernel.
struct RegLarge {};   // LargeTag on the register path (NN)
struct RegMedium {};  // MediumTag on the register path
struct RegSkinny {};  // SkinnyTag (the register path on every layout)
struct AsyncW4 {};      // 4x2 warps, early hand-over, async copies
namespace egpu::kernels {
template <> struct TileConfig<float, RegLarge>
    : TileDims<128, 256, 8, 8, 16, 1, 2, UpdateOrder::paired, true, true, true> {};
template <> struct TileConfig<float, RegMedium>
    : TileDims<128, 128, 16, 8, 8, 1, 2, UpdateOrder::paired, true, true, true> {};
template <> struct TileConfig<float, RegSkinny> : TileConfig<float, SkinnyTag> {};
template <> struct TileConfig<float, AsyncW4>
    : TileDims<128, 256, 8, 8, 16, 1, 4, UpdateOrder::paired, true, true, true, true> {};
}  // namespace egpu::kernels

// NN run transposed as the library's large tile does (RunTransposed, from
// k = 4096) on the TT schedule TT: C^T = B^T A^T, C stored row by row.
template <class TT> struct NnVia {};
namespace egpu::kernels {
template <class TT> struct TileConfig<float, NnVia<TT>> : TileConfig<float, LargeTag> {};
template <class TT, bool A_XC, bool B_XC, bool VEC> struct LayoutTile<float, NnVia<TT>, A_XC, B_XC, VEC> {
  using type = std::conditional_t<!A_XC && B_XC, TT, LargeTag>;
};
template <class TT> struct RunTransposed<float, NnVia<TT>, true, false> {
  static constexpr bool value = true;
  static constexpr long long min_k = RunTransposed<float, LargeTag, true, false>::min_k;
  using tile = TT;
};
}  // namespace egpu::kernels

template <class Tag>
std::pair<std::string, std::function<void()>> tag_launcher(const char* name, const GemmArgs<float>& g) {
  return {name, [&g] { device::launch_tiled<float, Tag>(g, nullptr); }};
}

void time_nt() {
  CB(cublasSetMathMode(g_handle, CUBLAS_DEFAULT_MATH));
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const Layout C = Layout::col_major, R = Layout::row_major;
  enum Set { large, nn_deep, nn_plain, medium, skinny };
  struct Shape { i64 m, n, k; Layout la, lb; const char* op; Set set; };
  const Shape shapes[] = {
      {4096, 4096, 4096, C, R, "NT", large},    {8192, 8192, 8192, C, R, "NT", large},
      {4224, 4096, 4096, C, R, "NT", large},    {4096, 4096, 4096, R, R, "TT", large},
      {8192, 8192, 8192, R, R, "TT", large},    {4096, 4096, 4096, C, C, "NN", nn_deep},
      {8192, 8192, 8192, C, C, "NN", nn_deep},  {4096, 4096, 1024, C, C, "NN", nn_plain},
      {8192, 8192, 2048, C, C, "NN", nn_plain}, {1024, 2048, 4096, C, C, "NN", medium},
      {1024, 2048, 4096, C, R, "NT", medium},   {1024, 2048, 4096, R, R, "TT", medium},
      {1024, 2048, 4096, R, C, "TN", medium},   {4224, 4096, 4096, C, C, "NN", medium},
      {8192, 64, 8192, C, C, "NN", skinny},     {64, 8192, 8192, C, C, "NN", skinny},
      {8192, 64, 8192, C, R, "NT", skinny}};
  for (const Shape& sh : shapes) {
    DeviceProblem<float> pr(sh.m, sh.n, sh.k, sh.la, sh.lb);
    GemmArgs<float>& g = pr.g;
    const bool a_xc = sh.la == C, b_xc = sh.lb == R;
    std::vector<std::pair<std::string, std::function<void()>>> fs{cublas_launcher(g)};
    fs.push_back({"automatic", [&g] { gemm_tiled(g, nullptr, GemmConfig::automatic); }});
    if (sh.set == large) {
      if (b_xc && !a_xc)
        fs.push_back(tag_launcher<SimtExpW4>("register-w4", g));
      else
        fs.push_back(tag_launcher<SimtExpLate>("register-late", g));
      fs.push_back(tag_launcher<AsyncW4>("async-w4", g));
      fs.push_back(tag_launcher<LargeW4LateTag>("async-w4-late", g));
    } else if (sh.set == nn_deep) {  // automatic: transposed, on LargeLateTag
      fs.push_back(tag_launcher<NnVia<SimtExpW4>>("via-register-w4", g));
      fs.push_back(tag_launcher<NnVia<SimtExpLate>>("via-register-late", g));
      fs.push_back(tag_launcher<NnVia<AsyncW4>>("via-async-w4", g));
      fs.push_back(tag_launcher<NnVia<LargeW4LateTag>>("via-async-w4-late", g));
      fs.push_back(tag_launcher<NnPlain>("plain-async", g));
      fs.push_back(tag_launcher<RegLarge>("plain-register", g));
    } else if (sh.set == nn_plain) {
      fs.push_back(tag_launcher<RegLarge>("register-nn", g));
    } else if (sh.set == medium) {
      fs.push_back(tag_launcher<RegMedium>("register-medium", g));
    } else {
      fs.push_back({"register-skinny",
                    [&g, sms] { device::launch_tiled_split_k<float, RegSkinny>(g, nullptr, sms); }});
    }
    char head[96];
    std::snprintf(head, sizeof head, "%s %5lldx%5lldx%5lld", sh.op, (long long)sh.m, (long long)sh.n,
                  (long long)sh.k);
    time_interleaved(head, pr.flops, fs);
  }
  CB(cublasSetMathMode(g_handle, CUBLAS_PEDANTIC_MATH));
}

// Checks the tiles only this mode launches (the library's are --check's and
// gemm_kernel_config_test's).
int nt_main(bool time) {
  int failures = 0;
  auto report = [&](const char* name, const Stats& st) {
    std::printf("CHECK float %-14s cases %d failures %d\n", name, st.cases, st.failures);
    failures += st.failures;
  };
  report("register-nn", check_variant<float, RegLarge>(false));
  report("register-late", check_variant<float, SimtExpLate>(false));
  report("register-w4", check_variant<float, SimtExpW4>(false));
  report("register-medium", check_variant<float, RegMedium>(false));
  report("async-w4", check_variant<float, AsyncW4>(false));
  report("async-w4-late", check_variant<float, LargeW4LateTag>(false));
  if (time) time_nt();
  std::printf("%s (%d failures)\n", failures ? "NT CHECKS FAILED" : "NT CHECKS PASSED", failures);
  return failures ? 1 : 0;
}

// ---- tf32x3 tiles and operand copies (--x3) ------------------------------------
// The library's tf32x3 large tile (128x64, two blocks per SM) beside its
// version-5 tile (MmaExp1: 128x128, one block per SM) and a 64x128 one
// (X3Wide), each launched directly (operands off the grid on the element
// map), and the automatic choice (which copies such operands onto the grid
// from operand_copy_min_side: device/gemm_operand_copy.cuh). Checks the two
// tiles only this mode launches (the library's are --check's).
struct X3Wide {};  // 64x128x32, 1x4 warps of 64x32, 3 stages, 2 blocks
namespace egpu::kernels {
template <MathMode M> struct MmaTileConfig<float, X3Wide, M> : MmaDims<64, 128, 32, 64, 32, 3, 2> {};
}  // namespace egpu::kernels

int x3_main() {
  int failures = 0;
  auto check = [&](const char* name, auto launch) {
    const Stats st = check_launch<float>(launch, false, MathMode::tf32x3);
    std::printf("CHECK tf32x3 %-7s cases %d max ratio vs ref %.3g failures %d\n", name, st.cases,
                st.worst_ref, st.failures);
    failures += st.failures;
  };
  check("v5-large", +[](const GemmArgs<float>& g) {
    if (g.m > 0 && g.n > 0) device::launch_mma<float, MmaExp1, MathMode::tf32x3>(g, nullptr);
  });
  check("wide", +[](const GemmArgs<float>& g) {
    if (g.m > 0 && g.n > 0) device::launch_mma<float, X3Wide, MathMode::tf32x3>(g, nullptr);
  });
  CB(cublasSetMathMode(g_handle, CUBLAS_DEFAULT_MATH));
  const Layout C = Layout::col_major, R = Layout::row_major;
  struct Shape { i64 m, n, k; Layout la, lb; std::array<i64, 3> pad; MathMode math; };
  const MathMode X3 = MathMode::tf32x3;
  const Shape shapes[] = {
      {4095, 4097, 511, C, C, {0, 0, 0}, X3},  {4095, 4097, 511, C, C, {0, 0, 1}, X3},
      {4095, 4097, 511, C, C, {1, 1, 1}, X3},  {4095, 4097, 511, R, R, {0, 0, 0}, X3},
      {4095, 4097, 511, R, C, {0, 0, 0}, X3},  {2049, 2049, 511, C, C, {0, 0, 0}, X3},
      {2049, 2049, 511, C, C, {3, 1, 0}, X3},  {3073, 3073, 511, C, C, {0, 0, 0}, X3},
      {3073, 3073, 511, C, C, {3, 1, 0}, X3},  {3073, 3073, 3073, C, C, {0, 0, 0}, X3},
      {2049, 2049, 2049, C, C, {0, 0, 0}, X3}, {4096, 4096, 512, C, C, {0, 0, 0}, X3},
      {4096, 4096, 4096, C, C, {0, 0, 0}, X3}, {4096, 4096, 4096, R, C, {0, 0, 0}, X3},
      {8192, 8192, 8192, C, C, {0, 0, 0}, X3}, {8192, 8192, 64, C, C, {0, 0, 0}, X3},
      {4095, 4097, 511, C, C, {0, 0, 0}, MathMode::tf32}};
  for (const Shape& s : shapes) {
    DeviceProblem<float> pr(s.m, s.n, s.k, s.la, s.lb, s.pad);
    GemmArgs<float>& g = pr.g;
    g.math = s.math;
    if (s.math == MathMode::tf32) CB(cublasSetMathMode(g_handle, CUBLAS_TF32_TENSOR_OP_MATH));
    std::vector<std::pair<std::string, std::function<void()>>> fs{cublas_launcher(g)};
    fs.push_back({"automatic", [&g] { gemm_tiled(g, nullptr, GemmConfig::automatic); }});
    if (s.math == X3) {
      fs.push_back({"large-direct", [&g] { device::launch_mma<float, TensorLargeTag, MathMode::tf32x3>(g, nullptr); }});
      fs.push_back({"v5-large", [&g] { device::launch_mma<float, MmaExp1, MathMode::tf32x3>(g, nullptr); }});
      fs.push_back({"wide", [&g] { device::launch_mma<float, X3Wide, MathMode::tf32x3>(g, nullptr); }});
      if (device::copies_operands(g) && !(device::mma_vector_ok(g.a, g.lda) && device::mma_vector_ok(g.b, g.ldb)))
        fs.push_back({"copies-only", [&g] { device::with_operands_on_grid(g, nullptr, [](const GemmArgs<float>&) {}); }});
    } else {
      fs.push_back({"large-direct", [&g] { device::launch_mma<float, TensorLargeTag, MathMode::tf32>(g, nullptr); }});
    }
    char head[112];
    std::snprintf(head, sizeof head, "X3 %-6s %5lldx%5lldx%5lld %c%c ld %lld/%lld/%lld",
                  s.math == X3 ? "tf32x3" : "tf32", (long long)s.m, (long long)s.n, (long long)s.k,
                  s.la == R ? 'T' : 'N', s.lb == R ? 'T' : 'N', (long long)g.lda, (long long)g.ldb,
                  (long long)g.ldc);
    time_interleaved(head, pr.flops, fs);
    CB(cublasSetMathMode(g_handle, CUBLAS_DEFAULT_MATH));
  }
  CB(cublasSetMathMode(g_handle, CUBLAS_PEDANTIC_MATH));
  std::printf("%s (%d failures)\n", failures ? "X3 CHECKS FAILED" : "X3 CHECKS PASSED", failures);
  return failures ? 1 : 0;
}

// ---- chained tiles (--chain) ------------------------------------------------
// fp64 tiles with and without chained tiles (MmaDims::chain_max_k: a grid of
// the resident blocks, each issuing its next tile's prologue before its C
// store), checked on grids of more tiles than resident blocks, then timed
// against cuBLAS on short-k products.
struct DpLargePlain {};
struct DpLargeChain {};
struct DpLargeChain4 {};  // four stages: the prologue holds k = 48
struct DpSmallPlain {};
struct DpSmallChain {};
namespace egpu::kernels {
constexpr int always = 1 << 30;
template <MathMode M> struct MmaTileConfig<double, DpLargePlain, M> : MmaDims<128, 64, 16, 64, 32, 3, 2, 8, true> {};
template <MathMode M>
struct MmaTileConfig<double, DpLargeChain, M> : MmaDims<128, 64, 16, 64, 32, 3, 2, 8, true, always> {};
template <MathMode M>
struct MmaTileConfig<double, DpLargeChain4, M> : MmaDims<128, 64, 16, 64, 32, 4, 2, 8, true, always> {};
template <MathMode M> struct MmaTileConfig<double, DpSmallPlain, M> : MmaDims<64, 64, 16, 32, 32, 3, 3, 8, true> {};
template <MathMode M>
struct MmaTileConfig<double, DpSmallChain, M> : MmaDims<64, 64, 16, 32, 32, 3, 3, 8, true, always> {};
}  // namespace egpu::kernels

template <class F>
void for_each_chain_tile(F&& f) {
  f("large", DpLargePlain{});
  f("large-chain", DpLargeChain{});
  f("large-chain4", DpLargeChain4{});
  f("small", DpSmallPlain{});
  f("small-chain", DpSmallChain{});
}

int chain_main() {
  int failures = 0;
  for_each_chain_tile([&](const char* name, auto tag) {
    using Tg = decltype(tag);
    case_launch<double> = [](const GemmArgs<double>& g) {
      if (g.m > 0 && g.n > 0) device::launch_mma<double, Tg, MathMode::exact>(g, nullptr);
    };
    Stats st;
    const i64 extras[] = {0, 1, 3, 4};
    const i64 ks[] = {1, 16, 40, 64, 100, 300};
    for_layouts_and_conj<double>(3, extras, [&](Case& c, int r) {
      c.m = r == 0 ? 2100 : 2177;  // more tiles than resident blocks
      c.n = r == 1 ? 1999 : 2241;
      c.k = ks[g_rng() % 6];
      c.unaligned = r == 2;
      c.beta_zero = g_rng() % 2 == 0;
      c.cfg = GemmConfig::tensor_large;
      run_case<double>(c, st, false);
    });
    case_launch<double> = nullptr;
    std::printf("CHECK chain %-13s cases %d max ratio vs ref %.3g failures %d\n", name, st.cases, st.worst_ref,
                st.failures);
    failures += st.failures;
  });
  const Layout C = Layout::col_major, R = Layout::row_major;
  struct Shape { i64 m, n, k; Layout la, lb; };
  const Shape shapes[] = {{8192, 8192, 64, C, C},   {8192, 8192, 64, R, C},  {8192, 8192, 32, C, C},
                          {8192, 8192, 128, C, C},  {8192, 8192, 256, C, C}, {4096, 4096, 512, C, C},
                          {4095, 4097, 511, C, C},  {4096, 4096, 4096, C, C}};
  CB(cublasSetMathMode(g_handle, CUBLAS_DEFAULT_MATH));
  for (const Shape& sh : shapes) {
    DeviceProblem<double> pr(sh.m, sh.n, sh.k, sh.la, sh.lb);
    GemmArgs<double>& g = pr.g;
    std::vector<std::pair<std::string, std::function<void()>>> fs{cublas_launcher(g)};
    fs.push_back({"automatic", [&g] { gemm_tiled(g, nullptr, GemmConfig::automatic); }});
    for_each_chain_tile([&](const char* name, auto tag) {
      using Tg = decltype(tag);
      fs.push_back({name, [&g] { device::launch_mma<double, Tg, MathMode::exact>(g, nullptr); }});
    });
    char head[96];
    std::snprintf(head, sizeof head, "CHAIN %5lldx%5lldx%5lld %c%c", (long long)sh.m, (long long)sh.n,
                  (long long)sh.k, sh.la == R ? 'T' : 'N', sh.lb == R ? 'T' : 'N');
    time_interleaved(head, pr.flops, fs);
  }
  CB(cublasSetMathMode(g_handle, CUBLAS_PEDANTIC_MATH));
  std::printf("%s (%d failures)\n", failures ? "CHAIN CHECKS FAILED" : "CHAIN CHECKS PASSED", failures);
  return failures ? 1 : 0;
}

// --gaps-profile: for ncu, one launch each of the float medium tile (and it
// without the steady loop) on 4095x4097x511 and 4096x4096x512, and of cuBLAS
// SGEMM (default math) on the odd shape.
void gaps_profile() {
  DeviceProblem<float> odd(4095, 4097, 511), even(4096, 4096, 512);
  CK(cudaDeviceSynchronize());
  device::launch_tiled<float, MediumTag>(odd.g, nullptr);
  device::launch_tiled<float, MediumTag>(even.g, nullptr);
  device::launch_tiled<float, MediumNoSteady>(odd.g, nullptr);
  cublas_default_ms(odd.g, 1);
  CK(cudaDeviceSynchronize());
}

int main(int argc, char** argv) {
  const bool quick = argc > 1 && !std::strcmp(argv[1], "--quick");
  const bool time_only = argc > 1 && !std::strcmp(argv[1], "--time");
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s (%d SMs)\n", prop.name, prop.multiProcessorCount);
  CB(cublasCreate(&g_handle));
  CB(cublasSetMathMode(g_handle, CUBLAS_PEDANTIC_MATH));
  // The split-k workspace comes from the default stream-ordered pool: keep
  // what it reserves (as the library's runtime does), or every timed call
  // pays for mapping it afresh.
  {
    cudaMemPool_t pool;
    CK(cudaDeviceGetDefaultMemPool(&pool, 0));
    std::uint64_t keep = ~std::uint64_t(0);
    CK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
  }
  // The modes of their own: each runs alone and gives the exit status.
  const std::pair<const char*, std::function<int()>> modes[] = {
      {"--cz-exp", [] { cz_shape(8192, 64, 8192); cz_shape(64, 8192, 8192); return 0; }},
      {"--gaps", gaps_main},
      {"--nn", nn_main},
      {"--tn", [] { time_tn(); return 0; }},
      {"--nt", [] { return nt_main(true); }},
      {"--nt-check", [] { return nt_main(false); }},
      {"--chain", chain_main},
      {"--x3", x3_main},
      {"--gaps-profile", [] { gaps_profile(); return 0; }},
      {"--simt-profile", [] { simt_profile(); return 0; }},
      {"--simt", [] { return simt_main(false); }},
      {"--simt-quick", [] { return simt_main(true); }},
  };
  for (const auto& mode : modes)
    if (argc > 1 && !std::strcmp(argv[1], mode.first)) {
      const int rc = mode.second();
      CB(cublasDestroy(g_handle));
      return rc;
    }
  int failures = 0;
  if (!time_only) {
    auto report = [&](const char* name, const Stats& s) {
      std::printf("CHECK %-7s cases %4d (cuBLAS-compared %4d)  max ratio vs ref %.3g, vs cuBLAS "
                  "%.3g  failures %d\n",
                  name, s.cases, s.cublas_cases, s.worst_ref, s.worst_cublas, s.failures);
      failures += s.failures;
    };
    // --only NAME (after the mode flag) checks one scalar.
    const char* only = argc > 3 && !std::strcmp(argv[2], "--only") ? argv[3] : nullptr;
    auto want = [&](const char* n) { return !only || !std::strcmp(only, n); };
    if (want("float")) report("float", check_scalar<float>(quick));
    if (want("double")) report("double", check_scalar<double>(quick));
    if (want("cfloat")) report("cfloat", check_scalar<cfloat>(quick));
    if (want("cdouble")) report("cdouble", check_scalar<cdouble>(quick));
    if (only) {
      CB(cublasDestroy(g_handle));
      std::printf("%s (%d failures)\n", failures ? "FAILED" : "ALL CHECKS PASSED", failures);
      return failures ? 1 : 0;
    }
    if (!quick && !check_huge()) failures++;
    if (argc > 1 && !std::strcmp(argv[1], "--check")) {  // --check: the checks only, no timing
      CB(cublasDestroy(g_handle));
      std::printf("%s (%d failures)\n", failures ? "FAILED" : "ALL CHECKS PASSED", failures);
      return failures ? 1 : 0;
    }
  }
  const bool tensor_only = argc > 1 && !std::strcmp(argv[1], "--tensor");
  if (tensor_only) {
    time_tensor();
    CB(cublasDestroy(g_handle));
    return 0;
  }
  if (!quick) {
    time_tensor();
    for (i64 N : {4096, 8192}) {
      time_scalar<float>(N, N == 4096);
      time_scalar<double>(N, N == 4096);
      time_scalar<cfloat>(N, N == 4096);
      time_scalar<cdouble>(N, N == 4096);
    }
  }
  CB(cublasDestroy(g_handle));
  if (time_only)
    std::printf("timing only (no checks run)\n");
  else
    std::printf("%s (%d failures)\n", failures ? "FAILED" : "ALL CHECKS PASSED", failures);
  return failures ? 1 : 0;
}

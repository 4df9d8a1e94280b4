// gemm_probe: checks egpu::kernels::gemm_tiled against a float64 reference
// kernel and cuBLAS on many random shapes, then times it against cuBLAS.
//
// Build (from the repository root):
//   cmake --build <build> --target egpu-gemm-probe   (or by hand:)
//   nvcc -std=c++17 -O3 -arch=sm_90 -I include -I src bench/gemm_probe.cu \
//        src/kernels/gemm/device/gemm_tiled.cu -lcublas -o build-probe/gemm_probe
// Run:
//   ./build-probe/gemm_probe           correctness (all scalars, layouts, conj, edge
//                                      shapes, lds, alignment, beta) + timing
//   ./build-probe/gemm_probe --quick   small correctness pass only (for compute-sanitizer)
//   ./build-probe/gemm_probe --time    timing only
// Exits nonzero on any correctness failure.
//
// Error measure, per element: |C - ref| / bound with
//   bound = eps(T) * f * ((k + 2) * |alpha| * sum_p |a_ip| |b_pj| + 2 |beta| |c_ij|),
// f = 1 (real) or 2 (complex). Passes at <= 1 (typical values are ~1e-3).
// Against cuBLAS (pedantic math, no TF32) the same bound with a factor 2.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/gemm/device/gemm_tiled_launch.cuh"
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
};
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
    worst = std::max(worst, ratio(t, to64(hc[t]), C64{hr[4 * t], hr[4 * t + 1]}, 1));
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
    for (i64 t = 0; t < mn; ++t) worst_cb = std::max(worst_cb, ratio(t, to64(hc[t]), to64(hb[t]), 2));
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
                "unaligned=%d beta0=%d cfg=%d: ref ratio %.3g cublas ratio %.3g pad %s\n",
                Tr<T>::name, (long long)c.m, (long long)c.n, (long long)c.k, (long long)g.lda,
                (long long)g.ldb, (long long)g.ldc, ra ? 'R' : 'C', rb ? 'R' : 'C', c.ca, c.cb,
                c.unaligned, c.beta_zero, int(c.cfg), worst, worst_cb, pad_ok ? "ok" : "WRITTEN");
  }
  return ok;
}

template <class T>
Stats check_scalar(bool quick) {
  Stats st;
  const std::vector<i64> sizes_full = {0, 1, 2, 3, 7, 31, 33, 63, 65, 127, 129, 255, 257, 500, 1000};
  const std::vector<i64> sizes_quick = {0, 1, 3, 7, 31, 33, 65, 129};
  const auto& sizes = quick ? sizes_quick : sizes_full;
  const i64 extras[] = {0, 1, 3, 7};
  const int reps = quick ? 2 : 10;
  const int nconj = is_complex<T>::value ? 2 : 1;
  auto pick = [&](const auto& v) { return v[g_rng() % v.size()]; };
  for (int la = 0; la < 2; ++la)
    for (int lb = 0; lb < 2; ++lb)
      for (int ca = 0; ca < nconj; ++ca)
        for (int cb = 0; cb < nconj; ++cb)
          for (int r = 0; r < reps; ++r) {
            Case c{};
            c.m = pick(sizes); c.n = pick(sizes); c.k = pick(sizes);
            if (r == 0) { c.m = 129; c.n = 65; c.k = 257; }  // every combination hits edges
            c.lda_extra = extras[g_rng() % 4];
            c.ldb_extra = extras[g_rng() % 4];
            c.ldc_extra = extras[g_rng() % 4];
            c.la = la ? Layout::row_major : Layout::col_major;
            c.lb = lb ? Layout::row_major : Layout::col_major;
            c.ca = ca; c.cb = cb;
            c.unaligned = g_rng() % 3 == 0;
            c.beta_zero = g_rng() % 2 == 0;
            c.cfg = GemmConfig(g_rng() % 3);
            run_case<T>(c, st, !quick);
          }
  if (!quick) {
    // Aligned, vector-friendly interior shapes through both configurations.
    for (int cfg = 1; cfg <= 2; ++cfg)
      for (int la = 0; la < 2; ++la)
        for (int lb = 0; lb < 2; ++lb) {
          Case c{256, 384, 128, 0, 0, 0, la ? Layout::row_major : Layout::col_major,
                 lb ? Layout::row_major : Layout::col_major, false, false, false, true,
                 GemmConfig(cfg)};
          run_case<T>(c, st, true);
        }
    // More column tiles than gridDim.y allows (65535), both configurations.
    for (int cfg = 1; cfg <= 2; ++cfg) {
      const i64 bn = cfg == 1 ? TileShape<T, LargeTag>::bn : TileShape<T, SmallTag>::bn;
      Case c{3, 65535 * bn + 77, 5, 0, 1, 0, Layout::col_major, Layout::row_major, false,
             is_complex<T>::value, true, false, GemmConfig(cfg)};
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

// Experimental tile shapes timed beside the library's (not part of it).
struct ExpTag1 {};
struct ExpTag2 {};
namespace egpu::kernels {
template <> struct TileConfig<float, ExpTag1> : TileDims<128, 128, 8, 8, 8, 1> {};
template <> struct TileConfig<double, ExpTag1> : TileDims<128, 64, 8, 8, 4, 1> {};
template <> struct TileConfig<double, ExpTag2> : TileDims<64, 64, 8, 4, 4, 2> {};
template <> struct TileConfig<float, ExpTag2> : TileDims<128, 128, 16, 8, 8, 2> {};
}  // namespace egpu::kernels

template <class T>
void time_scalar(i64 N, bool variants) {
  const double flops = (is_complex<T>::value ? 8.0 : 2.0) * double(N) * N * N;
  T *a, *b, *c;
  CK(cudaMalloc(&a, N * N * sizeof(T)));
  CK(cudaMalloc(&b, N * N * sizeof(T)));
  CK(cudaMalloc(&c, N * N * sizeof(T)));
  fill(a, N, N, N);
  fill(b, N, N, N);
  fill(c, N, N, N);
  GemmArgs<T> g;
  g.m = g.n = g.k = N;
  g.a = a; g.b = b; g.c = c;
  g.lda = g.ldb = g.ldc = N;
  g.alpha = from64<T>({1, 0});
  g.beta = from64<T>({0, 0});
  g.beta_is_zero = true;
  const int reps = 7;
  const double ours = median_ms<T>([&] { gemm_tiled(g, nullptr); }, reps);
  CB(cublasSetMathMode(g_handle, CUBLAS_DEFAULT_MATH));
  const double cub = median_ms<T>([&] {
    CB(cublas_gemm(g_handle, CUBLAS_OP_N, CUBLAS_OP_N, int(N), int(N), int(N), &g.alpha, a,
                   int(N), b, int(N), &g.beta, c, int(N)));
  }, reps);
  CB(cublasSetMathMode(g_handle, CUBLAS_PEDANTIC_MATH));
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
  CK(cudaFree(a));
  CK(cudaFree(b));
  CK(cudaFree(c));
}

int main(int argc, char** argv) {
  const bool quick = argc > 1 && !std::strcmp(argv[1], "--quick");
  const bool time_only = argc > 1 && !std::strcmp(argv[1], "--time");
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s (%d SMs)\n", prop.name, prop.multiProcessorCount);
  CB(cublasCreate(&g_handle));
  CB(cublasSetMathMode(g_handle, CUBLAS_PEDANTIC_MATH));
  int failures = 0;
  if (!time_only) {
    auto report = [&](const char* name, const Stats& s) {
      std::printf("CHECK %-7s cases %4d (cuBLAS-compared %4d)  max ratio vs ref %.3g, vs cuBLAS "
                  "%.3g  failures %d\n",
                  name, s.cases, s.cublas_cases, s.worst_ref, s.worst_cublas, s.failures);
      failures += s.failures;
    };
    report("float", check_scalar<float>(quick));
    report("double", check_scalar<double>(quick));
    report("cfloat", check_scalar<cfloat>(quick));
    report("cdouble", check_scalar<cdouble>(quick));
    if (!quick && !check_huge()) failures++;
  }
  if (!quick) {
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
